package oauth

import (
	"bufio"
	"context"
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

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The tests run a real authorization server (oidc-provider from npm, from
// the pinned Node tools that host/e2e/testdata/install.sh installs) in
// front of a real MCP server (the go-sdk's, behind its bearer token
// middleware checking the provider's JWTs against its JWKS), and play the
// browser themselves: they follow the redirects and post the provider's
// login and consent forms.

var (
	nodeOnce sync.Once
	nodeBin  string
	nodeErr  error
)

func nodeTools(t *testing.T) (node, provider string) {
	t.Helper()
	nodeOnce.Do(func() {
		var stderr strings.Builder
		cmd := exec.Command(filepath.Join(testplugins.Root(), "host", "e2e", "testdata", "install.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		nodeBin, nodeErr = strings.TrimSpace(string(out)), err
		if err != nil {
			nodeErr = fmt.Errorf("%w: %s", err, stderr.String())
		}
	})
	if nodeErr != nil {
		t.Fatalf("install.sh (the pinned Node tools): %v", nodeErr)
	}
	modules := filepath.Dir(filepath.Dir(nodeBin))
	return filepath.Join(nodeBin, "node"), filepath.Join(modules, "oidc-provider", "lib", "index.js")
}

// startProvider runs oidc-provider for resource and returns its issuer.
func startProvider(t *testing.T, resource string, env ...string) string {
	t.Helper()
	node, prov := nodeTools(t)
	cmd := exec.Command(node, filepath.Join("testdata", "provider.mjs"))
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

// mcpServer is the protected MCP server of a test.
type mcpServer struct {
	URL    string // its endpoint, <origin>/mcp
	issuer string
	mu     sync.Mutex
	keys   *jose.JSONWebKeySet
	calls  sync.Map // tool -> count
	// prm, when set, replaces the protected resource metadata handler.
	prm http.Handler
	// challenge, when set, replaces the 401's resource_metadata URL.
	challenge string
}

// startMCP starts the MCP server and its provider; env goes to the
// provider.
func startMCP(t *testing.T, env ...string) *mcpServer {
	t.Helper()
	m := &mcpServer{}
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
	prmURL := ts.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if m.prm != nil {
			m.prm.ServeHTTP(w, r)
			return
		}
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: m.URL,
			AuthorizationServers: []string{m.issuer}, ScopesSupported: []string{"mcp:tools"}}).ServeHTTP(w, r)
	})
	bearer := auth.RequireBearerToken(m.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL, Scopes: []string{"mcp:tools"}})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.challenge != "" && r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", m.challenge))
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		bearer(stepUp(prmURL, h, &m.calls)).ServeHTTP(w, r)
	}))
	m.issuer = startProvider(t, m.URL, env...)
	return m
}

// stepUp answers 403 insufficient_scope to a call of "admin" whose token
// lacks mcp:admin (the MCP authorization specification's step-up).
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
func (m *mcpServer) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
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
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: m.issuer, AnyAudience: jwt.Audience{m.URL}, Time: time.Now()}, 0); err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	return &auth.TokenInfo{Scopes: strings.Fields(extra.Scope), Expiration: claims.Expiry.Time()}, nil
}

func (m *mcpServer) jwks() (*jose.JSONWebKeySet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys != nil {
		return m.keys, nil
	}
	resp, err := http.Get(m.issuer + "/jwks")
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

func (m *mcpServer) count(tool string) int {
	n, ok := m.calls.Load(tool)
	if !ok {
		return 0
	}
	return *(n.(*int))
}

// browser plays the user's browser at the provider: it follows the
// redirects, logs in and consents on the provider's forms, and returns
// the URL the provider finally sends it to (the client's redirect URI),
// without visiting it. edit, when set, may change that URL.
func browser(t *testing.T, authURL string) (*url.URL, error) {
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

// visit delivers the final redirect to the login's loopback listener, as
// the browser would.
func visit(u *url.URL) error {
	resp, err := http.Get(u.String())
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// entry is the policy entry of the test server.
func (m *mcpServer) entry(o *caps.UpstreamOAuth) caps.UpstreamServer {
	return caps.UpstreamServer{Name: "prot", URL: m.URL, Prefix: "prot", OAuth: o}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	key := make([]byte, KeySize)
	for i := range key {
		key[i] = byte(i * 7)
	}
	s, err := NewStore(t.TempDir(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// login logs in with the browser played by the test.
func login(t *testing.T, m *mcpServer, e caps.UpstreamServer, s *Store, edit func(*url.URL)) (*State, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	return Login(ctx, LoginOptions{Server: e, Store: s, Out: &out, Lookup: func(string) (string, bool) { return "", false },
		Open: func(authURL string) error {
			u, err := browser(t, authURL)
			if err != nil {
				t.Errorf("browser: %v", err)
				return err
			}
			if edit != nil {
				edit(u)
			}
			return visit(u)
		}})
}

// aiodSet is aiod's upstream set over the server with the Auth hook.
func aiodSet(t *testing.T, m *mcpServer, e caps.UpstreamServer, o Options) (*upstream.Set, *Auth) {
	t.Helper()
	a, err := New(e, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	set := upstream.New([]upstream.Server{{Name: e.Name, URL: e.URL, Prefix: e.Prefix, FromPolicy: true, Auth: a.Wrap}},
		upstream.Options{ListTimeout: 10 * time.Second, DefaultTTL: time.Millisecond})
	t.Cleanup(func() { set.Close() })
	return set, a
}

func toolNames(set *upstream.Set) []string {
	var out []string
	for _, tl := range set.Tools(context.Background()) {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// callText calls tool and returns the result's first text and isError.
func callText(t *testing.T, set *upstream.Set, tool string) (string, bool) {
	t.Helper()
	res, err := set.Call(context.Background(), tool, json.RawMessage(`{"text":"hi"}`), nil)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("call %s: %s", tool, res)
	}
	return r.Content[0].Text, r.IsError
}

// syncBuf is a writer the test reads while Login writes.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// waitLine waits for a line holding prefix and returns its trimmed text.
func (s *syncBuf) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	for i := 0; i < 600; i++ {
		s.mu.Lock()
		text := s.b.String()
		s.mu.Unlock()
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
				return l
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no line starting %s in %q", prefix, s.b.String())
	return ""
}
