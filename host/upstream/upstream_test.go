package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var eras = []struct {
	name      string
	stateless bool
}{{"stateless 2026-07-28", true}, {"session 2025-11-25", false}}

// TestSDKUpstream: a go-sdk server, stateless (2026-07-28) and with sessions
// (initialize): tools listed under the prefix in the upstream's order,
// calls forwarded with the prefix off, results unedited.
func TestSDKUpstream(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			up := newSDKUpstream(t, era.stateless)
			s := newSet(t, Options{}, Server{Name: "sdk", URL: up.url(), Prefix: "p"})
			tools := s.Tools(context.Background())
			// The go-sdk server lists its tools sorted by name.
			if got, want := names(tools), []string{"p_block", "p_echo", "p_progress", "p_rich"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("tools = %v, want %v", got, want)
			}
			for _, tl := range tools {
				var d struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					InputSchema json.RawMessage `json:"inputSchema"`
				}
				if err := json.Unmarshal(tl.Definition, &d); err != nil {
					t.Fatal(err)
				}
				if d.Name != tl.Name || tl.Server != "sdk" || "p_"+tl.UpstreamName != tl.Name || d.Description == "" || len(d.InputSchema) == 0 {
					t.Errorf("tool %s: definition %s, server %q, upstream name %q", tl.Name, tl.Definition, tl.Server, tl.UpstreamName)
				}
			}
			if r := call(t, s, "p_echo", `{"text":"hello"}`); r.IsError || r.text() != "hello" {
				t.Fatalf("p_echo: %+v", r)
			}
			ctx := context.Background()
			raw, err := s.Call(ctx, "p_rich", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := decode(t, raw)
			var meta map[string]any
			_ = json.Unmarshal(r.Meta, &meta)
			if !r.IsError || r.text() != "rich text" || meta["vendor/key"] != "v" {
				t.Fatalf("p_rich: %s", raw)
			}
			var sc any
			_ = json.Unmarshal(r.StructuredContent, &sc)
			if !reflect.DeepEqual(sc, map[string]any{"k": 1.0, "nested": []any{"a", true}}) {
				t.Fatalf("structuredContent = %s", r.StructuredContent)
			}
			// An unknown tool of a live upstream is the upstream's JSON-RPC error.
			_, err = s.Call(ctx, "p_nope", json.RawMessage(`{}`), nil)
			var re *RPCError
			if !errors.As(err, &re) || re.Server != "sdk" || re.Code == 0 {
				t.Fatalf("p_nope: err = %v, want an *RPCError from sdk", err)
			}
			// Deterministic order from one call to the next.
			for range 3 {
				if got := names(s.Tools(ctx)); !reflect.DeepEqual(got, names(tools)) {
					t.Fatalf("order changed: %v", got)
				}
			}
		})
	}
}

// TestUnedited: the answer is the upstream's bytes, even with fields and
// content types the go-sdk does not know, without the envelope of its hop
// (resultType, _meta's serverInfo), on both paths; CallServer (the
// aiod:upstream family) gets the result whole.
func TestUnedited(t *testing.T) {
	const result = `{"zz":"first","content":[{"type":"widget","spin":3},{"text":"t","type":"text","annotations":{"priority":1}}],"structuredContent":[1,2,{"b":null,"a":1e400}],"isError":false,"_meta":{"x/y":{"n":12345678901234567890},"io.modelcontextprotocol/serverInfo":{"name":"raw","version":"1"},"z":[ 1 ]},"resultType":"complete"}`
	const answer = `{"zz":"first","content":[{"type":"widget","spin":3},{"text":"t","type":"text","annotations":{"priority":1}}],"structuredContent":[1,2,{"b":null,"a":1e400}],"isError":false,"_meta":{"x/y":{"n":12345678901234567890},"z":[ 1 ]}}`
	for _, fast := range []bool{false, true} {
		t.Run(pathName(fast), func(t *testing.T) {
			up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
				writeJSON(w, id, result)
			})
			s := newSet(t, Options{}, Server{Name: "raw", URL: up.URL, Prefix: "r"})
			arm(t, s, fast)
			raw, err := s.Call(context.Background(), "r_hello", json.RawMessage(`{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != answer {
				t.Fatalf("answer edited:\n got %s\nwant %s", raw, answer)
			}
			took(t, s, fast)
			raw, err = s.CallServer(context.Background(), "raw", "hello", json.RawMessage(`{}`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != result {
				t.Fatalf("CallServer: result edited:\n got %s\nwant %s", raw, result)
			}
		})
	}
}

// TestNotifications: progress and log messages of the upstream reach notify,
// in both eras.
func TestNotifications(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			up := newSDKUpstream(t, era.stateless)
			s := newSet(t, Options{}, Server{Name: "sdk", URL: up.url(), Prefix: "p"})
			var mu sync.Mutex
			var got []string
			notify := func(method string, params json.RawMessage) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, method+" "+string(params))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			raw, err := s.Call(ctx, "p_progress", json.RawMessage(`{}`), notify)
			if err != nil {
				t.Fatal(err)
			}
			if r := decode(t, raw); r.text() != "done" {
				t.Fatalf("result %s", raw)
			}
			mu.Lock()
			defer mu.Unlock()
			var progress, logs int
			for _, g := range got {
				switch {
				case strings.HasPrefix(g, "notifications/progress ") && strings.Contains(g, `"progressToken":"aiod-`):
					progress++
				case strings.HasPrefix(g, "notifications/message ") && strings.Contains(g, "step "):
					logs++
				}
			}
			if progress != 3 || logs != 3 {
				t.Fatalf("got %d progress and %d log notifications, want 3 and 3: %q", progress, logs, got)
			}
			// Without notify, nothing is asked for and the call still works.
			if r := call(t, s, "p_progress", `{}`); r.text() != "done" {
				t.Fatalf("without notify: %+v", r)
			}
		})
	}
}

// TestCancel: ending the caller's context cancels the upstream call.
func TestCancel(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			for _, fast := range []bool{false, true} {
				t.Run(pathName(fast), func(t *testing.T) { testCancel(t, era.stateless, fast) })
			}
		})
	}
}

func testCancel(t *testing.T, stateless, fast bool) {
	up := newSDKUpstream(t, stateless)
	s := newSet(t, Options{}, Server{Name: "sdk", URL: up.url(), Prefix: "p"})
	arm(t, s, fast)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "p_block", json.RawMessage(`{}`), nil)
		done <- err
	}()
	select {
	case <-up.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream tool did not start")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Call after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Call did not return after cancel")
	}
	// 2026-07-28: closing the call's stream is the cancellation (the
	// go-sdk server does not pass it on to a stateless tool handler).
	// Legacy: notifications/cancelled, which it does pass on.
	want, what := up.closed, "the call's stream was not closed"
	if !stateless {
		want, what = up.cancelled, "the upstream tool's context was not cancelled"
	}
	select {
	case <-want:
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
	if r := call(t, s, "p_echo", `{"text":"after"}`); r.text() != "after" {
		t.Fatalf("after a cancel: %+v", r)
	}
	took(t, s, fast && stateless) // a session (legacy) never takes it
}

// TestDownAndLate: an upstream that does not answer is absent, a call to it
// is an isError result naming it, and it appears once it starts.
func TestDownAndLate(t *testing.T) {
	ok := newSDKUpstream(t, true, "echo")
	addr := freeAddr(t)
	s := newSet(t, Options{},
		Server{Name: "ok", URL: ok.url(), Prefix: "ok"},
		Server{Name: "gone", URL: deadURL(t), Prefix: "gone"},
		Server{Name: "late", URL: "http://" + addr + "/mcp", Prefix: "late"})
	if got := names(s.Tools(context.Background())); !reflect.DeepEqual(got, []string{"ok_echo"}) {
		t.Fatalf("tools = %v, want only ok_echo", got)
	}
	for _, name := range []string{"gone_hello", "late_echo"} {
		r := call(t, s, name, `{}`)
		server, _, _ := strings.Cut(name, "_")
		if !r.IsError || !strings.Contains(r.text(), `"`+server+`"`) {
			t.Fatalf("%s: %+v, want isError naming %q", name, r, server)
		}
	}
	if _, err := s.Call(context.Background(), "nobody_x", nil, nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("nobody_x: %v, want ErrUnknownTool", err)
	}
	healthy(t, s)

	newSDKUpstreamAt(t, addr, true, "echo")
	if got := names(s.Tools(context.Background())); !reflect.DeepEqual(got, []string{"ok_echo", "late_echo"}) {
		t.Fatalf("after the late start: tools = %v", got)
	}
	if r := call(t, s, "late_echo", `{"text":"hi"}`); r.IsError || r.text() != "hi" {
		t.Fatalf("late_echo: %+v", r)
	}
}

// TestSlow: a tools/list that takes longer than the list timeout does not
// hold up Tools, and a later Tools does not wait for it again.
func TestSlow(t *testing.T) {
	ok := newSDKUpstream(t, true, "echo")
	release := make(chan struct{})
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})}
	addr := freeAddr(t)
	serve(t, slow, addr)
	defer close(release)
	s := newSet(t, Options{ListTimeout: 300 * time.Millisecond},
		Server{Name: "slow", URL: "http://" + addr + "/mcp", Prefix: "slow"},
		Server{Name: "ok", URL: ok.url(), Prefix: "ok"})
	start := time.Now()
	got := names(s.Tools(context.Background()))
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("first Tools took %v", d)
	}
	if !reflect.DeepEqual(got, []string{"ok_echo"}) {
		t.Fatalf("tools = %v", got)
	}
	time.Sleep(400 * time.Millisecond) // the refresh has timed out
	start = time.Now()
	got = names(s.Tools(context.Background()))
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Fatalf("second Tools waited %v for the slow upstream", d)
	}
	if !reflect.DeepEqual(got, []string{"ok_echo"}) {
		t.Fatalf("tools = %v", got)
	}
	healthy(t, s)
}

// TestFlood: an upstream that floods SSE events and never answers is
// bounded by the caller's deadline.
func TestFlood(t *testing.T) {
	ok := newSDKUpstream(t, true, "echo")
	flood := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		sseHeaders(w)
		for i := 0; r.Context().Err() == nil; i++ {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"x\",\"progress\":%d}}\n\n", i)
			if i%100 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	})
	for _, fast := range []bool{false, true} {
		t.Run(pathName(fast), func(t *testing.T) { testFlood(t, flood, ok, fast) })
	}
}

func testFlood(t *testing.T, flood *rawUpstream, ok *sdkUpstream, fast bool) {
	s := newSet(t, Options{},
		Server{Name: "flood", URL: flood.URL, Prefix: "flood"},
		Server{Name: "ok", URL: ok.url(), Prefix: "ok"})
	arm(t, s, fast)
	var n sync.Map
	for _, withNotify := range []bool{false, true} {
		var notify func(string, json.RawMessage)
		if withNotify {
			notify = func(string, json.RawMessage) { n.Store("seen", true) }
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		start := time.Now()
		raw, err := s.Call(ctx, "flood_hello", json.RawMessage(`{}`), notify)
		cancel()
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("flooded call took %v", d)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r := decode(t, raw); !r.IsError || !strings.Contains(r.text(), `"flood"`) {
			t.Fatalf("flooded call: %s", raw)
		}
	}
	if _, ok := n.Load("seen"); !ok {
		t.Fatal("the flood's progress never reached notify")
	}
	took(t, s, fast)
	healthy(t, s)
}

// TestMalformed: an answer that is not JSON-RPC is an isError result, and
// the upstream's session survives it.
func TestMalformed(t *testing.T) {
	ok := newSDKUpstream(t, true, "echo")
	for _, tc := range []struct {
		name string
		call func(w http.ResponseWriter, r *http.Request, id json.RawMessage)
	}{
		{"json body", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[`, id)
		}},
		{"not jsonrpc", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"hello":"world"}`)
		}},
		{"sse event", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			sseHeaders(w)
			fmt.Fprint(w, "event: message\ndata: {not json\n\n")
		}},
		{"sse ends without an answer", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			sseHeaders(w)
		}},
	} {
		for _, fast := range []bool{false, true} {
			t.Run(tc.name+"/"+pathName(fast), func(t *testing.T) {
				bad := newRawUpstream(t, tc.call)
				s := newSet(t, Options{},
					Server{Name: "bad", URL: bad.URL, Prefix: "bad"},
					Server{Name: "ok", URL: ok.url(), Prefix: "ok"})
				arm(t, s, fast)
				for range 2 { // the second one on the same session
					r := call(t, s, "bad_hello", `{}`)
					if !r.IsError || !strings.Contains(r.text(), `"bad"`) {
						t.Fatalf("bad_hello: %+v", r)
					}
				}
				took(t, s, fast)
				if got := names(s.Tools(context.Background())); !reflect.DeepEqual(got, []string{"bad_hello", "ok_echo"}) {
					t.Fatalf("tools = %v", got)
				}
				healthy(t, s)
			})
		}
	}
}

// TestMalformedList: an upstream whose tools/list answer is garbage is absent.
func TestMalformedList(t *testing.T) {
	ok := newSDKUpstream(t, true, "echo")
	inner := newRawUpstream(t, nil)
	bad := newHandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && peekMethod(r) == "tools/list" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":`)
			return
		}
		inner.Config.Handler.ServeHTTP(w, r)
	})
	s := newSet(t, Options{},
		Server{Name: "bad", URL: bad.URL, Prefix: "bad"},
		Server{Name: "ok", URL: ok.url(), Prefix: "ok"})
	if got := names(s.Tools(context.Background())); !reflect.DeepEqual(got, []string{"ok_echo"}) {
		t.Fatalf("tools = %v", got)
	}
	healthy(t, s)
}

// TestOversized: an answer over the size limit is cut off with isError.
func TestOversized(t *testing.T) {
	ok := newSDKUpstream(t, true, "echo")
	big := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		name string
		call func(w http.ResponseWriter, r *http.Request, id json.RawMessage)
	}{
		{"json", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			writeJSON(w, id, `{"content":[{"type":"text","text":"`+big+`"}]}`)
		}},
		{"sse", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			sseHeaders(w)
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}}\n\n", id, big)
		}},
		{"sse notification", func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			sseHeaders(w)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"%s\"}}\n\n", big)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", id)
		}},
	} {
		for _, fast := range []bool{false, true} {
			t.Run(tc.name+"/"+pathName(fast), func(t *testing.T) {
				bad := newRawUpstream(t, tc.call)
				s := newSet(t, Options{MaxResultBytes: 64 << 10},
					Server{Name: "big", URL: bad.URL, Prefix: "big"},
					Server{Name: "ok", URL: ok.url(), Prefix: "ok"})
				arm(t, s, fast)
				r := call(t, s, "big_hello", `{}`)
				if !r.IsError || !strings.Contains(r.text(), "size limit") || !strings.Contains(r.text(), `"big"`) {
					t.Fatalf("big_hello: %+v", r)
				}
				took(t, s, fast)
				healthy(t, s)
			})
		}
	}
	// Under the limit passes.
	fine := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		writeJSON(w, id, `{"content":[{"type":"text","text":"`+big+`"}]}`)
	})
	for _, fast := range []bool{false, true} {
		s := newSet(t, Options{MaxResultBytes: 1 << 20}, Server{Name: "fine", URL: fine.URL, Prefix: "fine"})
		arm(t, s, fast)
		if r := call(t, s, "fine_hello", `{}`); r.IsError || r.text() != big {
			t.Fatalf("under the limit (%s): isError %v, %d bytes", pathName(fast), r.IsError, len(r.text()))
		}
		took(t, s, fast)
	}
}

// TestForgottenSession: a session-mode upstream that forgets the session
// (404) gets a new one, and the call goes through.
func TestForgottenSession(t *testing.T) {
	up := newSDKUpstream(t, false, "echo")
	s := newSet(t, Options{}, Server{Name: "sdk", URL: up.url(), Prefix: "p"})
	if r := call(t, s, "p_echo", `{"text":"one"}`); r.text() != "one" {
		t.Fatalf("first call: %+v", r)
	}
	sess, _ := up.lastSess.Load().(string)
	if sess == "" {
		t.Fatal("the upstream saw no session id")
	}
	up.forget.Store(sess, true)
	if r := call(t, s, "p_echo", `{"text":"two"}`); r.IsError || r.text() != "two" {
		t.Fatalf("after the server forgot the session: %+v", r)
	}
	if n := up.n("POST initialize"); n != 2 {
		t.Fatalf("initialize sent %d times, want 2", n)
	}
	s.Close()
	s.Close() // idempotent
	if up.n("DELETE ") < 1 {
		t.Fatal("Close sent no DELETE for the session")
	}
	r := call(t, s, "p_echo", `{"text":"x"}`)
	if !r.IsError {
		t.Fatalf("Call after Close: %+v", r)
	}
	if got := s.Tools(context.Background()); len(got) != 0 {
		t.Fatalf("Tools after Close: %v", names(got))
	}
}

// TestNames: prefixes, servers without one, collisions between upstreams,
// and the caller's reserved names.
func TestNames(t *testing.T) {
	a := newSDKUpstream(t, true, "echo", "only_a")
	b := newSDKUpstream(t, true, "echo", "only_b", "builtin")
	x := newSDKUpstream(t, true, "x_one", "other", "x_two")
	p := newSDKUpstream(t, true, "one")
	s := newSet(t, Options{Exclude: func(n string) bool { return n == "p_builtin" }},
		Server{Name: "a", URL: a.url(), Prefix: "p"},
		Server{Name: "b", URL: b.url(), Prefix: "p"},
		Server{Name: "x", URL: x.url()},
		Server{Name: "y", URL: p.url(), Prefix: "x"}) // x_one again: x keeps it
	want := []string{"p_echo", "p_only_a", "p_only_b", "x_one", "x_two"}
	for range 2 {
		if got := names(s.Tools(context.Background())); !reflect.DeepEqual(got, want) {
			t.Fatalf("tools = %v, want %v", got, want)
		}
	}
	for name, want := range map[string]string{"p_echo": "a", "p_only_b": "b", "x_one": "x", "x_two": "x"} {
		if server, _, ok := s.Route(name); !ok || server != want {
			t.Errorf("Route(%s) = %q, %v; want %q", name, server, ok, want)
		}
	}
	if _, _, ok := s.Route("p_builtin"); ok {
		t.Error("an excluded name routes")
	}
	if r := call(t, s, "x_one", `{}`); r.text() != "x_one" {
		t.Fatalf("x_one went to the wrong server: %+v", r)
	}
	if r := call(t, s, "p_only_b", `{}`); r.text() != "only_b" {
		t.Fatalf("p_only_b: %+v", r)
	}
}

// TestCache: a fresh list costs no round trip; list_changed refreshes it.
func TestCache(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			up := newSDKUpstream(t, era.stateless, "echo")
			s := newSet(t, Options{DefaultTTL: time.Hour}, Server{Name: "sdk", URL: up.url(), Prefix: "p"})
			ctx := context.Background()
			for range 5 {
				if got := names(s.Tools(ctx)); !reflect.DeepEqual(got, []string{"p_echo"}) {
					t.Fatalf("tools = %v", got)
				}
			}
			if n := up.n("POST tools/list"); n != 1 {
				t.Fatalf("tools/list sent %d times for 5 Tools, want 1", n)
			}
			addNamed(up.srv, "added") // the server announces list_changed
			deadline := time.Now().Add(5 * time.Second)
			for {
				got := names(s.Tools(ctx))
				if reflect.DeepEqual(got, []string{"p_added", "p_echo"}) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("list_changed did not refresh the list: %v", got)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestTTL: a 2026 upstream's ttlMs decides how long its list is fresh.
func TestTTL(t *testing.T) {
	var lists atomic.Int64
	inner := newRawUpstream(t, nil)
	up := newHandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if m, id := peekCall(r); m == "tools/list" {
				lists.Add(1)
				writeJSON(w, id, `{"resultType":"complete","tools":[{"name":"hello","inputSchema":{"type":"object"}}],"ttlMs":150,"cacheScope":"public"}`)
				return
			}
		}
		inner.Config.Handler.ServeHTTP(w, r)
	})
	s := newSet(t, Options{DefaultTTL: time.Hour}, Server{Name: "t", URL: up.URL, Prefix: "t"})
	count := func() int64 { return lists.Load() }
	s.Tools(context.Background())
	s.Tools(context.Background())
	if n := count(); n != 1 {
		t.Fatalf("within ttlMs: %d lists", n)
	}
	time.Sleep(250 * time.Millisecond)
	s.Tools(context.Background()) // stale: served, refreshed in the background
	deadline := time.Now().Add(3 * time.Second)
	for count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("a stale list was not refreshed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOnChange: the set reports each change an upstream makes to what it
// publishes once (its list_changed, going down, coming back), and neither
// its first answer, nor refreshes that find the same list, nor a Rebase.
func TestOnChange(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			addr := freeAddr(t)
			up := newSDKUpstreamAt(t, addr, era.stateless, "echo")
			s := newSet(t, Options{DefaultTTL: 50 * time.Millisecond, ListTimeout: 300 * time.Millisecond},
				Server{Name: "sdk", URL: up.url(), Prefix: "p"})
			ctx := context.Background()
			seen := make(chan []string, 16) // what Tools publishes at each change
			s.OnChange(func() { seen <- names(s.Tools(ctx)) })
			next := func(want ...string) {
				t.Helper()
				// Tools keeps the caches refreshing (the ttl is short).
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				deadline := time.After(5 * time.Second)
				for {
					select {
					case got := <-seen:
						if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
							t.Fatalf("a change published %v, want %v", got, want)
						}
						return
					case <-tick.C:
						s.Tools(ctx)
					case <-deadline:
						t.Fatalf("no change reported, want one publishing %v", want)
					}
				}
			}
			if got := names(s.Tools(ctx)); !reflect.DeepEqual(got, []string{"p_echo"}) {
				t.Fatalf("tools = %v", got)
			}
			addNamed(up.srv, "added") // list_changed
			next("p_added", "p_echo")
			// Refreshes of the same list (the ttl runs out) and a rebase
			// report nothing: the next report is the next change.
			for n := up.n("POST tools/list"); up.n("POST tools/list") < n+3; {
				time.Sleep(20 * time.Millisecond)
				s.Tools(ctx)
			}
			s.Rebase()
			up.CloseClientConnections()
			up.Close()
			next() // down: absent
			newSDKUpstreamAt(t, addr, era.stateless, "echo")
			next("p_echo") // back, with its tools of a fresh start
			select {
			case got := <-seen:
				t.Fatalf("one more change reported: %v", got)
			default:
			}
		})
	}
}

func pathName(fast bool) string {
	if fast {
		return "fast path"
	}
	return "go-sdk path"
}

// arm lists first when fast: the fast path needs the cached list (a call
// without one goes through the go-sdk client).
func arm(t *testing.T, s *Set, fast bool) {
	t.Helper()
	if fast {
		s.Tools(context.Background())
	}
}

// took checks whether the first server's calls took the fast path.
func took(t *testing.T, s *Set, fast bool) {
	t.Helper()
	if n := s.ups[0].fastCalls.Load(); (n > 0) != fast {
		t.Fatalf("%d fast calls to %q, want fast path %v", n, s.ups[0].srv.Name, fast)
	}
}

// heldWriter buffers an answer until the handler returns.
type heldWriter struct {
	h    http.Header
	code int
	buf  strings.Builder
}

func (w *heldWriter) Header() http.Header         { return w.h }
func (w *heldWriter) WriteHeader(code int)        { w.code = code }
func (w *heldWriter) Write(b []byte) (int, error) { return w.buf.WriteString(string(b)) }
func (w *heldWriter) Flush()                      {}

// TestChangeDuringRefresh: a list_changed that arrives while a refresh's
// answer is on its way (computed before the change) refreshes once more,
// so the change is not lost until the ttl runs out.
func TestChangeDuringRefresh(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "held", Version: "1"}, nil)
			addNamed(srv, "echo")
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: era.stateless})
			var hold atomic.Bool
			held, release := make(chan struct{}, 1), make(chan struct{})
			up := newHandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || peekMethod(r) != "tools/list" || !hold.CompareAndSwap(true, false) {
					h.ServeHTTP(w, r)
					return
				}
				hw := &heldWriter{h: w.Header(), code: 200}
				h.ServeHTTP(hw, r) // the answer is computed now
				held <- struct{}{}
				<-release // and delivered after the change
				w.WriteHeader(hw.code)
				io.WriteString(w, hw.buf.String())
			})
			s := newSet(t, Options{DefaultTTL: time.Hour}, Server{Name: "h", URL: up.URL, Prefix: "h"})
			ctx := context.Background()
			if got := names(s.Tools(ctx)); !reflect.DeepEqual(got, []string{"h_echo"}) {
				t.Fatalf("tools = %v", got)
			}
			hold.Store(true)
			addNamed(srv, "a") // list_changed: a refresh, whose answer is held
			select {
			case <-held:
			case <-time.After(5 * time.Second):
				t.Fatal("no refresh after list_changed")
			}
			addNamed(srv, "b") // list_changed while that answer is on its way
			u := s.ups[0]
			for arrived, deadline := false, time.Now().Add(5*time.Second); !arrived; {
				u.mu.Lock()
				arrived = u.again
				u.mu.Unlock()
				if time.Now().After(deadline) {
					t.Fatal("the second list_changed did not arrive during the refresh")
				}
				time.Sleep(5 * time.Millisecond)
			}
			close(release)
			deadline := time.Now().Add(5 * time.Second)
			for {
				got := names(s.Tools(ctx))
				if reflect.DeepEqual(got, []string{"h_a", "h_b", "h_echo"}) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("tools = %v: the change during the refresh was lost", got)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
