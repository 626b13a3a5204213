package aoi

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const meta = `{"type":"aoi:meta","tool":"t","tool_version":"1","aoi_version":"0.2","schema_name":"s","schema_version":"1","command":"c"}` + "\n"

// TestCheckRefuses: each way a stream can break the standard is named.
func TestCheckRefuses(t *testing.T) {
	sum := `{"type":"aoi:summary","ok":true,"count":0,"truncated":false}` + "\n"
	for stream, want := range map[string]string{
		"":                               "without a summary",
		meta:                             "without a summary",
		"Found 3 results\n" + sum:        "line 1: not a JSON object",
		`{"type":"hit"}` + "\n" + sum:    "not the meta event",
		meta + `[1,2]` + "\n" + sum:      "line 2: not a JSON object",
		meta + `{"type":7}` + "\n" + sum: "no string type",
		meta + `{"type":"hit"} {"type":"hit"}` + "\n" + sum: "more than one JSON value",
		meta + "{\"type\":\"hit\",\"t\":\"\xff\"}\n" + sum:  "not UTF-8",
		meta + `{"type":"other"}` + "\n" + sum:              "type other is not one the command declares",
		meta + meta + sum:                                   "a second meta event",
		meta + sum + `{"type":"hit"}` + "\n":                "output after the summary",
		meta + `{"type":"summary","ok":"yes"}` + "\n":       "ok is not a boolean",
		meta + `{"type":"aoi:error","scope":"process","category":"usage","code":"X","message":"m","retryable":"no"}` + "\n" + sum: "retryable is not a boolean",
		meta + `{"type":"error","scope":1,"category":"usage","code":"X","message":"m","retryable":false}` + "\n" + sum:            "scope is not a string",
		strings.Replace(meta, `"command":"c"`, `"command":"d"`, 1) + sum:                                                          `names command d, not "c"`,
		strings.Replace(meta, `"aoi_version":"0.2",`, "", 1) + sum:                                                                "no aoi_version",
		meta + sum[:len(sum)-1]: "does not end with a newline",
	} {
		_, err := Check([]byte(stream), "c", []string{"aoi:meta", "hit", "aoi:summary", "aoi:error"}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", stream, err, want)
		}
	}
	// bare and prefixed types both pass; progress and heartbeats always do
	ok := meta + `{"type":"hit"}` + "\n\n" + `{"type":"aoi:progress"}` + "\n" + `{"type":"heartbeat"}` + "\n" + `{"type":"summary","ok":false}` + "\n"
	evs, err := Check([]byte(ok), "c", []string{"meta", "aoi:hit", "summary"}, nil)
	if err != nil || len(evs) != 5 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	// validate is applied to every event
	_, err = Check([]byte(ok), "c", nil, func(l Line) error {
		if l["type"] == "hit" {
			return errors.New("bad hit")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "line 2 (hit): bad hit") {
		t.Errorf("validate: %v", err)
	}
}

// TestStream: the events a run writes, in order, the summary's counts and
// the exit codes; events that would break the envelope are refused.
func TestStream(t *testing.T) {
	var b bytes.Buffer
	s := Start(&b, Meta{Tool: "t", ToolVersion: "1", SchemaName: "s", SchemaVersion: "1"}, "c")
	s.Event("hit", map[string]any{"rank": 1})
	s.Event("empty", struct{}{})
	s.Check("probe", false, "missing", nil)
	s.Warning("W", "careful")
	s.Error(&Error{Scope: "item", Category: CategoryNotFound, Code: "GONE", Message: "one item"})
	if code := s.Finish(true, map[string]any{"ok": false, "extra": 2}); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	s.Event("late", nil) // after the summary: dropped
	want := meta + `{"type":"hit","rank":1}
{"type":"empty"}
{"type":"aoi:check","detail":"missing","name":"probe","ok":false}
{"type":"aoi:warning","code":"W","message":"careful"}
{"type":"aoi:error","scope":"item","category":"not_found","code":"GONE","message":"one item","retryable":false}
{"type":"aoi:summary","count":3,"extra":2,"ok":true,"truncated":false}
`
	want = strings.Replace(want, `{"type":"aoi:meta","tool":"t","tool_version":"1","aoi_version":"0.2","schema_name":"s","schema_version":"1","command":"c"}`,
		`{"type":"aoi:meta","aoi_version":"0.2","command":"c","schema_name":"s","schema_version":"1","tool":"t","tool_version":"1"}`, 1)
	if b.String() != want {
		t.Fatalf("stream:\n%s\nwant\n%s", b.String(), want)
	}
	if _, err := Check(b.Bytes(), "c", nil, nil); err != nil {
		t.Fatal(err)
	}

	for category, code := range map[string]int{CategoryUsage: ExitUsage, CategoryAuthz: ExitNotOK, CategoryConflict: ExitNotOK,
		CategoryValidation: ExitNotOK, CategoryNotFound: ExitFailure, CategoryUnavailable: ExitFailure, CategoryInternal: ExitFailure} {
		b.Reset()
		s := Start(&b, Meta{}, "c")
		if got := s.Abort(errors.New("boom"), category, "X"); got != code {
			t.Errorf("%s: exit %d, want %d", category, got, code)
		}
		if !strings.Contains(b.String(), `"ok":false`) {
			t.Errorf("%s: %s", category, b.String())
		}
	}
	// an error of process scope makes ok false whatever Finish is told
	b.Reset()
	s = Start(&b, Meta{}, "c")
	s.Error(Fail(CategoryConflict, "X", "pending"))
	if code := s.Finish(true, nil); code != ExitNotOK || !strings.Contains(b.String(), `"ok":false`) {
		t.Errorf("exit %d: %s", code, b.String())
	}
	// an event with its own type member, or not an object, is refused
	for _, v := range []any{map[string]any{"type": "x"}, []int{1}} {
		b.Reset()
		s = Start(&b, Meta{}, "c")
		s.Event("hit", v)
		if s.Err() == nil || strings.Count(b.String(), "\n") != 1 {
			t.Errorf("%v: %v\n%s", v, s.Err(), b.String())
		}
	}
}

// TestOutput: --output is read as the flag package would, up to "--".
func TestOutput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"--output", "jsonl"}, "jsonl", true},
		{[]string{"x", "--output=jsonl", "-output", "text"}, "text", true},
		{[]string{"-output=jsonl"}, "jsonl", true},
		{[]string{"--", "--output", "jsonl"}, "", false},
		{[]string{"--output"}, "", false},
		{[]string{"--outputs", "jsonl"}, "", false},
	} {
		if v, ok := Output(c.args); v != c.want || ok != c.ok {
			t.Errorf("%v: %q %v", c.args, v, ok)
		}
	}
}

// FuzzCheck: no stream makes the conformance check panic or accept a
// stream without a summary last.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(meta + `{"type":"aoi:summary","ok":true}` + "\n"))
	f.Add([]byte(meta + `{"type":"hit"}` + "\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := Check(b, "c", nil, nil)
		if err == nil {
			if len(evs) < 2 || bare(evs[len(evs)-1]["type"].(string)) != "summary" || bare(evs[0]["type"].(string)) != "meta" {
				t.Fatalf("accepted %q", b)
			}
		}
	})
}
