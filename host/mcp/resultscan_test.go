package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzModernResult: whatever object a plugin or an upstream answers, the
// modern envelope around it is valid JSON with one top-level resultType and
// aiod's serverInfo in its top-level _meta (unless that _meta names a server
// already or is not an object).
func FuzzModernResult(f *testing.F) {
	for _, s := range []string{`{}`, `{"_meta":{}}`, `{"a":{"_meta":1},"_meta":{"x":"}"}}`, `{ "resultType" : "complete" } `, `{"_meta":null}`} {
		f.Add(s)
	}
	s := &Server{metaJSON: []byte(`{"io.modelcontextprotocol/serverInfo":{"name":"aiod"}}`)}
	f.Fuzz(func(t *testing.T, in string) {
		var obj map[string]json.RawMessage
		if len(in) == 0 || in[0] != '{' || json.Unmarshal([]byte(in), &obj) != nil || obj == nil {
			return // results are compact objects (a JSON-RPC result's raw bytes)
		}
		out := s.modernResult([]byte(in), "complete")
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("modernResult(%s) = %s: %v", in, out, err)
		}
		if _, ok := got["resultType"]; !ok {
			t.Fatalf("modernResult(%s) = %s: no resultType", in, out)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(got["_meta"], &meta) == nil && meta != nil {
			if _, ok := meta["io.modelcontextprotocol/serverInfo"]; !ok {
				t.Fatalf("modernResult(%s) = %s: _meta without serverInfo", in, out)
			}
		}
	})
}
