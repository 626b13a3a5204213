package toolsearch_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/toolsearch"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/mcp/catalog"
	"github.com/aiodhq/aiod/host/server"
	"github.com/aiodhq/aiod/host/tenant"
)

// syncBuffer is the audit log's file.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []audit.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []audit.Entry
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var e audit.Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// plainCatalog serves the built-ins' definitions and answers every call of
// one of them.
type plainCatalog struct{ snap *mcp.Snapshot }

func (c *plainCatalog) Snapshot() *mcp.Snapshot    { return c.snap }
func (c *plainCatalog) OnSwap(func(*mcp.Snapshot)) {}
func (c *plainCatalog) CallTool(_ context.Context, req mcp.CallRequest) ([]byte, error) {
	if !bytes.Contains(c.snap.ToolsJSON(), []byte(`"name":"`+req.Name+`"`)) {
		return nil, mcp.ErrUnknownTool
	}
	return []byte(`{"content":[{"type":"text","text":"called ` + req.Name + `"}],"isError":false}`), nil
}
func (c *plainCatalog) GetPrompt(context.Context, mcp.CallRequest) ([]byte, error) {
	return nil, mcp.ErrUnknownPrompt
}
func (c *plainCatalog) ReadResource(context.Context, mcp.CallRequest) ([]byte, error) {
	return nil, mcp.ErrUnknownResource
}
func (c *plainCatalog) Complete(context.Context, mcp.CallRequest) ([]byte, error) {
	return nil, mcp.ErrUnknownPrompt
}

func key(k string) string { s := sha256.Sum256([]byte(k)); return caps.KeyLine(s) }

// startServer serves tool search through the real HTTP handler, wired as
// the host wires it (host.provisionProtocol): the tenants' catalogue behind
// tool search, the tenant, audit and filter middleware. Tool search is on
// by default; tenant "alice" may use the sandbox_* and browser_get_* tools
// only, tenant "bob" everything with tool search off.
func startServer(t *testing.T) (url string, log *syncBuffer) {
	t.Helper()
	raw, err := os.ReadFile("testdata/builtins.json")
	if err != nil {
		t.Fatal(err)
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(raw, &defs); err != nil {
		t.Fatal(err)
	}
	var list bytes.Buffer
	list.WriteByte('[')
	for i, d := range defs {
		if i > 0 {
			list.WriteByte(',')
		}
		_ = json.Compact(&list, d)
	}
	list.WriteByte(']')
	inner := &plainCatalog{snap: catalog.NewSnapshot(1, list.Bytes(), nil, nil, nil, nil)}
	off := false
	set := tenant.New(map[string]caps.Tenant{
		"alice": {Keys: []string{key("alice-key")}, Tools: []string{"sandbox_*", "browser_get_*"}},
		"bob":   {Keys: []string{key("bob-key")}, Tools: []string{"*"}, ToolSearch: &off},
	}, "admin-key")
	enabled := func(ctx context.Context, owner string) bool {
		tn := tenant.FromContext(ctx)
		if tn == nil {
			tn = set.ForOwner(owner)
		}
		return tn.ToolSearch(true)
	}
	cat := toolsearch.New(set.Catalog(inner), toolsearch.Options{Enabled: enabled,
		Visible: func(ctx context.Context, name string) bool { return tenant.FromContext(ctx).Allowed(name) },
		Pinned:  []string{"sandbox_execute_bash", "sandbox_execute_code", "browser_navigate"},
		Source:  func(context.Context) []byte { return inner.Snapshot().ToolsJSON() }})
	log = &syncBuffer{}
	alog := audit.New(log, audit.Options{})
	listed := func(ctx context.Context, name string) bool {
		return (name == toolsearch.SearchTool || name == toolsearch.DescribeTool) && enabled(ctx, "")
	}
	m := mcp.NewServer(cat, mcp.Options{Middleware: []mcp.Middleware{set.Middleware(), alog.Middleware(), set.FilterExcept(listed)}})
	srv := server.New(server.Options{MCP: m, Loopback: true, Tenants: set, Audit: alog})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()); m.Close() })
	return "http://" + ln.Addr().String() + "/mcp", log
}

// client speaks one era to the server as one tenant.
type client struct {
	t       *testing.T
	url     string
	key     string
	modern  bool
	session string
	id      int
}

func (c *client) post(body any, hdr map[string]string) (int, []byte, http.Header) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", c.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out, res.Header
}

func newClient(t *testing.T, url, key string, modern bool) *client {
	c := &client{t: t, url: url, key: key, modern: modern}
	if !modern {
		st, body, h := c.post(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}, nil)
		if st != 200 || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %s", st, body)
		}
		c.session = h.Get("Mcp-Session-Id")
		c.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, map[string]string{"Mcp-Session-Id": c.session, "MCP-Protocol-Version": "2025-06-18"})
	}
	return c
}

// rpc sends method with params and returns the result (or fails on an
// error).
func (c *client) rpc(method string, params map[string]any) json.RawMessage {
	c.t.Helper()
	c.id++
	if params == nil {
		params = map[string]any{}
	}
	hdr := map[string]string{}
	if c.modern {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
		hdr["MCP-Protocol-Version"], hdr["Mcp-Method"] = "2026-07-28", method
		if n, ok := params["name"].(string); ok {
			hdr["Mcp-Name"] = n
		}
	} else {
		hdr["Mcp-Session-Id"], hdr["MCP-Protocol-Version"] = c.session, "2025-06-18"
	}
	st, body, _ := c.post(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params}, hdr)
	if i := bytes.Index(body, []byte("data: ")); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(body), []byte("event:")) || bytes.HasPrefix(body, []byte("data: ")) {
		body = bytes.TrimSpace(body[bytes.LastIndex(body, []byte("data: "))+6:])
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Error != nil {
		c.t.Fatalf("%s %v: %d %s", method, params, st, body)
	}
	return r.Result
}

func (c *client) toolNames() []string {
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(c.rpc("tools/list", nil), &r)
	var out []string
	for _, x := range r.Tools {
		out = append(out, x.Name)
	}
	return out
}

func (c *client) callTool(name, args string) (text string, isError bool, structured json.RawMessage) {
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	_ = json.Unmarshal(c.rpc("tools/call", map[string]any{"name": name, "arguments": json.RawMessage(args)}), &r)
	if len(r.Content) > 0 {
		text = r.Content[0].Text
	}
	return text, r.IsError, r.StructuredContent
}

func TestEndToEnd(t *testing.T) {
	for _, era := range []struct {
		name   string
		modern bool
	}{{"legacy", false}, {"2026-07-28", true}} {
		t.Run(era.name, func(t *testing.T) {
			url, log := startServer(t)
			admin := newClient(t, url, "admin-key", era.modern)
			alice := newClient(t, url, "alice-key", era.modern)
			bob := newClient(t, url, "bob-key", era.modern)

			// tools/list: the two tools and the pins the tenant may see
			if got, want := admin.toolNames(), []string{toolsearch.SearchTool, toolsearch.DescribeTool, "sandbox_execute_bash", "sandbox_execute_code", "browser_navigate"}; !slices.Equal(got, want) {
				t.Fatalf("default tenant lists %v, want %v", got, want)
			}
			if got, want := alice.toolNames(), []string{toolsearch.SearchTool, toolsearch.DescribeTool, "sandbox_execute_bash", "sandbox_execute_code"}; !slices.Equal(got, want) {
				t.Fatalf("alice lists %v, want %v", got, want)
			}
			if got := bob.toolNames(); len(got) != 31 || slices.Contains(got, toolsearch.SearchTool) {
				t.Fatalf("bob (tool search off) lists %d tools: %v", len(got), got)
			}

			// search: the tenant finds what it may see, never the rest
			_, isErr, sc := admin.callTool(toolsearch.SearchTool, `{"query":"navigate to a url","limit":3}`)
			if isErr || !strings.Contains(string(sc), `"browser_navigate"`) {
				t.Fatalf("admin search: %s", sc)
			}
			_, isErr, sc = alice.callTool(toolsearch.SearchTool, `{"query":"open a web page url navigate","limit":50}`)
			if isErr || strings.Contains(string(sc), `"browser_navigate"`) || strings.Contains(string(sc), `"browser_click"`) {
				t.Fatalf("alice found a hidden tool: %s", sc)
			}
			_, _, sc = alice.callTool(toolsearch.SearchTool, `{"query":"browser information"}`)
			if !strings.Contains(string(sc), `"browser_get_info"`) {
				t.Fatalf("alice did not find browser_get_info: %s", sc)
			}
			// describe: a hidden name as a missing one
			_, _, hidden := alice.callTool(toolsearch.DescribeTool, `{"names":["browser_click"]}`)
			_, _, missing := alice.callTool(toolsearch.DescribeTool, `{"names":["browser_clack"]}`)
			if strings.ReplaceAll(string(hidden), "browser_click", "X") != strings.ReplaceAll(string(missing), "browser_clack", "X") {
				t.Fatalf("describe of a hidden name %s, of a missing one %s", hidden, missing)
			}
			_, _, desc := admin.callTool(toolsearch.DescribeTool, `{"names":["browser_click"]}`)
			if !strings.Contains(string(desc), `"inputSchema"`) {
				t.Fatalf("admin describe: %s", desc)
			}
			// bad input is a tool error
			if text, isErr, _ := alice.callTool(toolsearch.SearchTool, `{"query":""}`); !isErr || !strings.Contains(text, "query must be") {
				t.Fatalf("empty query: %q %v", text, isErr)
			}
			// calls by name, listed or not
			for _, n := range []string{"sandbox_execute_bash", "browser_click", "sandbox_get_packages"} {
				if text, isErr, _ := admin.callTool(n, `{}`); isErr || text != "called "+n {
					t.Fatalf("call %s: %q", n, text)
				}
			}
			if text, _, _ := alice.callTool("sandbox_get_packages", `{}`); text != "called sandbox_get_packages" {
				t.Fatalf("alice's call of an unlisted tool: %q", text)
			}

			// the audit log records the searches as it records calls
			var searches, calls int
			for _, e := range log.lines() {
				if e.Method != "tools/call" {
					continue
				}
				if e.Tool == toolsearch.SearchTool {
					searches++
					if e.ArgsSHA256 == "" || e.Tenant == "" || (e.Outcome != audit.OK && e.Outcome != audit.ToolError) {
						t.Fatalf("search audited as %+v", e)
					}
				} else {
					calls++
				}
			}
			if searches != 4 || calls < 4 {
				t.Fatalf("audit: %d searches, %d other calls", searches, calls)
			}
		})
	}
}
