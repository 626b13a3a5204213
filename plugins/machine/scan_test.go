package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestScanEvent: the one-pass check of a line, case by case: what it
// accepts, where it finds the type, when it leaves the line to decoding,
// and hostile lines (deep nesting, bad escapes, invalid UTF-8, trailing
// values) refused as encoding/json refuses them.
func TestScanEvent(t *testing.T) {
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
		typ, slow, ok := scanEvent([]byte(c.line))
		if ok != c.ok || (ok && (string(typ) != c.typ || slow != c.slow)) {
			t.Errorf("%.60q: type %q slow %v ok %v, want %q %v %v", c.line, typ, slow, ok, c.typ, c.slow, c.ok)
		}
		if want := json.Valid([]byte(c.line)) && utf8.ValidString(c.line) && strings.HasPrefix(c.line, "{"); ok != want {
			t.Errorf("%.60q: ok %v, encoding/json %v", c.line, ok, want)
		}
	}
}
