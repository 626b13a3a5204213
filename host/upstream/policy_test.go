package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testca"
)

// headerLog records one header of every request a server gets.
type headerLog struct {
	mu   sync.Mutex
	seen []string // "METHOD value"
}

func (l *headerLog) add(r *http.Request, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Method+" "+r.Header.Get(name))
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// newTLSUpstream is a go-sdk server (stateful: initialize, a GET stream,
// a DELETE at the end) over HTTPS with a certificate of ca, recording the
// X-Api-Key header of every request.
func newTLSUpstream(t *testing.T, ca testca.CA, log *headerLog) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tls-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r, "X-Api-Key")
		h.ServeHTTP(w, r)
	}))
	srv.TLS = ca.ServerConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// policyServer parses one policy entry as aiod does at start.
func policyServer(t *testing.T, entry string, env map[string]string) (Server, error) {
	t.Helper()
	es, err := caps.ParseUpstreams([]byte(`{"srv":`+entry+`}`), nil)
	if err != nil {
		t.Fatalf("policy entry %s: %v", entry, err)
	}
	return FromPolicy(es[0], lookupIn(env))
}

// TestPolicyHTTPSHeaders: a server the policy names over HTTPS, verified
// with the test's CA from ca_file, gets the configured header (its
// ${VAR} taken from the environment) on every request: the handshake,
// tools/list, tools/call, the GET stream and the closing DELETE. The
// secret is in no log line, and Server prints without it.
func TestPolicyHTTPSHeaders(t *testing.T) {
	ca := testca.New(t)
	var seen headerLog
	up := newTLSUpstream(t, ca, &seen)
	const secret = "s3cr3t-value-1234"
	srv, err := policyServer(t, `{"url":"`+up.URL+`/mcp","prefix":"tls","ca_file":"`+ca.PEMFile+`","headers":{"X-Api-Key":"key ${UP_KEY}"}}`,
		map[string]string{"UP_KEY": secret})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(srv.String(), secret) || strings.Contains(srv.String(), "key ") {
		t.Fatalf("Server prints its headers: %s", srv)
	}
	// a second server whose calls fail, so that errors are logged
	bad, err := policyServer(t, `{"url":"https://127.0.0.1:1/mcp","prefix":"bad","headers":{"X-Api-Key":"${UP_KEY}"}}`,
		map[string]string{"UP_KEY": secret})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	s := New([]Server{srv, bad}, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), ListTimeout: 5 * time.Second})
	tools := s.Tools(context.Background())
	if got := strings.Join(names(tools), ","); got != "tls_echo" {
		t.Fatalf("tools = %s; logs:\n%s", got, logs.String())
	}
	if r := call(t, s, "tls_echo", `{"text":"over tls"}`); r.IsError || r.text() != "over tls" {
		t.Fatalf("call: %+v", r)
	}
	if r := call(t, s, "bad_x", `{}`); !r.IsError {
		t.Fatalf("call to the dead server: %+v", r)
	}
	s.Close()
	got := seen.all()
	methods := map[string]bool{}
	for _, line := range got {
		m, v, _ := strings.Cut(line, " ")
		methods[m] = true
		if v != "key "+secret {
			t.Errorf("a %s request carried X-Api-Key %q", m, v)
		}
	}
	for _, m := range []string{"POST", "GET", "DELETE"} {
		if !methods[m] {
			t.Errorf("no %s request seen (%v)", m, got)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("a log line holds the secret:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "127.0.0.1:1/mcp") {
		t.Fatalf("the dead server's failure was not logged:\n%s", logs.String())
	}
}

// TestPolicyHTTPSUntrusted: without the CA (the system's roots) the
// server's certificate is refused: no tools, and a call is isError naming
// the server; a CA file without a certificate refuses to start.
func TestPolicyHTTPSUntrusted(t *testing.T) {
	ca := testca.New(t)
	up := newTLSUpstream(t, ca, &headerLog{})
	srv, err := policyServer(t, `{"url":"`+up.URL+`/mcp","prefix":"tls"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSet(t, Options{}, srv)
	if tools := s.Tools(context.Background()); len(tools) != 0 {
		t.Fatalf("tools from a server with an unverified certificate: %v", names(tools))
	}
	r := call(t, s, "tls_echo", `{"text":"x"}`)
	if !r.IsError || !strings.Contains(r.text(), `"srv"`) || !strings.Contains(r.text(), "certificate") {
		t.Fatalf("call: %+v", r)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, []byte("not a certificate"), 0o600)
	if _, err := policyServer(t, `{"url":"`+up.URL+`/mcp","ca_file":"`+empty+`"}`, nil); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("empty CA file: %v", err)
	}
	if _, err := policyServer(t, `{"url":"`+up.URL+`/mcp","ca_file":"/nonexistent/ca.pem"}`, nil); err == nil || !strings.Contains(err.Error(), "ca_file") {
		t.Fatalf("missing CA file: %v", err)
	}
}

// TestPolicyHTTPSRedirect: an HTTPS server the policy names that answers a
// redirect (to another loopback server, which must never be reached) is
// not followed: tools/list finds nothing, a call is the redirect's
// isError, and the target sees no request.
func TestPolicyHTTPSRedirect(t *testing.T) {
	ca := testca.New(t)
	target := newRecorder(t, "")
	red := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	red.TLS = ca.ServerConfig()
	red.StartTLS()
	t.Cleanup(red.Close)
	srv, err := policyServer(t, `{"url":"`+red.URL+`/mcp","prefix":"r","ca_file":"`+ca.PEMFile+`","headers":{"Authorization":"Bearer ${TOK}"}}`, map[string]string{"TOK": "t"})
	if err != nil {
		t.Fatal(err)
	}
	s := newSet(t, Options{}, srv)
	if tools := s.Tools(context.Background()); len(tools) != 0 {
		t.Fatalf("tools through a redirect: %v", names(tools))
	}
	r := call(t, s, "r_echo", `{}`)
	if !r.IsError || !strings.Contains(r.text(), "HTTP 307") {
		t.Fatalf("call: %+v", r)
	}
	if n := target.hits(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}

// TestPolicyHeaderVariables: a variable that is not set is an error
// naming it (and no value); a value with a line break is refused naming
// the variable; "$$" is a dollar sign.
func TestPolicyHeaderVariables(t *testing.T) {
	_, err := policyServer(t, `{"url":"https://example.invalid/mcp","headers":{"Authorization":"Bearer ${MISSING_TOKEN}","X-Other":"${SET}"}}`,
		map[string]string{"SET": "visible-secret"})
	if err == nil || !strings.Contains(err.Error(), "MISSING_TOKEN") || !strings.Contains(err.Error(), `"srv"`) || strings.Contains(err.Error(), "visible-secret") {
		t.Fatalf("missing variable: %v", err)
	}
	_, err = policyServer(t, `{"url":"https://example.invalid/mcp","headers":{"X-K":"${NL}"}}`, map[string]string{"NL": "a\r\nX-Injected: 1"})
	if err == nil || !strings.Contains(err.Error(), "NL") || strings.Contains(err.Error(), "Injected") {
		t.Fatalf("value with a line break: %v", err)
	}
	srv, err := policyServer(t, `{"url":"https://example.invalid/mcp","headers":{"X-K":"$$${V}$x"}}`, map[string]string{"V": "v"})
	if err != nil || srv.Headers.Get("X-K") != "$v$x" {
		t.Fatalf("expansion: %v %q", err, srv.Headers.Get("X-K"))
	}
}
