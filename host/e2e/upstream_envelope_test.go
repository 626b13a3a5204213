package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// richUpstream is a go-sdk server with one tool, "rich", whose result has
// every member a client may look at: content, structuredContent, isError
// and the tool's own _meta. stateless: a 2026-07-28 server (its results
// carry its envelope, resultType and _meta's serverInfo); otherwise one with
// sessions, which a legacy client (aiod) reaches through initialize.
func richUpstream(t *testing.T, name string, stateless bool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "9.9.9"}, nil)
	s.AddTool(&mcp.Tool{Name: "rich", Description: "every result member", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "rich text"}},
				StructuredContent: map[string]any{"k": 1, "nested": []any{"a", true, 2.5}},
				IsError:           true,
				Meta:              mcp.Meta{"vendor/key": "v", "vendor/n": 7},
			}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(func() { up.CloseClientConnections(); up.Close() })
	return up.URL
}

// resultTap records the JSON-RPC result of each tools/call answered
// through it (JSON or SSE), as the server wrote it.
type resultTap struct {
	base http.RoundTripper
	mu   sync.Mutex
	last json.RawMessage
}

func (rt *resultTap) RoundTrip(r *http.Request) (*http.Response, error) {
	isCall := r.Header.Get("Mcp-Method") == "tools/call"
	if !isCall && r.Body != nil && r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			body, _ := io.ReadAll(b)
			isCall = bytes.Contains(body, []byte(`"method":"tools/call"`))
		}
	}
	resp, err := rt.base.RoundTrip(r)
	if err != nil || !isCall {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	for _, msg := range messages(body) {
		var m struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(msg, &m) == nil && len(m.Result) > 0 {
			rt.mu.Lock()
			rt.last = m.Result
			rt.mu.Unlock()
		}
	}
	return resp, nil
}

// messages is a body's JSON-RPC messages: the body itself, or each SSE
// event's data.
func messages(body []byte) [][]byte {
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
		return [][]byte{t}
	}
	var out [][]byte
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			out = append(out, []byte(strings.TrimSpace(d)))
		}
	}
	return out
}

// callRich connects the go-sdk client at version v to url, calls tool and
// returns the result as the server wrote it, member by member.
func callRich(t *testing.T, url, v, tool string) map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tap := &resultTap{base: http.DefaultTransport}
	c := mcp.NewClient(&mcp.Implementation{Name: "aiod-e2e-envelope", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tap}}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatalf("connect %s (%s): %v", url, v, err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != v {
		t.Fatalf("%s: negotiated %s, want %s", url, got, v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s (%s): %v", tool, v, err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s (%s): %+v, want the upstream's isError result", tool, v, res)
	}
	tap.mu.Lock()
	raw := tap.last
	tap.mu.Unlock()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s (%s): result %s: %v", tool, v, raw, err)
	}
	return m
}

// metaWithout is a result's _meta members, each as written, without key.
func metaWithout(t *testing.T, res map[string]json.RawMessage, key string) map[string]string {
	t.Helper()
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(res["_meta"], &meta); err != nil {
		t.Fatalf("_meta %s: %v", res["_meta"], err)
	}
	out := map[string]string{}
	for k, v := range meta {
		if k != key {
			out[k] = string(v)
		}
	}
	return out
}

// TestUpstreamEnvelope: a legacy and a modern client (the go-sdk's, at
// 2025-11-25 and 2026-07-28) call a tool of a 2026-07-28 upstream and of a
// legacy one through bin/aiod. The envelope is aiod's, in the client's era:
// no resultType and no serverInfo for the legacy client, resultType
// "complete" and aiod's own serverInfo for the modern one, never the
// upstream's. The answer (content, structuredContent, isError and the
// tool's own _meta keys) is byte for byte what the upstream answers a
// client of its own.
func TestUpstreamEnvelope(t *testing.T) {
	t.Parallel()
	const serverInfo = "io.modelcontextprotocol/serverInfo"
	ups := map[string]string{"modern": richUpstream(t, "modern-upstream", true), "legacy": richUpstream(t, "legacy-upstream", false)}
	versions := map[string]string{"modern": "2026-07-28", "legacy": "2025-11-25"}
	a := start(t, []string{fmt.Sprintf(`EXTRA_MCP_SERVERS={"m":{"url":%q,"prefix":"m"},"l":{"url":%q,"prefix":"l"}}`, ups["modern"], ups["legacy"])})
	for _, upEra := range []string{"modern", "legacy"} {
		// The upstream's own answer, to a client of its era.
		direct := callRich(t, ups[upEra], versions[upEra], "rich")
		if upEra == "modern" && (string(direct["resultType"]) != `"complete"` || !strings.Contains(string(direct["_meta"]), `"modern-upstream"`)) {
			t.Fatalf("the 2026-07-28 upstream's own result has no envelope to leave out: %v", direct)
		}
		tool := map[string]string{"modern": "m_rich", "legacy": "l_rich"}[upEra]
		for _, clEra := range []string{"legacy", "modern"} {
			t.Run(clEra+" client/"+upEra+" upstream", func(t *testing.T) {
				got := callRich(t, a.URL, versions[clEra], tool)
				for _, k := range []string{"content", "structuredContent", "isError"} {
					if string(got[k]) != string(direct[k]) {
						t.Errorf("%s: %s through aiod, %s from the upstream", k, got[k], direct[k])
					}
				}
				gm, dm := metaWithout(t, got, serverInfo), metaWithout(t, direct, serverInfo)
				if fmt.Sprint(gm) != fmt.Sprint(dm) || gm["vendor/key"] != `"v"` {
					t.Errorf("the tool's own _meta: %v through aiod, %v from the upstream", gm, dm)
				}
				var meta map[string]json.RawMessage
				_ = json.Unmarshal(got["_meta"], &meta)
				switch clEra {
				case "legacy":
					if rt, ok := got["resultType"]; ok {
						t.Errorf("a legacy client got resultType %s", rt)
					}
					if si, ok := meta[serverInfo]; ok {
						t.Errorf("a legacy client got a serverInfo: %s", si)
					}
				case "modern":
					if string(got["resultType"]) != `"complete"` {
						t.Errorf("resultType %s, want \"complete\"", got["resultType"])
					}
					var si struct{ Name string }
					if json.Unmarshal(meta[serverInfo], &si) != nil || si.Name != "aiod" {
						t.Errorf("serverInfo %s, want aiod's", meta[serverInfo])
					}
				}
				if len(got) != len(direct)-btoi(upEra == "modern")+btoi(clEra == "modern") {
					t.Errorf("result members %v, upstream's %v", keys(got), keys(direct))
				}
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
