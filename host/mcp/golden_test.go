package mcp

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// step is one exchange of a transcript.
type step struct {
	Name     string            `json:"name"`
	Method   string            `json:"method,omitempty"` // HTTP method, POST when empty
	Headers  map[string]string `json:"headers,omitempty"`
	Body     json.RawMessage   `json:"body,omitempty"`
	RawBody  string            `json:"rawBody,omitempty"` // a body that is not JSON
	Status   int               `json:"status"`
	RespHdrs map[string]string `json:"responseHeaders,omitempty"`
	Response json.RawMessage   `json:"response,omitempty"`
	Stream   bool              `json:"stream,omitempty"`
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{},"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"golden","version":"1"}}`

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

var (
	legacyScript = []step{
		{Name: "curl-style tools/call, no headers", Body: raw(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)},
		{Name: "unknown tool", Body: raw(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)},
		{Name: "unknown method", Body: raw(`{"jsonrpc":"2.0","id":3,"method":"nope/nope"}`)},
		{Name: "parse error", RawBody: `{"jsonrpc":`},
		{Name: "array outside 2025-03-26", Body: raw(`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`), Headers: map[string]string{"MCP-Protocol-Version": "2025-11-25"}},
		{Name: "batch under 2025-03-26", Body: raw(`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]`), Headers: map[string]string{"MCP-Protocol-Version": "2025-03-26"}},
		{Name: "initialize", Body: raw(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"golden","version":"1"}}}`)},
		{Name: "initialized", Body: raw(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), Headers: map[string]string{"Mcp-Session-Id": "$SESSION", "MCP-Protocol-Version": "2025-06-18"}},
		{Name: "ping in session", Body: raw(`{"jsonrpc":"2.0","id":8,"method":"ping"}`), Headers: map[string]string{"Mcp-Session-Id": "$SESSION", "MCP-Protocol-Version": "2025-06-18"}},
		{Name: "setLevel", Body: raw(`{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"info"}}`), Headers: map[string]string{"Mcp-Session-Id": "$SESSION"}},
		{Name: "logging tool streams its messages", Body: raw(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"test_tool_with_logging","arguments":{}}}`), Headers: map[string]string{"Mcp-Session-Id": "$SESSION"}},
		{Name: "progress echoes a numeric token", Body: raw(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":42}}}`)},
		{Name: "resources/read", Body: raw(`{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"test://template/7/data"}}`)},
		{Name: "resource not found (legacy code)", Body: raw(`{"jsonrpc":"2.0","id":13,"method":"resources/read","params":{"uri":"test://missing"}}`)},
		{Name: "prompts/get", Body: raw(`{"jsonrpc":"2.0","id":14,"method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}}`)},
		{Name: "completion", Body: raw(`{"jsonrpc":"2.0","id":15,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"test"}}}`)},
		{Name: "missing capability from a tool", Body: raw(`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"test_missing_capability","arguments":{}}}`)},
		{Name: "input without a session", Body: raw(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"test_input_required_result_elicitation","arguments":{}}}`)},
		{Name: "unsupported protocol version header", Body: raw(`{"jsonrpc":"2.0","id":18,"method":"ping"}`), Headers: map[string]string{"MCP-Protocol-Version": "1999-01-01"}},
		{Name: "DELETE session", Method: "DELETE", Headers: map[string]string{"Mcp-Session-Id": "$SESSION"}},
		{Name: "ended session", Body: raw(`{"jsonrpc":"2.0","id":19,"method":"ping"}`), Headers: map[string]string{"Mcp-Session-Id": "$SESSION"}},
		{Name: "GET without session", Method: "GET"},
	}
	modernScript = []step{
		{Name: "discover", Body: raw(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`), Headers: modernHeaders("server/discover", "")},
		{Name: "tools/call", Body: raw(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + modernMeta + `}}`), Headers: modernHeaders("tools/call", "echo")},
		{Name: "prompts/list caching hints", Body: raw(`{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{` + modernMeta + `}}`), Headers: modernHeaders("prompts/list", "")},
		{Name: "missing _meta", Body: raw(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`), Headers: modernHeaders("tools/list", "")},
		{Name: "header mismatch version", Body: raw(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`), Headers: modernHeaders("tools/list", "")},
		{Name: "unsupported version", Body: raw(`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`), Headers: map[string]string{"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "tools/list"}},
		{Name: "Mcp-Name mismatch", Body: raw(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + modernMeta + `}}`), Headers: modernHeaders("tools/call", "other")},
		{Name: "base64 Mcp-Param", Body: raw(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_x_mcp_header","arguments":{"region":"Hello"},` + modernMeta + `}}`), Headers: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "test_x_mcp_header", "Mcp-Param-Region": "=?base64?SGVsbG8=?="}},
		{Name: "removed method", Body: raw(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{` + modernMeta + `}}`), Headers: modernHeaders("ping", "")},
		{Name: "resource not found", Body: raw(`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"test://missing",` + modernMeta + `}}`), Headers: modernHeaders("resources/read", "test://missing")},
		{Name: "input required", Body: raw(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},` + modernMeta + `}}`), Headers: modernHeaders("tools/call", "test_input_required_result_multi_round")},
		{Name: "round two", Body: raw(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"inputResponses":{"step1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"$STATE",` + modernMeta + `}}`), Headers: modernHeaders("tools/call", "test_input_required_result_multi_round")},
		{Name: "round three", Body: raw(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"inputResponses":{"step2":{"action":"accept","content":{"color":"green"}}},"requestState":"$STATE",` + modernMeta + `}}`), Headers: modernHeaders("tools/call", "test_input_required_result_multi_round")},
		{Name: "tampered state", Body: raw(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"inputResponses":{},"requestState":"$STATE-TAMPERED",` + modernMeta + `}}`), Headers: modernHeaders("tools/call", "test_input_required_result_multi_round")},
		{Name: "missing capability", Body: raw(`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"test_missing_capability","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`), Headers: modernHeaders("tools/call", "test_missing_capability")},
		{Name: "GET is 405", Method: "GET", Headers: map[string]string{"MCP-Protocol-Version": "2026-07-28"}},
	}
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

var (
	stateRE   = regexp.MustCompile(`"requestState":"s1\.[A-Za-z0-9_-]+"`)
	versionRE = regexp.MustCompile(`"version":"[^"]*"\}`)
)

// TestGolden replays each era's transcript (happy paths and error cases)
// against the echo and conformance plugins and compares it with
// testdata/golden/<era>.json (go test -run TestGolden -update rewrites).
func TestGolden(t *testing.T) {
	for era, script := range map[string][]step{"legacy": legacyScript, "modern": modernScript} {
		t.Run(era, func(t *testing.T) {
			s := echoServer(t)
			var session, state string
			var got []step
			for _, st := range script {
				h := mapHeaders{"accept": "application/json, text/event-stream"}
				for k, v := range st.Headers {
					h[strings.ToLower(k)] = strings.ReplaceAll(v, "$SESSION", session)
				}
				body := strings.ReplaceAll(string(st.Body)+st.RawBody, "$STATE", state)
				m := st.Method
				if m == "" {
					m = "POST"
				}
				r := s.Serve(context.Background(), &Exchange{Method: m, Header: h, Body: []byte(body), Principal: Principal{}})
				out := st
				out.Status = r.Status
				out.RespHdrs = nil
				for _, f := range r.Header {
					if f.Name == headerSessionID {
						session = f.Value
						f.Value = "$SESSION"
					}
					if out.RespHdrs == nil {
						out.RespHdrs = map[string]string{}
					}
					out.RespHdrs[f.Name] = f.Value
				}
				resp := r.Body
				if r.Stream != nil {
					out.Stream = true
					resp = drain(r.Stream)
				}
				if m := regexp.MustCompile(`"requestState":"(s1\.[A-Za-z0-9_-]+)"`).FindSubmatch(resp); m != nil {
					state = string(m[1])
				}
				norm := stateRE.ReplaceAllLiteral(resp, []byte(`"requestState":"$STATE"`))
				norm = versionRE.ReplaceAllLiteral(norm, []byte(`"version":"$VERSION"}`))
				out.Response = nil
				if len(norm) > 0 {
					out.Response = json.RawMessage(norm)
					if !json.Valid(norm) {
						out.Response, _ = json.Marshal(string(norm))
					}
				}
				got = append(got, out)
			}
			path := filepath.Join("testdata", "golden", era+".json")
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path) //nolint
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			var w, g []step
			_ = json.Unmarshal(want, &w)
			_ = json.Unmarshal(b, &g)
			for i := range g {
				if i >= len(w) {
					t.Fatalf("step %q is not in the golden file", g[i].Name)
				}
				wb, _ := json.Marshal(w[i])
				gb, _ := json.Marshal(g[i])
				if string(wb) != string(gb) {
					t.Errorf("step %q:\n got %s\nwant %s", g[i].Name, gb, wb)
				}
			}
		})
	}
}

// drain collects an SSE stream's messages as a JSON array.
func drain(st *Stream) []byte {
	w := &sseCollector{}
	st.Pump(w)
	var msgs []json.RawMessage
	for _, line := range strings.Split(w.b.String(), "\n") {
		if strings.HasPrefix(line, "data: ") {
			msgs = append(msgs, json.RawMessage(strings.TrimPrefix(line, "data: ")))
		}
	}
	b, _ := json.Marshal(msgs)
	return b
}

type sseCollector struct{ b strings.Builder }

func (c *sseCollector) Write(p []byte) (int, error) { return c.b.Write(p) }
func (c *sseCollector) Flush() error                { return nil }
