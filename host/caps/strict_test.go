package caps

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// The process family's requests as the SDK writes them, and the refusals
// of StrictUnmarshal that the flat path must leave to the general way.
var (
	startReq = `{"argv":["/opt/tools/aoidocs","docs","many","--count=10","--output","jsonl"],"env":{"AIOD_MT_TOKEN":"token-for-docs"},"timeout_ms":30000,"max_output_bytes":16777216,"clear_env":true}`
	readReq  = `{"id":1,"max_bytes":1048576,"timeout_ms":10000,"runs":["hit","aoi:hit"],"collect":true,"add":[{"type":"aoi:error","x":[1,{"y":2}]}]}`
	waitReq  = `{"id":1,"keep_collected":true}`
)

func TestStrictFlat(t *testing.T) {
	// the requests take the flat path, and decode as the general way does
	flat := []struct {
		doc string
		new func() any
	}{
		{startReq, func() any { return new(abi.ProcessStartRequest) }},
		{readReq, func() any { return new(abi.ProcessReadRequest) }},
		{waitReq, func() any { return new(abi.ProcessWaitRequest) }},
		{` {"id":2} ` + "\n", func() any { return new(abi.ProcessWaitRequest) }},
		{`{"argv":["a"],"env":null}`, func() any { return new(abi.ProcessStartRequest) }},
	}
	for _, tc := range flat {
		a, b := tc.new(), tc.new()
		if !strictFlat([]byte(tc.doc), a) {
			t.Errorf("%s: not decoded by the flat path", tc.doc)
		}
		if err := strictUnmarshal([]byte(tc.doc), b); err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: flat %+v, general %+v", tc.doc, a, b)
		}
	}
	// each refused, with the general way's reason
	refused := map[string]string{
		`{"id":1,"id":2}`:                        "duplicate field",
		`{"ID":1}`:                               "unknown field",
		`{"i\u0064":1}`:                          "",
		`{"id":1,"i\u0064":2}`:                   "duplicate field",
		`{"id":1,"extra":true}`:                  "unknown field",
		`{"id":1} {}`:                            "trailing data",
		`{"id":"1"}`:                             "cannot unmarshal",
		`{"id":1`:                                "unexpected EOF",
		`[]`:                                     "cannot unmarshal",
		`{"argv":["a"],"env":{"A":"1","A":"2"}}`: "duplicate field",
		"{\"argv\":[\"a\"],\"env\":{\"\xff\":\"1\",\"\xfe\":\"2\"}}": "duplicate field",
		`{"argv":["a"],"env":{"\u0041":"1","A":"2"}}`:                "duplicate field",
		`{"argv":[{"a":1}]}`: "cannot unmarshal",
	}
	for doc, want := range refused {
		var v any = new(abi.ProcessWaitRequest)
		if strings.Contains(doc, "argv") {
			v = new(abi.ProcessStartRequest)
		}
		if doc == `{"i\u0064":1}` {
			// spelled with an escape: the general way decodes it
			if strictFlat([]byte(doc), v) {
				t.Errorf("%s: an escaped name took the flat path", doc)
			}
			if err := StrictUnmarshal([]byte(doc), v); err != nil {
				t.Errorf("%s: %v", doc, err)
			}
			continue
		}
		err := StrictUnmarshal([]byte(doc), v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", doc, err, want)
		}
	}
}

// TestStrictFlatShapes: which types take the flat path.
func TestStrictFlatShapes(t *testing.T) {
	type inner struct{ A int }
	type withStruct struct{ In inner }
	type withPtrStruct struct{ In *inner }
	type withSliceStruct struct{ In []inner }
	type withAny struct{ In any }
	type named string
	type withNamed struct{ N named }
	type embedded struct{ inner }
	cases := []struct {
		v    any
		flat bool
	}{
		{abi.ProcessStartRequest{}, true}, {abi.ProcessReadRequest{}, true}, {abi.ProcessWaitRequest{}, true},
		{withStruct{}, false}, {withPtrStruct{}, false}, {withSliceStruct{}, false}, {withAny{}, false},
		{withNamed{}, false}, {embedded{}, false}, {json.RawMessage{}, false}, {abi.Manifest{}, false},
	}
	for _, c := range cases {
		if got := shapeOf(reflect.TypeOf(c.v)) != nil; got != c.flat {
			t.Errorf("%T: flat %v, want %v", c.v, got, c.flat)
		}
	}
}

// FuzzStrictFlat: whatever the flat path accepts, the general way accepts
// too, with the same value.
func FuzzStrictFlat(f *testing.F) {
	for _, s := range []string{startReq, readReq, waitReq, `{"id":1,"id":2}`, `{"argv":[],"env":{"A":"1","A":"2"}}`, `{"env":{"\u0041":"1"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() any{
			func() any { return new(abi.ProcessStartRequest) },
			func() any { return new(abi.ProcessReadRequest) },
			func() any { return new(abi.ProcessWaitRequest) },
		} {
			a, b := mk(), mk()
			if !strictFlat(data, a) {
				continue
			}
			if err := strictUnmarshal(data, b); err != nil {
				t.Fatalf("%q: the flat path accepted what the general way refuses: %v", data, err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%q: flat %+v, general %+v", data, a, b)
			}
		}
	})
}

func BenchmarkStrictUnmarshal(b *testing.B) {
	for _, tc := range []struct {
		name string
		doc  string
		new  func() any
	}{
		{"start", startReq, func() any { return new(abi.ProcessStartRequest) }},
		{"read", readReq, func() any { return new(abi.ProcessReadRequest) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := StrictUnmarshal([]byte(tc.doc), tc.new()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"-general", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := strictUnmarshal([]byte(tc.doc), tc.new()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
