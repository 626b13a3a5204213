package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAnswer: the envelope of the upstream's hop comes off a result; every
// other member stays as written, in its order.
func TestAnswer(t *testing.T) {
	u := &upstream{srv: Server{Name: "up"}}
	for _, tc := range []struct{ name, in, want string }{
		{"no envelope", `{ "content" : [ ] , "isError":true }`, `{ "content" : [ ] , "isError":true }`},
		{"empty", `{}`, `{}`},
		{"resultType", `{"resultType":"complete","content":[]}`, `{"content":[]}`},
		{"resultType last", `{"content":[],"resultType":"complete"}`, `{"content":[]}`},
		{"only the envelope", `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"}}}`, `{}`},
		{"the tool's own _meta", `{"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{"name":"x"},"b":{"c":"}"}},"content":[]}`, `{"_meta":{"a":1,"b":{"c":"}"}},"content":[]}`},
		{"escaped keys", `{"result\u0054ype":"complete","_meta":{"io.modelcontextprotocol/server\u0049nfo":{}},"x":"\"resultType\""}`, `{"x":"\"resultType\""}`},
		{"nested keys are the answer's", `{"structuredContent":{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":1}},"content":[{"_meta":{"io.modelcontextprotocol/serverInfo":2}}]}`,
			`{"structuredContent":{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":1}},"content":[{"_meta":{"io.modelcontextprotocol/serverInfo":2}}]}`},
		{"_meta not an object", `{"_meta":null,"resultType":"complete"}`, `{"_meta":null}`},
		{"not an object", `[1,2]`, `[1,2]`},
	} {
		if got := string(u.answer(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("%s: answer(%s)\n got %s\nwant %s", tc.name, tc.in, got, tc.want)
		}
	}
	for _, in := range []string{`{"resultType":"input_required","inputRequests":{}}`, `{"resultType":"task","task":{}}`, `{"resultType":7}`} {
		r := decode(t, u.answer(json.RawMessage(in)))
		if !r.IsError || !strings.Contains(r.text(), `upstream MCP server "up" answered a result`) && !strings.Contains(r.text(), `upstream MCP server "up" answered a resultType`) &&
			!strings.Contains(r.text(), `upstream MCP server "up" asked for input, and no client can answer it`) {
			t.Errorf("answer(%s) = %+v, want an isError result naming the server", in, r)
		}
	}
}

// FuzzAnswer: whatever JSON object the upstream answers, the answer is valid
// JSON (or the input unchanged), and never panics.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{`{}`, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{}}}`, `{"a":[1,{"b":"\\\""}],"_meta":{"x":true,"io.modelcontextprotocol/serverInfo":null}}`, ` { "k" : -1.5e3 } `} {
		f.Add(s)
	}
	u := &upstream{srv: Server{Name: "up"}}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		out := u.answer(json.RawMessage(in))
		if !json.Valid(out) {
			t.Fatalf("answer(%s) = %s: not JSON", in, out)
		}
	})
}
