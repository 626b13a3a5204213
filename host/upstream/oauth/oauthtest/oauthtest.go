// Package oauthtest runs what the upstream OAuth tests log in to: a real
// authorization server (oidc-provider from npm, from the pinned Node tools
// that host/e2e/testdata/install.sh installs) in front of a real MCP server
// (the go-sdk's, behind its bearer token middleware checking the
// provider's JWTs against its JWKS), and plays the browser: it follows the
// redirects and posts the provider's login and consent forms.
package oauthtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func nodeTools(t *testing.T) (node, provider string) {
	t.Helper()
	nodeBin := testplugins.NodeTools(t)
	modules := testplugins.NodeModules(nodeBin)
	return filepath.Join(nodeBin, "node"), filepath.Join(modules, "oidc-provider", "lib", "index.js")
}

// startProvider runs oidc-provider for resource and returns its issuer.
func startProvider(t *testing.T, resource string, env ...string) string {
	t.Helper()
	node, prov := nodeTools(t)
	cmd := exec.Command(node, filepath.Join(testplugins.Root(), "host", "upstream", "oauth", "oauthtest", "provider.mjs"))
	cmd.Env = append(os.Environ(), append([]string{"OIDC_PROVIDER=" + prov, "RESOURCE=" + resource, "NODE_ENV=test"}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "{") {
				line <- sc.Text()
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		var v struct{ Issuer string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		return v.Issuer
	case <-time.After(30 * time.Second):
		t.Fatalf("oidc-provider did not start: %s", stderr.String())
	}
	return ""
}

// MCPServer is the protected MCP server of a test.
type MCPServer struct {
	URL string // its endpoint, <origin>/mcp
	// SSEURL is the same server over the 2024-11-05 HTTP+SSE transport,
	// <origin>/sse: a POST without a session answers 405 before any
	// token check (so a login finds it by its GET), the rest is
	// protected.
	SSEURL string
	Issuer string // the provider's
	mu     sync.Mutex
	keys   *jose.JSONWebKeySet
	calls  sync.Map // tool -> count
	// PRM, when set, replaces the protected resource metadata handler.
	PRM http.Handler
	// Challenge, when set, replaces the 401's resource_metadata URL.
	Challenge string
}

// StartMCP starts the MCP server and its provider; env goes to the
// provider.
func StartMCP(t *testing.T, env ...string) *MCPServer {
	t.Helper()
	if testing.Short() {
		t.Skip("runs oidc-provider from the pinned Node tools: make test runs it, make test-short does not")
	}
	m := &MCPServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "admin", Description: "needs mcp:admin"}, func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "admin: " + a.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	m.URL = ts.URL + "/mcp"
	m.SSEURL = ts.URL + "/sse"
	ssePRM := ts.URL + "/.well-known/oauth-protected-resource/sse"
	mux.HandleFunc("/.well-known/oauth-protected-resource/sse", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: m.SSEURL,
			AuthorizationServers: []string{m.Issuer}, ScopesSupported: []string{"mcp:tools"}}).ServeHTTP(w, r)
	})
	sse := auth.RequireBearerToken(m.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: ssePRM, Scopes: []string{"mcp:tools"}})(
		mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.Handle("/sse", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Query().Get("sessionid") == "" {
			http.Error(w, "GET this endpoint", http.StatusMethodNotAllowed)
			return
		}
		sse.ServeHTTP(w, r)
	}))
	prmURL := ts.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if m.PRM != nil {
			m.PRM.ServeHTTP(w, r)
			return
		}
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: m.URL,
			AuthorizationServers: []string{m.Issuer}, ScopesSupported: []string{"mcp:tools"}}).ServeHTTP(w, r)
	})
	bearer := auth.RequireBearerToken(m.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL, Scopes: []string{"mcp:tools"}})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.Challenge != "" && r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", m.Challenge))
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		bearer(stepUp(prmURL, h, &m.calls)).ServeHTTP(w, r)
	}))
	m.Issuer = startProvider(t, m.URL+","+m.SSEURL, env...)
	return m
}

// stepUp answers 403 insufficient_scope to a call of "admin" whose token
// lacks mcp:admin (the MCP authorization specification's step-up), and a
// plain 403 to a call of "locked".
func stepUp(prmURL string, next http.Handler, calls *sync.Map) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			json.Unmarshal(b, &msg)
			if msg.Method == "tools/call" {
				n, _ := calls.LoadOrStore(msg.Params.Name, new(int))
				*(n.(*int))++
				if msg.Params.Name == "locked" {
					http.Error(w, "this tool is locked", http.StatusForbidden)
					return
				}
				if msg.Params.Name == "admin" && !slices.Contains(auth.TokenInfoFromContext(r.Context()).Scopes, "mcp:admin") {
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata=%q`, prmURL))
					http.Error(w, "insufficient scope", http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// verify checks a provider JWT: signature by the provider's JWKS, issuer,
// audience (the resource), expiry.
func (m *MCPServer) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	keys, err := m.jwks()
	if err != nil {
		return nil, err
	}
	var claims jwt.Claims
	var extra struct {
		Scope string `json:"scope"`
	}
	if err := tok.Claims(keys, &claims, &extra); err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: m.Issuer, AnyAudience: jwt.Audience{m.URL, m.SSEURL}, Time: time.Now()}, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	return &auth.TokenInfo{Scopes: strings.Fields(extra.Scope), Expiration: claims.Expiry.Time()}, nil
}

func (m *MCPServer) jwks() (*jose.JSONWebKeySet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys != nil {
		return m.keys, nil
	}
	resp, err := http.Get(m.Issuer + "/jwks")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ks jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&ks); err != nil {
		return nil, err
	}
	m.keys = &ks
	return m.keys, nil
}

func (m *MCPServer) Count(tool string) int {
	n, ok := m.calls.Load(tool)
	if !ok {
		return 0
	}
	return *(n.(*int))
}

// Browser plays the user's browser at the provider: it follows the
// redirects, logs in and consents on the provider's forms, and returns
// the URL the provider finally sends it to (the client's redirect URI),
// without visiting it. edit, when set, may change that URL.
func Browser(t *testing.T, authURL string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	start, _ := url.Parse(authURL)
	var final *url.URL
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != start.Host {
			final = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	form := regexp.MustCompile(`(?s)<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>`)
	input := regexp.MustCompile(`<input[^>]*name="([^"]+)"(?:[^>]*value="([^"]*)")?`)
	resp, err := c.Get(authURL)
	for i := 0; i < 10; i++ {
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if final != nil {
			return final, nil
		}
		f := form.FindSubmatch(b)
		if f == nil {
			return nil, fmt.Errorf("the provider answered HTTP %d without a form: %s", resp.StatusCode, b)
		}
		vals := url.Values{}
		for _, in := range input.FindAllSubmatch(f[2], -1) {
			vals.Set(string(in[1]), string(in[2]))
		}
		if vals.Has("login") {
			vals.Set("login", "alice")
			vals.Set("password", "any")
		}
		action, _ := resp.Request.URL.Parse(string(f[1]))
		resp, err = c.PostForm(action.String(), vals)
	}
	return nil, fmt.Errorf("more than 10 pages at the provider")
}

// Visit delivers the final redirect to the login's loopback listener, as
// the browser would.
func Visit(u *url.URL) error {
	resp, err := http.Get(u.String())
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// ClientMetadataDocument serves a client ID metadata document (a public
// native client with a loopback redirect URI) over https with a
// certificate of serverTLS, and returns its URL,
// the client's id. The provider must trust the CA (NODE_EXTRA_CA_CERTS).
func ClientMetadataDocument(t *testing.T, serverTLS *tls.Config) string {
	t.Helper()
	var id string
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/aiod/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_name": "aiod", "application_type": "native",
			"redirect_uris": []string{"http://127.0.0.1/callback"}, "grant_types": []string{"authorization_code", "refresh_token"},
			"response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	}))
	ts.TLS = serverTLS
	ts.StartTLS()
	t.Cleanup(ts.Close)
	id = ts.URL + "/aiod/client.json"
	return id
}
