package jsonx

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // key=raw
		bad      bool
	}{
		{"flat and nested", `{"a":"x","b":{"c":[1,"]}"]},"d":null, "e" : 2}`, []string{`a="x"`, `b={"c":[1,"]}"]}`, `d=null`, `e=2`}, false},
		{"escaped key", `{"k\u0041":true}`, []string{`kA=true`}, false},
		{"empty", ` {} `, nil, false},
		{"not an object", `[1]`, nil, true},
		{"unterminated", `{"a":{"b":1}`, nil, true},
		{"trailing", `{} x`, nil, true},
		{"missing colon", `{"a" 1}`, nil, true},
		{"empty value", `{"a":}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := Members([]byte(tc.in), func(k string, raw []byte) bool { got = append(got, k+"="+string(raw)); return true })
			if (err != nil) != tc.bad || !tc.bad && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q %v, want %q (bad %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestString(t *testing.T) {
	for _, in := range []string{`"plain"`, `"esc\n\"\u00e9"`, "\"bad \xff byte\"", "\"bad \xff\\n escaped\"", `""`} {
		got, err := String([]byte(in))
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		if (err != nil) != (werr != nil) || got != want {
			t.Errorf("String(%q) = %q %v, encoding/json %q %v", in, got, err, want, werr)
		}
	}
	for _, in := range []string{``, `x`, `"open`, `"a"b`} {
		if _, err := String([]byte(in)); err == nil {
			t.Errorf("String(%q) accepted", in)
		}
	}
}

// FuzzMembers: whatever the bytes, Members returns; on an object
// encoding/json accepts, it reports the same members.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,"x"]},"c":"d"}`, `{"a":"\u0041"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]string{}
		err := Members(b, func(k string, raw []byte) bool { got[k] = string(raw); return true })
		var std map[string]json.RawMessage
		if json.Unmarshal(b, &std) != nil || std == nil || err != nil {
			return
		}
		for k, v := range std {
			if g, ok := got[k]; !ok || !json.Valid([]byte(g)) {
				t.Fatalf("Members(%q): key %q = %q (encoding/json %s)", b, k, g, v)
			}
		}
	})
}
