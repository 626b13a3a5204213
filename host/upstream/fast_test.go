package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seenCall is a tools/call as the upstream received it.
type seenCall struct {
	header http.Header
	meta   map[string]json.RawMessage
}

// TestFastPath: a call to a stateless 2026-07-28 upstream without
// notifications takes the fast path and reaches the upstream with the same
// headers and _meta as the go-sdk client's calls; a call that relays
// progress, and one to a tool that mirrors an argument into a header, take
// the go-sdk path; a fast request the upstream refuses with a 4xx is sent
// again by the go-sdk client, which the session then keeps using.
func TestFastPath(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fast", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "progress", Description: "reports progress", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 1})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "region", Description: "a header-mirrored argument",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.Header.Get("Mcp-Param-Region")}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var (
		mu     sync.Mutex
		calls  []seenCall
		refuse atomic.Int64 // refuse this many tools/call requests with a 400
	)
	up := newHandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if m, _ := peekCall(r); m == "tools/call" {
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(strings.NewReader(string(b)))
				var p struct {
					Params struct {
						Meta map[string]json.RawMessage `json:"_meta"`
					} `json:"params"`
				}
				_ = json.Unmarshal(b, &p)
				mu.Lock()
				calls = append(calls, seenCall{r.Header.Clone(), p.Params.Meta})
				mu.Unlock()
				if refuse.Add(-1) >= 0 {
					http.Error(w, "refused", http.StatusBadRequest)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
	s := newSet(t, Options{}, Server{Name: "f", URL: up.URL, Prefix: "f"})
	u := s.ups[0]
	ctx := context.Background()
	if got := names(s.Tools(ctx)); !reflect.DeepEqual(got, []string{"f_echo", "f_progress", "f_region"}) {
		t.Fatalf("tools = %v", got)
	}
	if r := call(t, s, "f_echo", `{"text":"fast"}`); r.IsError || r.text() != "fast" {
		t.Fatalf("f_echo: %+v", r)
	}
	if n := u.fastCalls.Load(); n != 1 {
		t.Fatalf("%d fast calls after f_echo, want 1", n)
	}
	// Concurrent fast calls share the copied headers and _meta (-race).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("c%d", i)
			raw, err := s.Call(ctx, "f_echo", json.RawMessage(fmt.Sprintf(`{"text":%q}`, text)), nil)
			if err != nil || !strings.Contains(string(raw), `"text":"`+text+`"`) {
				t.Errorf("concurrent f_echo %s: %s, %v", text, raw, err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	calls = calls[:1] // the first fast call is compared below
	mu.Unlock()
	u.fastCalls.Store(1)
	var notes atomic.Int64
	raw, err := s.Call(ctx, "f_progress", json.RawMessage(`{}`), func(string, json.RawMessage) { notes.Add(1) })
	if err != nil || !strings.Contains(string(raw), "done") || notes.Load() != 1 {
		t.Fatalf("f_progress: %s, %v, %d notifications", raw, err, notes.Load())
	}
	if r := call(t, s, "f_region", `{"region":"eu"}`); r.IsError || r.text() != "eu" {
		t.Fatalf("f_region: %+v, want its header-mirrored argument", r)
	}
	if n := u.fastCalls.Load(); n != 1 {
		t.Fatalf("%d fast calls, want 1: progress and header-mirrored calls take the go-sdk path", n)
	}

	// The same headers and _meta on both paths.
	mu.Lock()
	fast, slow := calls[0], calls[1]
	mu.Unlock()
	for _, k := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Method", "User-Agent"} {
		if fast.header.Get(k) != slow.header.Get(k) {
			t.Errorf("header %s: fast %q, go-sdk %q", k, fast.header.Get(k), slow.header.Get(k))
		}
	}
	if fast.header.Get("Mcp-Name") != "echo" || fast.header.Get("Mcp-Protocol-Version") != modern {
		t.Errorf("fast headers %v", fast.header)
	}
	for k, v := range slow.meta {
		if k == "progressToken" || strings.HasSuffix(k, "/logLevel") {
			continue
		}
		if string(fast.meta[k]) != string(v) {
			t.Errorf("_meta %s: fast %s, go-sdk %s", k, fast.meta[k], v)
		}
	}
	if len(fast.meta) != 3 {
		t.Errorf("fast _meta %v, want the three 2026-07-28 keys", fast.meta)
	}

	// A refused fast request: the go-sdk client sends it again.
	refuse.Store(1)
	if r := call(t, s, "f_echo", `{"text":"again"}`); r.IsError || r.text() != "again" {
		t.Fatalf("f_echo after a refusal: %+v", r)
	}
	mu.Lock()
	n := len(calls)
	mu.Unlock()
	if n != 5 || u.fastCalls.Load() != 1 {
		t.Fatalf("%d tools/call requests, %d fast calls: want 5 (the refused one sent again), 1", n, u.fastCalls.Load())
	}
	if r := call(t, s, "f_echo", `{"text":"slow"}`); r.IsError || r.text() != "slow" || u.fastCalls.Load() != 1 {
		t.Fatalf("after a refusal the session keeps the go-sdk path: %+v, %d fast calls", r, u.fastCalls.Load())
	}
}
