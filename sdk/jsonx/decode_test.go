package jsonx

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type flat struct {
	Text  string   `json:"text"`
	N     int      `json:"n"`
	N64   int64    `json:"n64"`
	N32   int32    `json:"n32"`
	B     bool     `json:"b"`
	F     float64  `json:"f"`
	P     *string  `json:"p"`
	PI    *int     `json:"pi"`
	L     []string `json:"l"`
	Skip  string   `json:"-"`
	Plain string
}

func TestDecode(t *testing.T) {
	d := decoderFor(reflect.TypeOf(flat{}))
	s := "x"
	i := 7
	cases := []struct {
		in      string
		want    flat
		wantErr string
	}{
		{`{}`, flat{}, ""},
		{``, flat{}, ""},
		{`null`, flat{}, ""},
		{` {"text":"hi"} `, flat{Text: "hi"}, ""},
		{`{"text":"a\"b\\c\n\u00e9\ud83d\ude00"}`, flat{Text: "a\"b\\c\né😀"}, ""},
		{`{"text":"é ✓ \u2028"}`, flat{Text: "é ✓ \u2028"}, ""},
		{`{"text":"a` + "\xff" + `b"}`, flat{Text: "a\ufffdb"}, ""},
		{`{"text":"\ud800 lone"}`, flat{Text: "\ufffd lone"}, ""},
		{`{"text":"first","text":"second"}`, flat{Text: "second"}, ""},
		{`{"text":"a\qb"}`, flat{}, "not a JSON object"},
		{`{"text":"unterminated}`, flat{}, "not a JSON object"},
		{`{"n":-3,"n64":9007199254740993,"n32":5,"b":true,"f":1.5e3}`, flat{N: -3, N64: 9007199254740993, N32: 5, B: true, F: 1500}, ""},
		{`{"n":30.0}`, flat{N: 30}, ""},
		{`{"p":"x","pi":7}`, flat{P: &s, PI: &i}, ""},
		{`{"l":["a","b"],"Plain":"p"}`, flat{L: []string{"a", "b"}, Plain: "p"}, ""},
		{`{"unknown":{"deep":[1,{"x":"}"}]},"text":"k"}`, flat{Text: "k"}, ""},
		{`{"text":null,"n":null}`, flat{}, ""},
		{`{"-":"ignored","Skip":"no"}`, flat{}, ""},
		{`{"text":1}`, flat{}, "text: expected a string"},
		{`{"n":"1"}`, flat{}, "n: expected an integer"},
		{`{"n":1.5}`, flat{}, "n: expected an integer"},
		{`{"n32":99999999999}`, flat{}, "n32: integer out of range"},
		{`{"b":1}`, flat{}, "b: expected a boolean"},
		{`{"l":"a"}`, flat{}, "l: json: cannot unmarshal"},
		{`[1]`, flat{}, "not a JSON object"},
		{`{"text":"hi"`, flat{}, "not a JSON object"},
		{`{"text":"hi"} x`, flat{}, "not a JSON object"},
		{`{"text":"a` + "\x01" + `"}`, flat{}, "not a JSON object"},
		{`{"text" "hi"}`, flat{}, "not a JSON object"},
		{`{"f":1e}`, flat{}, "not a JSON object"},
		{`{"l":[1,}`, flat{}, "not a JSON object"},
	}
	for _, tc := range cases {
		var got flat
		err := d.decode([]byte(tc.in), &got)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// FuzzDecode: the hand-written decoder never panics, never accepts what
// encoding/json rejects as JSON, and agrees with encoding/json on values.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"text":"hi","n":1,"b":true,"f":2.5,"p":"x","l":["a"]}`, `{}`, `{"text":"\u00e9\\"}`, `{"n":1e2}`, `null`} {
		f.Add([]byte(s))
	}
	d := decoderFor(reflect.TypeOf(flat{}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var got flat
		err := d.decode(in, &got)
		if err != nil {
			return
		}
		if len(strings.TrimSpace(string(in))) > 0 && !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(in, &m) != nil {
			return
		}
		for k := range m { // encoding/json matches keys case-insensitively; we do not
			if strings.ToLower(k) != k && k != "Plain" {
				return
			}
		}
		var want flat
		if json.Unmarshal(in, &want) != nil {
			return
		}
		want.Skip = ""
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %+v, encoding/json %+v", in, got, want)
		}
	})
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\n\r\t", "é😀", "\u2028\u2029", "bad\xffutf8", "<html>&"} {
		got := string(AppendString(nil, s))
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("%q encoded as invalid JSON %s: %v", s, got, err)
		}
		if want := viaEncodingJSON(s); back != want {
			t.Fatalf("%q round-tripped to %q", s, back)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello\n\"x\"\xff")
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(AppendString(nil, s), &back); err != nil {
			t.Fatalf("%q: invalid JSON: %v", s, err)
		}
		if back != viaEncodingJSON(s) {
			t.Fatalf("%q round-tripped to %q", s, back)
		}
	})
}

func viaEncodingJSON(s string) string {
	b, _ := json.Marshal(s)
	var back string
	json.Unmarshal(b, &back)
	return back
}

func TestDecodeStringMapAndRaw(t *testing.T) {
	type ev struct {
		Config map[string]string `json:"config"`
		Args   json.RawMessage   `json:"args"`
	}
	for _, tc := range []struct {
		name, in string
		want     ev
		bad      bool
	}{
		{"strings", `{"config":{"a":"1","b\u0041":"x\ny"},"args":{"k":[1,2]}}`, ev{Config: map[string]string{"a": "1", "bA": "x\ny"}, Args: json.RawMessage(`{"k":[1,2]}`)}, false},
		{"empty", `{"config":{},"args":[]}`, ev{Config: map[string]string{}, Args: json.RawMessage(`[]`)}, false},
		{"null map", `{"config":null}`, ev{}, false},
		{"a number member", `{"config":{"a":1}}`, ev{}, true},
		{"not an object", `{"config":"x"}`, ev{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, std ev
			err := Unmarshal([]byte(tc.in), &got)
			stdErr := json.Unmarshal([]byte(tc.in), &std)
			if (err != nil) != tc.bad || (stdErr != nil) != tc.bad {
				t.Fatalf("errors %v / encoding/json %v, want bad=%v", err, stdErr, tc.bad)
			}
			if tc.bad {
				return
			}
			if !reflect.DeepEqual(got.Config, tc.want.Config) || string(got.Args) != string(tc.want.Args) || !reflect.DeepEqual(got, std) {
				t.Fatalf("got %+v, encoding/json %+v, want %+v", got, std, tc.want)
			}
		})
	}
}
