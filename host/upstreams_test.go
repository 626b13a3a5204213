package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
)

// goUpstream is a go-sdk MCP server on loopback with the tools "echo" and
// "progress" (three progress notifications and a log message, then
// "done"). It counts DELETE requests (a legacy session's end).
type goUpstream struct {
	*httptest.Server
	deletes atomic.Int64
}

func newGoUpstream(t *testing.T, stateless bool) *goUpstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "go-upstream", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}, Meta: mcp.Meta{"vendor/k": "v"}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "progress", Description: "reports progress", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	u := &goUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			u.deletes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

// deadURL is a loopback MCP URL where nothing listens.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/mcp"
}

// startUpstreamHost runs a host with the echo plugin and the given
// upstreams; it returns the base URL and a function that closes the host
// (also run at cleanup).
func startUpstreamHost(t *testing.T, servers []upstream.Server, edit ...func(*host.Config)) (string, func()) {
	t.Helper()
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	cfg := host.Config{PluginsDir: plugins, CacheDir: testplugins.CacheDir(), Upstreams: servers,
		UpstreamListTimeout: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, e := range edit {
		e(&cfg)
	}
	_, url, stop := runHost(t, cfg)
	return url, stop
}

type rpcAnswer struct {
	Result struct {
		Tools   []json.RawMessage `json:"tools"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool            `json:"isError"`
		Meta    json.RawMessage `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func rpc(t *testing.T, url, body string) (rpcAnswer, string) {
	t.Helper()
	status, raw := post(t, url, body)
	var a rpcAnswer
	if status != 200 || json.Unmarshal([]byte(raw), &a) != nil {
		t.Fatalf("%s: status %d, body %q", body, status, raw)
	}
	return a, raw
}

func toolNames(t *testing.T, tools []json.RawMessage) []string {
	var out []string
	for _, d := range tools {
		var h struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(d, &h); err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
	return out
}

// TestUpstreamCatalog: tools/list is the plugins' tools, then each
// upstream's in registration order (nothing for one that is down), the
// same on every call; calls are forwarded and answered unedited; a server
// that is down answers isError naming it; the upstream's JSON-RPC errors
// are relayed; an unrouted name is an unknown tool; /v1/capabilities
// reports each upstream.
func TestUpstreamCatalog(t *testing.T) {
	up := newGoUpstream(t, true)
	url, _ := startUpstreamHost(t, []upstream.Server{
		{Name: "up", URL: up.URL, Prefix: "up"},
		{Name: "gone", URL: deadURL(t), Prefix: "gone"},
	})
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	a, first := rpc(t, url, list)
	if got, want := strings.Join(toolNames(t, a.Result.Tools), ","), "echo,up_echo,up_progress"; got != want {
		t.Fatalf("tools/list: %s, want %s", got, want)
	}
	for range 3 {
		if _, again := rpc(t, url, list); again != first {
			t.Fatalf("tools/list changed between calls:\n%s\n%s", first, again)
		}
	}

	a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"hi"}}}`)
	if a.Error != nil || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "hi" || a.Result.IsError || !strings.Contains(string(a.Result.Meta), `"vendor/k":"v"`) {
		t.Fatalf("up_echo: %s", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gone_hello","arguments":{}}}`)
	if a.Error != nil || !a.Result.IsError || len(a.Result.Content) != 1 || !strings.Contains(a.Result.Content[0].Text, `"gone"`) {
		t.Fatalf("gone_hello: %s, want an isError result naming \"gone\"", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"up_missing","arguments":{}}}`)
	if a.Error == nil || a.Error.Code == -32603 || !strings.Contains(a.Error.Message, "missing") {
		t.Fatalf("up_missing: %s, want the upstream's JSON-RPC error", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	if a.Error == nil || a.Error.Code != -32602 || a.Error.Message != "unknown tool: nope" {
		t.Fatalf("nope: %s, want unknown tool", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"plugin"}}}`)
	if a.Error != nil || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "plugin" {
		t.Fatalf("echo: %s", raw)
	}

	var body struct {
		Data struct {
			MCP struct {
				Tools     int               `json:"tools"`
				Upstreams []upstream.Status `json:"upstreams"`
			} `json:"mcp"`
		} `json:"data"`
	}
	getCapabilities(t, url, &body)
	got, _ := json.Marshal(body.Data.MCP.Upstreams)
	want := fmt.Sprintf(`[{"name":"up","url":%q,"prefix":"up","reachable":true,"tools":2},{"name":"gone","url":%q,"prefix":"gone","reachable":false,"tools":0}]`,
		up.URL, body.Data.MCP.Upstreams[1].URL)
	if string(got) != want || body.Data.MCP.Tools != 3 {
		t.Fatalf("capabilities: tools %d, upstreams %s, want 3 and %s", body.Data.MCP.Tools, got, want)
	}
}

// TestUpstreamProgress: a client that asks for progress gets the
// upstream's progress notifications on its call's stream, with its own
// token; one that does not ask gets a plain JSON answer.
func TestUpstreamProgress(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			up := newGoUpstream(t, stateless)
			url, _ := startUpstreamHost(t, []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}})
			status, raw := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up_progress","arguments":{},"_meta":{"progressToken":"mine-7"}}}`)
			if status != 200 || strings.Count(raw, `"method":"notifications/progress"`) != 3 || strings.Count(raw, `"progressToken":"mine-7"`) != 3 ||
				strings.Contains(raw, "aiod-") || !strings.Contains(raw, `"text":"done"`) {
				t.Fatalf("with a token: status %d\n%s\nwant three progress notifications with the client's token, then done", status, raw)
			}
			status, raw = post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up_progress","arguments":{}}}`)
			if status != 200 || strings.Contains(raw, "notifications/progress") || !strings.HasPrefix(raw, "{") {
				t.Fatalf("without a token: status %d %s, want a JSON answer without progress", status, raw)
			}
		})
	}
}

// TestUpstreamCancel: cancelling the client's request cancels the upstream
// call (a 2026-07-28 request: closing its stream).
func TestUpstreamCancel(t *testing.T) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "blocker", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A progress notification first: aiod's answer becomes a stream,
			// whose closing is the 2026-07-28 cancellation.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
			case <-time.After(10 * time.Second):
			}
			return &mcp.CallToolResult{}, nil
		})
	// Session mode: the go-sdk server cancels a handler on
	// notifications/cancelled (it does not on a closed stateless stream).
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	url, _ := startUpstreamHost(t, []upstream.Server{{Name: "b", URL: srv.URL, Prefix: "b"}})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b_block","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "b_block")
	resp, err := http.DefaultClient.Do(req) // returns with the first event
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("answer %s, want an event stream", ct)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream tool did not start")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the client's request did not cancel the upstream call")
	}
}

// TestUpstreamCloseEndsSessions: Host.Close ends each legacy upstream
// session with a DELETE.
func TestUpstreamCloseEndsSessions(t *testing.T) {
	up := newGoUpstream(t, false)
	url, stop := startUpstreamHost(t, []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}})
	if a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"x"}}}`); a.Result.IsError {
		t.Fatalf("up_echo: %s", raw)
	}
	stop()
	if n := up.deletes.Load(); n != 1 {
		t.Fatalf("%d DELETEs after Close, want 1", n)
	}
	stop() // Close is idempotent
}

// TestRelayPlugin: the relay example plugin calls a real upstream through
// aiod:upstream, scoped by the operator's policy to the servers it names: a
// call to a registered server that is not granted is denied naming it.
func TestRelayPlugin(t *testing.T) {
	up, other := newGoUpstream(t, true), newGoUpstream(t, false)
	url, _ := startUpstreamHost(t, []upstream.Server{
		{Name: "up", URL: up.URL, Prefix: "up"},
		{Name: "other", URL: other.URL, Prefix: "other"},
		{Name: "gone", URL: deadURL(t), Prefix: "gone"},
	}, func(c *host.Config) {
		testplugins.Package(t, c.PluginsDir, "plugins/examples/relay", host.AllFamilies(), nil)
		c.PolicyFile = filepath.Join(t.TempDir(), "policy.json")
		if err := os.WriteFile(c.PolicyFile, []byte(`{"plugins":{"relay":{"upstream":{"servers":["up","gone"]}}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"relay_call","arguments":{"server":"up","tool":"echo","arguments":{"text":"through the plugin"}}}}`)
	if a.Error != nil || a.Result.IsError || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "through the plugin" {
		t.Fatalf("relay_call up: %s", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"relay_call","arguments":{"server":"other","tool":"echo","arguments":{"text":"x"}}}}`)
	if a.Error != nil || !a.Result.IsError || !strings.Contains(a.Result.Content[0].Text, `upstream MCP server "other" is not granted`) {
		t.Fatalf("relay_call other: %s, want isError: denied naming \"other\"", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"relay_call","arguments":{"server":"gone","tool":"hello"}}}`)
	if a.Error != nil || !a.Result.IsError || !strings.Contains(a.Result.Content[0].Text, `"gone"`) {
		t.Fatalf("relay_call gone: %s, want isError naming \"gone\"", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"relay_call","arguments":{"server":"up","tool":"missing"}}}`)
	if a.Error != nil || !a.Result.IsError || !strings.Contains(a.Result.Content[0].Text, "missing") {
		t.Fatalf("relay_call up missing: %s, want isError with the upstream's error", raw)
	}
	status, body := post(t, url, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"relay_merge","arguments":{"calls":[`+
		`{"server":"up","tool":"echo","arguments":{"text":"one"}},{"server":"up","tool":"echo","arguments":{"text":"two"}}]}}}`)
	var m struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Structured struct {
				Results []struct {
					Server, Tool, Text string
					IsError            bool
				} `json:"results"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &m) != nil || m.Result.IsError || len(m.Result.Content) != 2 ||
		m.Result.Content[0].Text != "one" || m.Result.Content[1].Text != "two" || len(m.Result.Structured.Results) != 2 || m.Result.Structured.Results[1].Text != "two" {
		t.Fatalf("relay_merge: %d %s", status, body)
	}
}

// TestUpstreamPins: with a pin file, an upstream tool with no pin is not
// listed and its call answers isError; a pin file that does not parse
// refuses to start.
func TestUpstreamPins(t *testing.T) {
	up := newGoUpstream(t, true)
	pins := filepath.Join(t.TempDir(), "pins.json")
	url, _ := startUpstreamHost(t, []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}}, func(c *host.Config) { c.PinUpstreams = pins })
	a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if got := strings.Join(toolNames(t, a.Result.Tools), ","); got != "echo" {
		t.Fatalf("tools/list with no pins: %s, want the plugin's only", raw)
	}
	a, raw = rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"x"}}}`)
	if a.Error != nil || !a.Result.IsError || !strings.Contains(a.Result.Content[0].Text, "withheld") {
		t.Fatalf("up_echo unpinned: %s", raw)
	}
	if err := os.WriteFile(pins, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := host.New(context.Background(), host.Config{CacheDir: "-", PinUpstreams: pins, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "pin file") {
		t.Fatalf("broken pin file: %v, want a start-up error", err)
	}
}
