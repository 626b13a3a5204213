package host_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/plugins/builtin"
)

// Keys of the tenants in tenancyPolicy.
const (
	aliceKey = "alice-secret-key-0123456789"
	bobKey   = "bob-secret-key-0123456789"
	carolKey = "carol-secret-key-0123456789"
	daveKey  = "dave-secret-key-0123456789"
	erinKey  = "erin-secret-key-0123456789"
	adminKey = "admin-secret-key-0123456789"
)

func keyLine(k string) string { return caps.KeyLine(sha256.Sum256([]byte(k))) }

func tenancyPolicy(t *testing.T) string {
	p := `{"tenants":{
	  "alice":{"keys":["` + keyLine(aliceKey) + `"],"tools":["echo","sandbox_execute_bash"],"quotas":{"concurrent_calls":8}},
	  "bob":{"keys":["` + keyLine(bobKey) + `"],"tools":["sandbox_execute_bash"]},
	  "carol":{"keys":["` + keyLine(carolKey) + `"],"tools":["echo"],"quotas":{"calls_per_minute":6}},
	  "dave":{"keys":["` + keyLine(daveKey) + `"],"tools":["echo"],"quotas":{"concurrent_calls":1}},
	  "erin":{"keys":["` + keyLine(erinKey) + `"],"tools":["echo"],"quotas":{"sessions":1}}}}`
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(p), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends one request to url+path with the key as a bearer token (none
// when empty) and the extra headers.
func do(t testing.TB, method, url, key, body string, hdr map[string]string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// read the first event only (a GET stream stays open)
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		return reply{resp.StatusCode, resp.Header, line}
	}
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// openStream sends one request whose answer is an event stream, reads up
// to its first data line (or keep-alive comment), and leaves the stream
// open until the test ends.
func openStream(t *testing.T, method, url, key, body string, hdr map[string]string) (status int, first string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "data:") || strings.HasPrefix(line, ":") {
			return resp.StatusCode, line
		}
	}
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

func call(name, args string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

func tenantTools(t *testing.T, body string) []string {
	t.Helper()
	var r struct {
		Result struct{ Tools []struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("tools/list: %v: %s", err, body)
	}
	var out []string
	for _, x := range r.Result.Tools {
		out = append(out, x.Name)
	}
	return out
}

func rpcError(t *testing.T, body string) (int, string) {
	t.Helper()
	var r struct {
		Error *struct {
			Code    int
			Message string
		}
	}
	if json.Unmarshal([]byte(body), &r) != nil || r.Error == nil {
		t.Fatalf("want a JSON-RPC error, got %s", body)
	}
	return r.Error.Code, r.Error.Message
}

func startTenancyHost(t *testing.T, cfg host.Config) string {
	t.Helper()
	if !builtin.Present() {
		if testing.Short() {
			t.Skip("the built-in plugins are not built (make build; make test builds them)")
		}
		t.Fatal("the built-in plugins are not built (make build)")
	}
	cfg.PluginsDir = t.TempDir()
	testplugins.Package(t, cfg.PluginsDir, "plugins/examples/echo", nil, nil)
	cfg.Builtins = builtin.FS()
	if cfg.PolicyFile == "" {
		cfg.PolicyFile = tenancyPolicy(t)
	}
	return startHost(t, cfg) + "/mcp"
}

// TestTenantIsolation runs the cross-tenant probes over HTTP: allow-lists
// on list and call, sessions and GET streams of another tenant, the shared
// bash session, quotas, the audit log and the metrics.
func TestTenantIsolation(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	url := startTenancyHost(t, host.Config{AdminKey: adminKey, TenancyConfig: host.TenancyConfig{AuditLog: auditPath}})
	base := strings.TrimSuffix(url, "/mcp")

	t.Run("authentication", func(t *testing.T) {
		if r := do(t, "POST", url, "", listTools, nil); r.status != 401 {
			t.Errorf("no key: %d", r.status)
		}
		if r := do(t, "POST", url, "wrong", listTools, nil); r.status != 401 {
			t.Errorf("a wrong key: %d", r.status)
		}
		if r := do(t, "POST", url, keyLine(aliceKey), listTools, nil); r.status != 401 {
			t.Errorf("the key's digest as a key: %d", r.status)
		}
		if r := do(t, "POST", url+"?api_key="+aliceKey, "", listTools, nil); r.status != 401 {
			t.Errorf("a key in the query string: %d", r.status)
		}
		if r := do(t, "POST", url+"?api_key="+aliceKey, aliceKey, listTools, nil); r.status != 401 {
			t.Errorf("a key in the query string beside a good one: %d", r.status)
		}
	})

	t.Run("allow-list", func(t *testing.T) {
		got := tenantTools(t, do(t, "POST", url, aliceKey, listTools, nil).body)
		if strings.Join(got, ",") != "sandbox_execute_bash,echo" && strings.Join(got, ",") != "echo,sandbox_execute_bash" {
			t.Errorf("alice sees %v", got)
		}
		if got := tenantTools(t, do(t, "POST", url, bobKey, listTools, nil).body); strings.Join(got, ",") != "sandbox_execute_bash" {
			t.Errorf("bob sees %v", got)
		}
		hidden := do(t, "POST", url, bobKey, call("echo", `{"text":"x"}`), nil)
		missing := do(t, "POST", url, bobKey, call("nosuchtool", `{"text":"x"}`), nil)
		hc, hm := rpcError(t, hidden.body)
		mc, mm := rpcError(t, missing.body)
		if hc != -32602 || hc != mc || strings.Replace(hm, "echo", "nosuchtool", 1) != mm || hidden.status != missing.status {
			t.Errorf("a hidden tool answers %d %q (%d), a missing one %d %q (%d): they must look alike", hc, hm, hidden.status, mc, mm, missing.status)
		}
		// modern era too
		modern := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},` + modernMeta + `}}`
		r := do(t, "POST", url, bobKey, modern, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
		if c, m := rpcError(t, r.body); c != -32602 || m != "unknown tool: echo" {
			t.Errorf("modern: %d %q", c, m)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		r := do(t, "POST", url, aliceKey, init, nil)
		sid := r.header.Get("Mcp-Session-Id")
		if r.status != 200 || sid == "" {
			t.Fatalf("initialize: %d %s", r.status, r.body)
		}
		h := map[string]string{"Mcp-Session-Id": sid}
		if r := do(t, "POST", url, bobKey, listTools, h); r.status != 404 {
			t.Errorf("bob with alice's session id: %d %s", r.status, r.body)
		}
		if r := do(t, "GET", url, bobKey, "", h); r.status != 404 {
			t.Errorf("bob opening alice's GET stream: %d", r.status)
		}
		if r := do(t, "DELETE", url, bobKey, "", h); r.status != 404 {
			t.Errorf("bob deleting alice's session: %d", r.status)
		}
		if r := do(t, "POST", url, aliceKey, listTools, h); r.status != 200 {
			t.Errorf("alice's own session after bob's tries: %d %s", r.status, r.body)
		}
	})

	t.Run("shell session", func(t *testing.T) {
		r := do(t, "POST", url, aliceKey, call("sandbox_execute_bash", `{"cmd":"export PROBE=alice-was-here"}`), nil)
		if r.status != 200 || strings.Contains(r.body, `"isError":true`) {
			t.Fatalf("alice's export: %s", r.body)
		}
		r = do(t, "POST", url, aliceKey, call("sandbox_execute_bash", `{"cmd":"echo \"[$PROBE]\""}`), nil)
		if !strings.Contains(r.body, "[alice-was-here]") {
			t.Fatalf("alice's own session lost the variable: %s", r.body)
		}
		r = do(t, "POST", url, bobKey, call("sandbox_execute_bash", `{"cmd":"echo \"[$PROBE]\""}`), nil)
		if strings.Contains(r.body, "alice-was-here") || !strings.Contains(r.body, "[]") {
			t.Fatalf("bob's shell session sees alice's: %s", r.body)
		}
	})

	t.Run("rate quota", func(t *testing.T) {
		if r := do(t, "POST", url, carolKey, call("echo", `{"text":"one"}`), nil); r.status != 200 {
			t.Fatalf("carol's first call: %d %s", r.status, r.body)
		}
		r := do(t, "POST", url, carolKey, call("echo", `{"text":"two"}`), nil)
		if r.status != 429 || r.header.Get("Retry-After") == "" {
			t.Fatalf("carol's second call: %d (Retry-After %q) %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		var e struct {
			ID    int
			Error struct {
				Code int
				Data struct{ Quota string }
			}
		}
		if json.Unmarshal([]byte(r.body), &e) != nil || e.Error.Data.Quota != "calls_per_minute" || e.ID != 1 {
			t.Errorf("429 body: %s", r.body)
		}
		// carol at her quota does not hold alice up
		start := time.Now()
		for range 5 {
			if r := do(t, "POST", url, aliceKey, call("echo", `{"text":"a"}`), nil); r.status != 200 {
				t.Fatalf("alice while carol is at her quota: %d", r.status)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("alice's five calls took %v", d)
		}
	})

	// dave (concurrent_calls 1) keeps a subscriptions/listen stream and a
	// legacy GET stream open: neither holds his one slot, so he can call.
	t.Run("streams hold no slot", func(t *testing.T) {
		listen := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
		st, first := openStream(t, "POST", url, daveKey, listen, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
		if st != 200 || !strings.Contains(first, "subscriptions/acknowledged") {
			t.Fatalf("dave's subscriptions/listen: %d %s", st, first)
		}
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		r := do(t, "POST", url, daveKey, init, nil)
		sid := r.header.Get("Mcp-Session-Id")
		if r.status != 200 || sid == "" {
			t.Fatalf("initialize: %d %s", r.status, r.body)
		}
		if st, first := openStream(t, "GET", url, daveKey, "", map[string]string{"Mcp-Session-Id": sid}); st != 200 {
			t.Fatalf("dave's GET stream: %d %s", st, first)
		}
		for i := range 3 {
			if r := do(t, "POST", url, daveKey, call("echo", `{"text":"d"}`), nil); r.status != 200 || !strings.Contains(r.body, `"d"`) {
				t.Fatalf("dave's call %d with two streams open: %d %s", i, r.status, r.body)
			}
		}
	})

	// erin (sessions 1): a second session ends her idle first one; with
	// the only one busy (its GET stream open) initialize answers 503;
	// another tenant's sessions are untouched.
	t.Run("sessions quota", func(t *testing.T) {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		session := func(key string) string {
			t.Helper()
			r := do(t, "POST", url, key, init, nil)
			if r.status != 200 || r.header.Get("Mcp-Session-Id") == "" {
				t.Fatalf("initialize: %d %s", r.status, r.body)
			}
			return r.header.Get("Mcp-Session-Id")
		}
		alices := session(aliceKey)
		first := session(erinKey)
		second := session(erinKey)
		if r := do(t, "POST", url, erinKey, listTools, map[string]string{"Mcp-Session-Id": first}); r.status != 404 {
			t.Errorf("erin's first session after her second: %d, want 404 (ended to make room)", r.status)
		}
		if st, first := openStream(t, "GET", url, erinKey, "", map[string]string{"Mcp-Session-Id": second}); st != 200 {
			t.Fatalf("erin's GET stream: %d %s", st, first)
		}
		if r := do(t, "POST", url, erinKey, init, nil); r.status != 503 {
			t.Errorf("erin's initialize with her one session busy: %d %s, want 503", r.status, r.body)
		}
		if r := do(t, "POST", url, aliceKey, listTools, map[string]string{"Mcp-Session-Id": alices}); r.status != 200 {
			t.Errorf("alice's session after erin's: %d", r.status)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		for _, k := range []string{"", aliceKey, bobKey} {
			if r := do(t, "GET", base+"/metrics", k, "", nil); r.status != 401 {
				t.Errorf("/metrics with key %q: %d", k, r.status)
			}
		}
		r := do(t, "GET", base+"/metrics", adminKey, "", nil)
		for _, want := range []string{`aiod_mcp_requests_total{method="tools/call",outcome="ok",tenant="alice",tool="echo"}`,
			`aiod_quota_rejections_total{quota="calls_per_minute",tenant="carol"} 1`,
			`aiod_mcp_requests_total{method="tools/call",outcome="denied",tenant="bob",tool=""}`,
			"aiod_mcp_request_duration_seconds_bucket", "aiod_warm_instances", "aiod_plugin_load_errors 0", "aiod_mcp_sessions"} {
			if r.status != 200 || !strings.Contains(r.body, want) {
				t.Errorf("/metrics (%d) lacks %s", r.status, want)
			}
		}
	})

	t.Run("audit", func(t *testing.T) {
		b, err := os.ReadFile(auditPath)
		if err != nil {
			t.Fatal(err)
		}
		log := string(b)
		for _, secret := range []string{aliceKey, bobKey, carolKey, adminKey, "alice-was-here", `"text"`, "one", "two"} {
			if strings.Contains(log, secret) {
				t.Errorf("the audit log contains %q", secret)
			}
		}
		seen := map[string]bool{}
		listBytes := map[string]int{}
		wantDigest := sha256.Sum256([]byte(`{"text":"one"}`))
		for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
			var e struct {
				Time                                   time.Time
				Tenant, Method, Tool, Outcome, Session string
				ArgsSHA256                             string `json:"args_sha256"`
				ResultBytes                            *int   `json:"result_bytes"`
				DurationMs                             *float64
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Time.IsZero() || e.ResultBytes == nil {
				t.Fatalf("bad line %q: %v", line, err)
			}
			seen[e.Tenant+" "+e.Method+" "+e.Tool+" "+e.Outcome] = true
			if e.Method == "tools/list" && e.Session == "" {
				listBytes[e.Tenant] = *e.ResultBytes
			}
			if e.Tenant == "carol" && e.Outcome == "ok" && e.ArgsSHA256 != hex.EncodeToString(wantDigest[:]) {
				t.Errorf("carol's call: args_sha256 %s, want the digest of its arguments", e.ArgsSHA256)
			}
		}
		if listBytes["bob"] == 0 || listBytes["bob"] >= listBytes["alice"] {
			t.Errorf("tools/list result bytes: bob %d, alice %d: want the filtered sizes (bob sees fewer tools)", listBytes["bob"], listBytes["alice"])
		}
		for _, want := range []string{"alice tools/list  ok", "bob tools/call echo denied", "bob tools/call nosuchtool denied",
			"carol tools/call echo ok", "carol tools/call echo quota", "alice tools/call sandbox_execute_bash ok", "alice initialize  ok"} {
			if !seen[want] {
				t.Errorf("no audit line %q in\n%s", want, log)
			}
		}
	})
}

// oauthFixture is a signing key and its JWKS file.
type oauthFixture struct {
	key  *ecdsa.PrivateKey
	jwks string
}

func newOAuthFixture(t *testing.T) *oauthFixture {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "test-1", Algorithm: "ES256", Use: "sig"}}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &oauthFixture{key: k, jwks: path}
}

func (f *oauthFixture) token(t *testing.T, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = "test-1"
	s, err := tok.SignedString(f.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOAuth: tokens of the issuer for this audience name the tenant; a
// token for another audience, an expired one, one not yet valid, one
// signed by another key and one in the query string are refused, and a
// 401 names the resource metadata.
func TestOAuth(t *testing.T) {
	f := newOAuthFixture(t)
	const iss, aud = "https://issuer.test", "https://aiod.test/mcp"
	url := startTenancyHost(t, host.Config{TenancyConfig: host.TenancyConfig{OAuthIssuer: iss, OAuthAudience: aud, OAuthJWKS: f.jwks}})
	base := strings.TrimSuffix(url, "/mcp")
	now := time.Now()
	claims := func(m jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"iss": iss, "aud": aud, "sub": "bob", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		for k, v := range m {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	good := f.token(t, claims(nil))
	if r := do(t, "POST", url, good, listTools, nil); r.status != 200 || strings.Join(tenantTools(t, r.body), ",") != "sandbox_execute_bash" {
		t.Fatalf("bob's token: %d %s", r.status, r.body)
	}
	other := newOAuthFixture(t)
	for name, tok := range map[string]string{
		"another audience": f.token(t, claims(jwt.MapClaims{"aud": "https://other.test"})),
		"another issuer":   f.token(t, claims(jwt.MapClaims{"iss": "https://evil.test"})),
		"expired":          f.token(t, claims(jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()})),
		"no expiry":        f.token(t, claims(jwt.MapClaims{"exp": nil})),
		"not yet valid":    f.token(t, claims(jwt.MapClaims{"nbf": now.Add(time.Hour).Unix()})),
		"another key":      other.token(t, claims(nil)),
		"tampered":         good[:len(good)-4] + "AAAA",
	} {
		r := do(t, "POST", url, tok, listTools, nil)
		if r.status != 401 || !strings.Contains(r.header.Get("WWW-Authenticate"), `resource_metadata="http://`) {
			t.Errorf("%s: %d (WWW-Authenticate %q)", name, r.status, r.header.Get("WWW-Authenticate"))
		}
	}
	if r := do(t, "POST", url, f.token(t, claims(jwt.MapClaims{"sub": "mallory"})), listTools, nil); r.status != 403 {
		t.Errorf("a token naming no tenant: %d", r.status)
	}
	for _, q := range []string{"access_token", "token", "api_key"} {
		if r := do(t, "POST", url+"?"+q+"="+good, "", listTools, nil); r.status != 401 {
			t.Errorf("the token as ?%s=: %d", q, r.status)
		}
	}
	if r := do(t, "POST", url, bobKey, listTools, nil); r.status != 200 {
		t.Errorf("an API key beside OAuth: %d", r.status)
	}
	r := do(t, "GET", base+"/.well-known/oauth-protected-resource", "", "", nil)
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &meta) != nil || meta.Resource != aud || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != iss {
		t.Errorf("resource metadata: %d %s", r.status, r.body)
	}
}
