package host_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testca"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
)

// newTLSGoUpstream is a go-sdk server (tool "echo") over HTTPS with a
// certificate of ca; it answers 401 to a request without the expected
// X-Api-Key and counts the ones it served.
func newTLSGoUpstream(t *testing.T, ca testca.CA, key string, served *atomic.Int64) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tls-upstream", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "tls:" + in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != key {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		served.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.TLS = ca.ServerConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestPolicyUpstreamHTTPS: an HTTPS server named in the policy's
// "upstreams" (the test's CA in ca_file, a header from ${VAR}) is
// published to the tenant its "tenants" names and to no other, even one
// whose own "upstreams" is "*"; its calls reach it with the header. A
// variable that is not set, or a server named both by EXTRA_MCP_SERVERS
// and the policy, refuses to start, naming it.
func TestPolicyUpstreamHTTPS(t *testing.T) {
	ca := testca.New(t)
	var served atomic.Int64
	const secret = "upstream-key-42"
	up := newTLSGoUpstream(t, ca, secret, &served)
	t.Setenv("AIOD_TEST_UPSTREAM_KEY", secret)
	policy := `{"tenants":{
	  "alice":{"keys":["` + keyLine(aliceKey) + `"],"tools":["*"],"upstreams":["*"]},
	  "bob":{"keys":["` + keyLine(bobKey) + `"],"tools":["*"],"upstreams":["*"]}},
	  "upstreams":{"sec":{"url":"` + up.URL + `/mcp","prefix":"sec","ca_file":"` + ca.PEMFile + `",
	    "headers":{"X-Api-Key":"${AIOD_TEST_UPSTREAM_KEY}"},"tenants":["alice"]}}}`
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	url := startHost(t, host.Config{PluginsDir: plugins, PolicyFile: writePolicy(t, policy), UpstreamListTimeout: 5e9}) + "/mcp"

	alice := tenantTools(t, do(t, "POST", url, aliceKey, listTools, nil).body)
	if !slices.Contains(alice, "sec_echo") {
		t.Fatalf("alice's tools: %v", alice)
	}
	r := do(t, "POST", url, aliceKey, call("sec_echo", `{"text":"hi"}`), nil)
	if !strings.Contains(r.body, "tls:hi") || strings.Contains(r.body, `"isError":true`) {
		t.Fatalf("alice's call: %s", r.body)
	}
	bob := tenantTools(t, do(t, "POST", url, bobKey, listTools, nil).body)
	if slices.Contains(bob, "sec_echo") || !slices.Contains(bob, "echo") {
		t.Fatalf("bob's tools: %v", bob)
	}
	before := served.Load()
	if r := do(t, "POST", url, bobKey, call("sec_echo", `{"text":"hi"}`), nil); strings.Contains(r.body, "tls:hi") {
		t.Fatalf("bob's call went through: %s", r.body)
	}
	if served.Load() != before {
		t.Fatal("bob's call reached the upstream")
	}

	// refusals at start
	missing := strings.Replace(policy, "AIOD_TEST_UPSTREAM_KEY", "AIOD_TEST_UNSET_VARIABLE", 1)
	_, err := host.New(context.Background(), host.Config{PluginsDir: plugins, PolicyFile: writePolicy(t, missing), CacheDir: testplugins.CacheDir()})
	if err == nil || !strings.Contains(err.Error(), "AIOD_TEST_UNSET_VARIABLE") || !strings.Contains(err.Error(), `"sec"`) {
		t.Fatalf("an unset variable: %v", err)
	}
	_, err = host.New(context.Background(), host.Config{PluginsDir: plugins, PolicyFile: writePolicy(t, policy), CacheDir: testplugins.CacheDir(),
		Upstreams: []upstream.Server{{Name: "sec", URL: "http://127.0.0.1:1/mcp"}}})
	if err == nil || !strings.Contains(err.Error(), `"sec" is named both`) {
		t.Fatalf("a name in both: %v", err)
	}
	_, err = host.New(context.Background(), host.Config{PluginsDir: plugins, CacheDir: testplugins.CacheDir(),
		PolicyFile: writePolicy(t, `{"upstreams":{"far":{"url":"http://mcp.example.com/mcp"}}}`)})
	if err == nil || !strings.Contains(err.Error(), `server "far"`) || !strings.Contains(err.Error(), "plain http is accepted only on 127.0.0.1") {
		t.Fatalf("plain http off loopback: %v", err)
	}
}

// TestPolicyUpstreamSSE: a server of the policy that speaks only the
// 2024-11-05 HTTP+SSE transport (the go-sdk's SSE handler) is found (a
// modern POST refused, then the GET handshake) and its tools served
// through aiod; the same server in EXTRA_MCP_SERVERS is not tried that way
// (seed 000's rules): it is absent.
func TestPolicyUpstreamSSE(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "sse-only", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sse:" + in.Text}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { up.CloseClientConnections(); up.Close() })
	policy := `{"upstreams":{"old":{"url":"` + up.URL + `/sse","prefix":"old"}}}`
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	url := startHost(t, host.Config{PluginsDir: plugins, PolicyFile: writePolicy(t, policy), UpstreamListTimeout: 5e9,
		Upstreams: []upstream.Server{{Name: "envold", URL: up.URL + "/sse", Prefix: "envold"}}})
	a, _ := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	names := toolNames(t, a.Result.Tools)
	if !slices.Contains(names, "old_echo") || slices.Contains(names, "envold_echo") {
		t.Fatalf("tools: %v", names)
	}
	a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"old_echo","arguments":{"text":"through aiod"}}}`)
	if a.Result.IsError || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "sse:through aiod" {
		t.Fatalf("call: %s", raw)
	}
}

// TestPolicyUpstreamReload: a reload re-reads an entry's "tenants" (a
// tenant added there sees the server); a reload whose policy no longer
// names the server (which stays registered until the next start) refuses
// it to every tenant, rather than opening it to all.
func TestPolicyUpstreamReload(t *testing.T) {
	up := newGoUpstream(t, true)
	tenants := `"tenants":{
	  "alice":{"keys":["` + keyLine(aliceKey) + `"],"tools":["*"],"upstreams":["*"]},
	  "bob":{"keys":["` + keyLine(bobKey) + `"],"tools":["*"],"upstreams":["*"]}}`
	policyFile := writePolicy(t, `{`+tenants+`,"upstreams":{"up":{"url":"`+up.URL+`","prefix":"up","tenants":["alice"]}}}`)
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	h, base, _ := runHost(t, host.Config{PluginsDir: plugins, PolicyFile: policyFile, UpstreamListTimeout: 5e9})
	url := base + "/mcp"
	sees := func(key string) bool {
		return slices.Contains(tenantTools(t, do(t, "POST", url, key, listTools, nil).body), "up_echo")
	}
	if !sees(aliceKey) || sees(bobKey) {
		t.Fatalf("at start: alice %v, bob %v", sees(aliceKey), sees(bobKey))
	}
	reload := func(p string) {
		t.Helper()
		if err := os.WriteFile(policyFile, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := h.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	reload(`{` + tenants + `,"upstreams":{"up":{"url":"` + up.URL + `","prefix":"up","tenants":["alice","bob"]}}}`)
	if !sees(aliceKey) || !sees(bobKey) {
		t.Fatalf("after widening: alice %v, bob %v", sees(aliceKey), sees(bobKey))
	}
	reload(`{` + tenants + `}`)
	if sees(aliceKey) || sees(bobKey) {
		t.Fatalf("after removing the entry: alice %v, bob %v", sees(aliceKey), sees(bobKey))
	}
	if r := do(t, "POST", url, bobKey, call("up_echo", `{"text":"x"}`), nil); strings.Contains(r.body, `"text":"x"`) {
		t.Fatalf("a call went through: %s", r.body)
	}
}
