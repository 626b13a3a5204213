package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---- a real go-sdk server, in process ----

type echoIn struct {
	Text string `json:"text"`
}

// sdkUpstream is a go-sdk MCP server over Streamable HTTP (SSE answers, so
// it can stream progress), wrapped by a handler that counts requests and can
// forget sessions.
type sdkUpstream struct {
	*httptest.Server
	srv       *mcp.Server
	counts    sync.Map // "METHOD rpc-method" -> *atomic.Int64
	forget    sync.Map // session id -> true: answered 404
	lastSess  atomic.Value
	started   chan struct{} // the block tool began
	cancelled chan struct{} // the block tool saw its context end
	closed    chan struct{} // the client closed a tools/call POST
}

func newSDKUpstream(t testing.TB, stateless bool, tools ...string) *sdkUpstream {
	t.Helper()
	return newSDKUpstreamAt(t, "", stateless, tools...)
}

// newSDKUpstreamAt listens on addr ("": any free port).
func newSDKUpstreamAt(t testing.TB, addr string, stateless bool, tools ...string) *sdkUpstream {
	t.Helper()
	u := &sdkUpstream{started: make(chan struct{}, 16), cancelled: make(chan struct{}, 16), closed: make(chan struct{}, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-upstream", Version: "1"}, nil)
	if len(tools) == 0 {
		tools = []string{"echo", "rich", "progress", "block"}
	}
	for _, name := range tools {
		switch name {
		case "echo":
			mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
				func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
				})
		case "rich":
			s.AddTool(&mcp.Tool{Name: "rich", Description: "every result field", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{
						Content:           []mcp.Content{&mcp.TextContent{Text: "rich text"}},
						StructuredContent: map[string]any{"k": 1, "nested": []any{"a", true}},
						IsError:           true,
						Meta:              mcp.Meta{"vendor/key": "v"},
					}, nil
				})
		case "progress":
			s.AddTool(&mcp.Tool{Name: "progress", Description: "reports progress and logs", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					tok := req.Params.GetProgressToken()
					for i := 1; i <= 3; i++ {
						if tok != nil {
							_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3})
						}
						//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but live in the legacy eras aiod relays
						_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("step %d", i)})
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
				})
		case "block":
			s.AddTool(&mcp.Tool{Name: "block", Description: "waits for cancellation", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					u.started <- struct{}{}
					select {
					case <-ctx.Done():
						u.cancelled <- struct{}{}
					case <-time.After(5 * time.Second):
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "unblocked"}}}, nil
				})
		default:
			addNamed(s, name)
		}
	}
	u.srv = s
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := ""
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(b, &m)
			method = m.Method
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			if method == "tools/call" {
				served := make(chan struct{})
				defer close(served)
				go func() {
					select {
					case <-r.Context().Done():
						u.closed <- struct{}{}
					case <-served:
					}
				}()
			}
		}
		u.count(r.Method + " " + method)
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			u.lastSess.Store(id)
			if _, gone := u.forget.Load(id); gone {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		u.Server.Listener.Close()
		u.Server.Listener = l
	}
	u.Server.Start()
	t.Cleanup(func() { u.Server.CloseClientConnections(); u.Server.Close() })
	return u
}

// newHandlerServer serves h on loopback.
func newHandlerServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.CloseClientConnections(); s.Close() })
	return s
}

// serve runs srv on addr until the test ends.
func serve(t *testing.T, srv *http.Server, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// peekCall reads a POST's JSON-RPC method and id, leaving the body readable.
func peekCall(r *http.Request) (string, json.RawMessage) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(b)))
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Method, m.ID
}

func peekMethod(r *http.Request) string { m, _ := peekCall(r); return m }

// addNamed adds a tool that answers its own name.
func addNamed(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, Description: "answers " + name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
}

func (u *sdkUpstream) count(key string) {
	v, _ := u.counts.LoadOrStore(key, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (u *sdkUpstream) n(key string) int64 {
	v, ok := u.counts.Load(key)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func (u *sdkUpstream) url() string { return u.URL + "/mcp" }

// ---- small upstreams that misbehave ----

// rawUpstream speaks just enough 2026-07-28 to be discovered and listed
// (server/discover, tools/list with one tool "hello"), and answers tools/call
// with call.
type rawUpstream struct {
	*httptest.Server
	calls atomic.Int64
}

func newRawUpstream(t *testing.T, call func(w http.ResponseWriter, r *http.Request, id json.RawMessage)) *rawUpstream {
	t.Helper()
	u := &rawUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		switch m.Method {
		case "server/discover":
			writeJSON(w, m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw","version":"1"}}}`)
		case "tools/list":
			writeJSON(w, m.ID, `{"resultType":"complete","tools":[{"name":"hello","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"}`)
		case "tools/call":
			u.calls.Add(1)
			call(w, r, m.ID)
		default:
			if len(m.ID) == 0 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.WriteHeader(http.StatusNotFound)
			writeBody(w, m.ID, `"error":{"code":-32601,"message":"method not found"}`)
		}
	}))
	t.Cleanup(func() { u.Server.CloseClientConnections(); u.Server.Close() })
	return u
}

func writeJSON(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, id, `"result":`+result)
}

func writeBody(w io.Writer, id json.RawMessage, member string) {
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, id, member)
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
}

// deadURL is a loopback URL on which nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	return "http://" + freeAddr(t) + "/mcp"
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// ---- the Set under test ----

func newSet(t testing.TB, opts Options, servers ...Server) *Set {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	s := New(servers, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// result is the decoded CallToolResult, for assertions.
type result struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta"`
}

func decode(t *testing.T, raw json.RawMessage) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

func (r result) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func call(t *testing.T, s *Set, name, args string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := s.Call(ctx, name, json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("Call(%s): %v", name, err)
	}
	return decode(t, raw)
}

// healthy checks that the set still serves the healthy upstream (published
// with prefix "ok").
func healthy(t *testing.T, s *Set) {
	t.Helper()
	found := false
	for _, tl := range s.Tools(context.Background()) {
		found = found || tl.Name == "ok_echo"
	}
	if !found {
		t.Fatalf("the healthy upstream's ok_echo is not listed")
	}
	if r := call(t, s, "ok_echo", `{"text":"still here"}`); r.IsError || r.text() != "still here" {
		t.Fatalf("healthy upstream: %+v", r)
	}
}
