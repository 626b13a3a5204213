package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"e\u0063ho","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"progressToken":7}}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
	`{"jsonrpc":"2.0","id":"aiod-1","result":{"action":"accept"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{`, `{"a":}`, `{"jsonrpc":"2.0","id":1e400,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-0.5e+3,"method":7,"params":[1,2,{"a":[true,false,null]}]}`, "{\"a\":\"\x01\"}", `  {"x":"\ud83d\ude00"} `,
	`{"params":{"_meta":null,"name":null,"uri":5}}`, `{"params":{"_meta":[],"arguments":"s"}}`,
}

// FuzzDecodeMessage checks the one-pass decoder against encoding/json: it
// accepts only valid JSON, accepts all valid JSON of reasonable depth, and
// the raw values it keeps are themselves valid JSON.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req message
		var p params
		err := decodeMessage(body, &req, &p)
		valid := json.Valid(body)
		if err == nil || err == errType {
			if !valid {
				t.Fatalf("accepted invalid JSON %q", body)
			}
		} else if valid && bytes.Count(body, []byte("[")) < 100 && bytes.Count(body, []byte("{")) < 100 {
			t.Fatalf("rejected valid JSON %q: %v", body, err)
		}
		if err != nil {
			return
		}
		for _, raw := range []json.RawMessage{req.ID, req.Params, req.Result, req.Error, p.Arguments, p.InputResponses, p.Ref} {
			if len(raw) > 0 && !json.Valid(raw) {
				t.Fatalf("kept invalid raw value %q from %q", raw, body)
			}
		}
		// the envelope agrees with encoding/json (which also matches keys
		// case-insensitively; aiod wants them exact) for plain bodies
		lower := bytes.ToLower(body)
		plain := !bytes.Contains(body, []byte(`\`))
		for _, k := range []string{`"method"`, `"jsonrpc"`} {
			n := bytes.Count(body, []byte(k))
			plain = plain && n <= 1 && bytes.Count(lower, []byte(k)) == n
		}
		var want struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
		}
		if plain && json.Unmarshal(body, &want) == nil && (want.Method != req.Method || want.JSONRPC != req.JSONRPC) {
			t.Fatalf("%q: decoded method %q jsonrpc %q, encoding/json %q %q", body, req.Method, req.JSONRPC, want.Method, want.JSONRPC)
		}
	})
}

// FuzzHeaderValue: the base64 sentinel round-trips, and checking headers
// never panics whatever the values.
func FuzzHeaderValue(f *testing.F) {
	f.Add("echo", "tools/call", "=?base64?SGVsbG8=?=", "Hello")
	f.Add(" tool ", "TOOLS/LIST", "=?base64?SGVsbG8?=", "x")
	f.Add("", "", "=?base64?SGVs!!!bG8=?=", "\x00")
	f.Fuzz(func(t *testing.T, name, method, hv, arg string) {
		enc := "=?base64?" + base64.StdEncoding.EncodeToString([]byte(arg)) + "?="
		if got, ok := decodeHeaderValue(enc); !ok || got != arg {
			t.Fatalf("sentinel of %q decoded to %q, %v", arg, got, ok)
		}
		args, _ := json.Marshal(map[string]any{"region": arg, "level": 3})
		p := &params{Name: &name, Arguments: args}
		h := mapHeaders{"mcp-method": hv, "mcp-name": hv, "mcp-param-region": hv}
		mirrored := []paramHeader{{Header: "Region", Arg: "region", Type: "string"}, {Header: "Level", Arg: "level", Type: "integer"}}
		e := checkStandardHeaders(h, method, p, mirrored)
		if e != nil && e.Code != CodeHeaderMismatch {
			t.Fatalf("header check answered code %d", e.Code)
		}
	})
}
