package process

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// The responses read by hand decode as encoding/json decodes them: the
// host's encoding of every field, strings with escapes, a null or absent
// collection, unknown members, nulls.
func TestDecodeResponses(t *testing.T) {
	starts := []string{
		`{"id":1,"program":"/usr/bin/tool","cwd":"/workspace"}`,
		`{"id":7,"program":"/opt/a \"b\"\\c\u00e9\u2028","cwd":"/w/<x>&","new":[1,{"x":"}"}]}`,
		` { "cwd" : "/" , "id" : -3 } `,
		`{"id":null,"program":null}`,
		`{}`,
	}
	for _, s := range starts {
		var a, b abi.ProcessStartResponse
		if err := decodeStart([]byte(s), &a); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if err := json.Unmarshal([]byte(s), &b); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("%s: %+v, encoding/json %+v", s, a, b)
		}
	}
	waits := []abi.ProcessWaitResponse{
		{},
		{ExitCode: 3, Signal: "SIGKILL", TimedOut: true, Killed: "output_limit", DurationMs: 12, StdoutBytes: 1 << 40,
			StdoutTruncated: true, Stderr: "line 1\nline \"2\"\t<b>&\u2028\x01é", StderrTruncated: true,
			Collected: &abi.ProcessCollected{Kept: 2, Events: 10000, Bytes: 912345}},
		{ExitCode: -1, Collected: &abi.ProcessCollected{Kept: -1}},
	}
	for _, w := range waits {
		b, _ := json.Marshal(w)
		sameWait(t, b)
	}
	for _, s := range []string{
		`{"exit_code":0,"collected":null,"other":{"a":[1,2]}}`,
		`{"collected":{"kept":0,"events":1,"bytes":2,"more":true},"stderr":null}`,
	} {
		sameWait(t, []byte(s))
	}
	// what is not a response is an error, not a zero value taken for one
	for _, s := range []string{``, `[]`, `{"exit_code":"0"}`, `{"timed_out":1}`, `{"signal":5}`, `{"collected":[]}`,
		`{"collected":{"kept":"x"}}`, `{"exit_code":1.5}`, `{"exit_code":0`, `{"stderr":"\x"}`} {
		var w abi.ProcessWaitResponse
		if err := decodeWait([]byte(s), &w); err == nil {
			t.Errorf("%q decoded to %+v without an error", s, w)
		}
	}
	for _, s := range []string{``, `{"id":"1"}`, `{"program":true}`, `{"id":1}x`} {
		var r abi.ProcessStartResponse
		if err := decodeStart([]byte(s), &r); err == nil {
			t.Errorf("%q decoded to %+v without an error", s, r)
		}
	}
}

func sameWait(t testing.TB, b []byte) {
	t.Helper()
	var got, want abi.ProcessWaitResponse
	if err := decodeWait(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: %+v, encoding/json %+v", b, got, want)
	}
}

// FuzzDecodeWait: every wait response the host can write decodes as
// encoding/json decodes it; any bytes at all decode or fail without a
// panic.
func FuzzDecodeWait(f *testing.F) {
	f.Add(0, "", false, "", int64(0), int64(0), false, "", false, true, int64(0), 0, 0, []byte(`{}`))
	f.Add(-9, "SIGTERM", true, "timeout", int64(30000), int64(1<<20), true, "\"\\\n\x00\xff<é>", true, false, int64(-1), 5, 77, []byte(`{"collected":{`))
	f.Fuzz(func(t *testing.T, exit int, sig string, timedOut bool, killed string, dur, outBytes int64, outTrunc bool,
		stderr string, errTrunc, hasColl bool, kept int64, events, size int, raw []byte) {
		w := abi.ProcessWaitResponse{ExitCode: exit, Signal: sig, TimedOut: timedOut, Killed: killed, DurationMs: dur,
			StdoutBytes: outBytes, StdoutTruncated: outTrunc, Stderr: stderr, StderrTruncated: errTrunc}
		if hasColl {
			w.Collected = &abi.ProcessCollected{Kept: kept, Events: events, Bytes: size}
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		sameWait(t, b)
		var any abi.ProcessWaitResponse
		_ = decodeWait(raw, &any)
		var r abi.ProcessStartResponse
		_ = decodeStart(raw, &r)
	})
}
