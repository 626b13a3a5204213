package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is a real go-sdk MCP server (tool "echo") that counts every
// request reaching it: a redirect aiod followed would land here and be
// answered.
type recorder struct {
	*sdkUpstream
}

func newRecorder(t *testing.T, addr string) recorder {
	t.Helper()
	return recorder{newSDKUpstreamAt(t, addr, false, "echo")}
}

// hits is every request the recorder saw, whatever its method.
func (r recorder) hits() int64 {
	var n int64
	r.counts.Range(func(_, v any) bool { n += v.(*atomic.Int64).Load(); return true })
	return n
}

// elsewhere is the name a redirect uses for a host that is not loopback.
// The test's transport dials it to a recorder on another loopback address,
// so a request sent there would arrive (and nothing leaves the machine).
const elsewhere = "upstream-elsewhere.test"

// redirectingUpstream is a real go-sdk server (tool "echo") at /mcp that
// answers the requests match picks with status and Location: target. The
// same handler also serves /same, counting what arrives there.
type redirectingUpstream struct {
	url        string
	redirected atomic.Int64 // requests answered with the redirect
	same       atomic.Int64 // requests that reached /same
	mu         sync.Mutex
	what       []string // "METHOD rpc-method" of each redirected request
}

func newRedirectingUpstream(t *testing.T, stateless bool, status int, target string, match func(r *http.Request, method string) bool) *redirectingUpstream {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "redirecting", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	u := &redirectingUpstream{}
	hs := newHandlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		method := ""
		if r.Method == http.MethodPost {
			method = peekMethod(r)
		}
		if r.URL.Path == "/same" {
			u.same.Add(1)
		} else if match(r, method) {
			u.redirected.Add(1)
			u.mu.Lock()
			u.what = append(u.what, r.Method+" "+method)
			u.mu.Unlock()
			w.Header().Set("Location", target)
			w.WriteHeader(status)
			fmt.Fprintf(w, "moved to %s\n", target)
			return
		}
		h.ServeHTTP(w, r)
	})
	u.url = hs.URL + "/mcp"
	return u
}

// dialing returns a transport that dials elsewhere's port to addr, every
// other address as it is.
func dialing(elsewherePort, addr string) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	var d net.Dialer
	t.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if a == net.JoinHostPort(elsewhere, elsewherePort) {
			a = addr
		}
		return d.DialContext(ctx, network, a)
	}
	return t
}

// syncBuffer is a log sink safe for the set's background refreshes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRedirectsNotFollowed: an upstream that answers tools/list, its
// handshake (server/discover, initialize) or tools/call with a redirect (301, 302, 303, 307, 308) to a host that is not
// loopback, to another loopback address, or to another path of its own
// origin: aiod sends nothing there, on the go-sdk client's path (both eras)
// and on the fast path. A redirected call is an isError result naming the
// server and the status; a redirected list leaves the server absent, and the
// log names the status.
func TestRedirectsNotFollowed(t *testing.T) {
	far := newRecorder(t, "127.0.0.3:0") // reached as elsewhere
	_, farPort, _ := net.SplitHostPort(far.Listener.Addr().String())
	near := newRecorder(t, "127.0.0.2:0")
	transport := dialing(farPort, far.Listener.Addr().String())
	// The dialer is live: a request to elsewhere reaches far.
	if resp, err := (&http.Client{Transport: transport}).Get("http://" + net.JoinHostPort(elsewhere, farPort) + "/mcp"); err != nil {
		t.Fatalf("the test's transport does not reach %s: %v", elsewhere, err)
	} else {
		resp.Body.Close()
	}
	if far.hits() == 0 {
		t.Fatal("the recorder behind elsewhere saw nothing of a direct request")
	}
	farBase := far.hits()

	targets := []struct {
		name     string
		location func() string
		seen     func(u *redirectingUpstream) int64
	}{
		{"not loopback", func() string { return "http://" + net.JoinHostPort(elsewhere, farPort) + "/mcp" },
			func(*redirectingUpstream) int64 { return far.hits() - farBase }},
		{"another loopback address", func() string { return near.url() },
			func(*redirectingUpstream) int64 { return near.hits() }},
		{"same origin", func() string { return "/same" },
			func(u *redirectingUpstream) int64 { return u.same.Load() }},
	}
	type path struct {
		name      string
		stateless bool
		fast      bool // a 2026-07-28 call without notify: the fast path
		notify    bool // relaying notifications: the go-sdk client's path
	}
	listPaths := []path{{name: "legacy"}, {name: "2026-07-28", stateless: true}}
	callPaths := []path{{name: "legacy go-sdk path"}, {name: "2026-07-28 go-sdk path", stateless: true, notify: true}, {name: "2026-07-28 fast path", stateless: true, fast: true}}

	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, tg := range targets {
			for _, p := range listPaths {
				for _, op := range []string{"tools-list", "handshake"} {
					t.Run(fmt.Sprintf("%d/%s/%s/%s", status, tg.name, op, p.name), func(t *testing.T) {
						up := newRedirectingUpstream(t, p.stateless, status, tg.location(), func(_ *http.Request, m string) bool {
							if op == "handshake" {
								return m == "server/discover" || m == "initialize"
							}
							return m == "tools/list"
						})
						var logs syncBuffer
						s := newSet(t, Options{Transport: transport, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, Server{Name: "r", URL: up.url, Prefix: "r"})
						if got := names(s.Tools(context.Background())); len(got) != 0 {
							t.Fatalf("tools %v, want none: the list was redirected", got)
						}
						if st := s.Status(context.Background()); st[0].Reachable {
							t.Fatalf("status %+v, want unreachable", st[0])
						}
						if up.redirected.Load() == 0 {
							t.Fatal("the upstream redirected nothing: the test did not test")
						}
						if n := tg.seen(up); n != 0 {
							t.Fatalf("%d requests reached the redirect's target", n)
						}
						want := fmt.Sprintf(`upstream MCP server \"r\" answered HTTP %d`, status)
						if !strings.Contains(logs.String(), want) {
							t.Fatalf("log does not name the server and the status (%s):\n%s", want, logs.String())
						}
					})
				}
			}
			for _, p := range callPaths {
				t.Run(fmt.Sprintf("%d/%s/tools-call/%s", status, tg.name, p.name), func(t *testing.T) {
					up := newRedirectingUpstream(t, p.stateless, status, tg.location(), func(_ *http.Request, m string) bool { return m == "tools/call" })
					s := newSet(t, Options{Transport: transport}, Server{Name: "r", URL: up.url, Prefix: "r"})
					if got := names(s.Tools(context.Background())); len(got) != 1 || got[0] != "r_echo" {
						t.Fatalf("tools %v, want r_echo", got)
					}
					var notify func(string, json.RawMessage)
					if p.notify {
						notify = func(string, json.RawMessage) {}
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					raw, err := s.Call(ctx, "r_echo", json.RawMessage(`{"text":"secret argument"}`), notify)
					if err != nil {
						t.Fatalf("Call: %v", err)
					}
					r := decode(t, raw)
					want := fmt.Sprintf(`upstream MCP server "r" answered HTTP %d`, status)
					if !r.IsError || !strings.Contains(r.text(), want) {
						t.Fatalf("result %s, want an isError result containing %s", raw, want)
					}
					took(t, s, p.fast)
					if up.redirected.Load() == 0 {
						t.Fatal("the upstream redirected nothing: the test did not test")
					}
					if n := tg.seen(up); n != 0 {
						t.Fatalf("%d requests reached the redirect's target", n)
					}
					// The session still serves: a redirect fails its call only.
					if r := call(t, s, "r_echo", `{"text":"again"}`); !r.IsError || !strings.Contains(r.text(), want) {
						t.Fatalf("second call: %+v", r)
					}
					if n := tg.seen(up); n != 0 {
						t.Fatalf("%d requests reached the redirect's target", n)
					}
				})
			}
		}
	}
}

// TestRedirectedStreamAndDelete: a legacy upstream that redirects its
// standalone GET stream and the DELETE ending its session (to a host that is
// not loopback): nothing reaches the target, the GET's redirect is logged
// naming the server and the status, and the calls still work (the session
// goes on without its stream).
func TestRedirectedStreamAndDelete(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			far := newRecorder(t, "127.0.0.3:0")
			_, farPort, _ := net.SplitHostPort(far.Listener.Addr().String())
			up := newRedirectingUpstream(t, false, status, "http://"+net.JoinHostPort(elsewhere, farPort)+"/mcp",
				func(r *http.Request, _ string) bool {
					return r.Method == http.MethodGet || r.Method == http.MethodDelete
				})
			var logs syncBuffer
			s := New([]Server{{Name: "r", URL: up.url, Prefix: "r"}}, Options{Transport: dialing(farPort, far.Listener.Addr().String()),
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if got := names(s.Tools(context.Background())); len(got) != 1 {
				t.Fatalf("tools %v, want r_echo", got)
			}
			if r := call(t, s, "r_echo", `{"text":"hi"}`); r.IsError || r.text() != "hi" {
				t.Fatalf("r_echo: %+v", r)
			}
			s.Close()
			up.mu.Lock()
			what := strings.Join(up.what, ",")
			up.mu.Unlock()
			if !strings.Contains(what, "GET ") || !strings.Contains(what, "DELETE ") {
				t.Fatalf("redirected %q, want the GET stream and the DELETE: the test did not test", what)
			}
			if n := far.hits(); n != 0 {
				t.Fatalf("%d requests reached the redirect's target", n)
			}
			if want := fmt.Sprintf(`upstream MCP server \"r\" answered HTTP %d`, status); !strings.Contains(logs.String(), want) {
				t.Fatalf("log does not name the server and the status of the GET (%s):\n%s", want, logs.String())
			}
		})
	}
}
