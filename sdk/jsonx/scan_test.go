package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestScanObject: the one-pass check of a line, case by case: what it
// accepts, where it finds the type, when it leaves the line to decoding,
// and hostile lines (deep nesting, bad escapes, invalid UTF-8, trailing
// values) refused as encoding/json refuses them.
func TestScanObject(t *testing.T) {
	for _, c := range []struct {
		line, typ string
		slow, ok  bool
	}{
		{`{"type":"hit","rank":1}`, "hit", false, true},
		{`{"rank":1.5e-3,"nested":{"type":"inner"},"type":"aoi:summary"}  `, "aoi:summary", false, true},
		{`{"a":[true,false,null,"x",-0,{}]}`, "", false, true},
		{`{"type":"a","type":"b"}`, "b", false, true},
		{`{"type":"\u0068it"}`, "\\u0068it", true, true},
		{`{"typ\u0065":"hit"}`, "", true, true},
		{`{"type":7}`, "", true, true},
		{`{"type":"hit"}{"type":"hit"}`, "", false, false},
		{` {"type":"hit"}`, "", false, false},
		{`{"type":"hit",}`, "", false, false},
		{`{"type":"hit" "x":1}`, "", false, false},
		{`{"a":01}`, "", false, false},
		{`{"a":1.}`, "", false, false},
		{`{"a":"\x"}`, "", false, false},
		{`{"a":"\u12"}`, "", false, false},
		{"{\"a\":\"\x01\"}", "", false, false},
		{"{\"a\":\"\xc3\x28\"}", "", false, false},
		{`{"a":tru}`, "", false, false},
		{`{"a":[1,2}`, "", false, false},
		{`{`, "", false, false},
		{``, "", false, false},
		{`["type","hit"]`, "", false, false},
		{`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, "", false, false},
		{`{"a":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`, "", false, true},
	} {
		typ, slow, ok := ScanObject([]byte(c.line))
		if ok != c.ok || (ok && (string(typ) != c.typ || slow != c.slow)) {
			t.Errorf("%.60q: type %q slow %v ok %v, want %q %v %v", c.line, typ, slow, ok, c.typ, c.slow, c.ok)
		}
		if want := json.Valid([]byte(c.line)) && utf8.ValidString(c.line) && strings.HasPrefix(c.line, "{"); ok != want {
			t.Errorf("%.60q: ok %v, encoding/json %v", c.line, ok, want)
		}
	}
}

// FuzzScanObject: the one-pass line check agrees with encoding/json on
// which lines are one JSON object (and UTF-8), and on the type member it
// reads without decoding.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{"type":"hit","rank":1,"t":"x\"y"}`, `{"a":[1,-2.5e+3,{"b":null}],"type":"x"} `, `{"type":5}`,
		`{"typ\u0065":"x"}`, `{"type":"\u00e9"}`, `{"a":01}`, `{"a":"` + "\x01" + `"}`, `{"a":1,}`, `{} {}`, "{\"a\":\"\xff\"}", `{"type":"a","type":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, slow, ok := ScanObject(b)
		want := len(b) > 0 && b[0] == '{' && json.Valid(b) && utf8.Valid(b)
		if ok != want {
			t.Fatalf("%q: ok %v, encoding/json says %v", b, ok, want)
		}
		if !ok || slow {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		raw, has := m["type"]
		if has != (typ != nil) {
			t.Fatalf("%q: type %q, encoding/json has it: %v", b, typ, has)
		}
		if has {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil || s != string(typ) {
				t.Fatalf("%q: type %q, encoding/json reads %q (%v)", b, typ, s, err)
			}
		}
	})
}

// FuzzValid: Valid answers as encoding/json.Valid does, for any bytes
// (bytes that are not UTF-8 inside strings, nesting at the bound, numbers,
// literals, whitespace).
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		`{}`, ` [1, -0.5e+3, "a\u00e9\n", true, false, null, {"k": []}] `, `{"a":1,}`, `[01]`, `"\xff\xfe"`,
		`{"a":"b"}x`, `1.`, `-`, `"\ud800"`, "\"\x1f\"", `{"a" 1}`, "", " ", `nul`, `[1e]`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// BenchmarkScanObject is the check of one line of a Machine Mode stream.
func BenchmarkScanObject(b *testing.B) {
	line := []byte(`{"type":"hit","rank":1234,"id":"doc_1234","title":"A document about agent-operable tools"}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, _, ok := ScanObject(line); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkValid(b *testing.B) {
	d := []byte(`{"events":[`)
	for i := 0; i < 10000; i++ {
		if i > 0 {
			d = append(d, ',')
		}
		d = append(d, `{"type":"hit","rank":12,"id":"doc_12","title":"A document about agent-operable tools"}`...)
	}
	d = append(d, `],"summary":{"ok":true}}`...)
	b.SetBytes(int64(len(d)))
	b.Run("jsonx", func(b *testing.B) {
		for b.Loop() {
			if !Valid(d) {
				b.Fatal("not valid")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if !json.Valid(d) {
				b.Fatal("not valid")
			}
		}
	})
}
