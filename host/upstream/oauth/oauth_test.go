package oauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testca"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/host/upstream/oauth/oauthtest"
	"golang.org/x/oauth2"
)

// Authorization code + PKCE with dynamic registration, the browser at the
// loopback listener; the tokens sealed; aiod's set lists and calls the
// server's tools with them; a second login reuses the registered client.
func TestLoginBrowserDynamic(t *testing.T) {
	m := oauthtest.StartMCP(t)
	s := newStore(t)
	e := entry(m, &caps.UpstreamOAuth{})
	st, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Registration != RegDynamic || st.ClientID == "" || st.Issuer != m.Issuer || st.Resource != m.URL || st.RevocationEndpoint == "" {
		t.Fatalf("state %+v", st)
	}
	if st.Token == nil || st.Token.AccessToken == "" || st.Token.RefreshToken == "" {
		t.Fatalf("token %+v", st.Token)
	}
	raw, err := os.ReadFile(s.path("prot"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(st.Token.AccessToken[:20])) || bytes.Contains(raw, []byte(st.Token.RefreshToken)) || bytes.Contains(raw, []byte("client_id")) {
		t.Fatal("the token file holds plaintext")
	}
	if fi, _ := os.Stat(s.path("prot")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode())
	}
	set, _ := aiodSet(t, m, e, Options{Store: s})
	if got := toolNames(set); !slices.Equal(got, []string{"prot_admin", "prot_echo"}) {
		t.Fatalf("tools %v", got)
	}
	if text, isErr := callText(t, set, "prot_echo"); isErr || text != "echo: hi" {
		t.Fatalf("call: %q %v", text, isErr)
	}
	st2, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st2.ClientID != st.ClientID || st2.Registration != RegDynamic {
		t.Fatalf("second login registered again: %s then %s", st.ClientID, st2.ClientID)
	}
	if st2.Token.AccessToken == st.Token.AccessToken {
		t.Fatal("second login: same token")
	}
}

// --no-browser: the user pastes the redirect URL; a pre-registered public
// client; a pasted URL to another host is refused.
func TestLoginNoBrowserPaste(t *testing.T) {
	m := oauthtest.StartMCP(t)
	s := newStore(t)
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public"})
	paste := func(edit func(string) string) (*State, error) {
		pr, pw := io.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out syncBuf
		done := make(chan struct{})
		var st *State
		var err error
		go func() {
			defer close(done)
			st, err = Login(ctx, LoginOptions{Server: e, Store: s, NoBrowser: true, Stdin: pr, Out: &out,
				Open: func(string) error { t.Error("a browser was opened with --no-browser"); return nil }})
			pw.Close()
		}()
		authURL := out.waitLine(t, "http://127.0.0.1:"+strings.TrimPrefix(m.Issuer, "http://127.0.0.1:"))
		u, berr := oauthtest.Browser(t, authURL)
		if berr != nil {
			t.Fatal(berr)
		}
		io.WriteString(pw, edit(u.String())+"\n")
		<-done
		return st, err
	}
	st, err := paste(func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	if st.ClientID != "aiod-public" || st.Registration != RegPreregistered || st.Token.RefreshToken == "" {
		t.Fatalf("state %+v", st)
	}
	_, err = paste(func(s string) string { return strings.Replace(s, "127.0.0.1", "attacker.example", 1) })
	if err == nil || !strings.Contains(err.Error(), "is not the redirect URL") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a pasted URL to another host: %v", err)
	}
}

// A hostile authorization response: a state that is not the one sent, an
// iss that is not the issuer's (RFC 9207), an error.
func TestLoginHostileResponse(t *testing.T) {
	m := oauthtest.StartMCP(t)
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public"})
	for _, tc := range []struct {
		name string
		edit func(q url.Values)
		want string
	}{
		{"state", func(q url.Values) { q.Set("state", "forged") }, "state mismatch"},
		{"iss", func(q url.Values) { q.Set("iss", "http://127.0.0.1:1") }, "does not match expected issuer"},
		{"no iss", func(q url.Values) { q.Del("iss") }, "iss parameter support but none was received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			_, err := login(t, m, e, s, func(u *url.URL) {
				q := u.Query()
				tc.edit(q)
				u.RawQuery = q.Encode()
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if st, _ := s.Load("prot"); st != nil {
				t.Fatal("a refused login kept a state")
			}
		})
	}
}

// A server whose metadata redirects to a host that is not loopback over
// plain http, or whose challenge names such a URL: refused, with the
// reason.
func TestHostileRedirect(t *testing.T) {
	m := oauthtest.StartMCP(t)
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public"})
	m.PRM = http.RedirectHandler("http://metadata.example/.well-known/oauth-protected-resource", http.StatusFound)
	_, err := login(t, m, e, newStore(t), nil)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("redirect to a remote http host: %v", err)
	}
	m.PRM = nil
	m.Challenge = "http://metadata.example/.well-known/oauth-protected-resource"
	_, err = login(t, m, e, newStore(t), nil)
	// the challenge's URL is refused; the well-known URIs are then tried
	// (they are on the server), and the login goes on there.
	if err != nil {
		t.Fatalf("a refused challenge URL with good well-known metadata: %v", err)
	}
}

// The client credentials grant: no login, the secret from the variable the
// policy names; a 403 insufficient_scope gets a token with the scope asked
// (step-up) and the call goes through.
func TestClientCredentials(t *testing.T) {
	m := oauthtest.StartMCP(t)
	e := entry(m, &caps.UpstreamOAuth{Grant: caps.GrantClientCredentials, ClientID: "aiod-svc", ClientSecretEnv: "SVC_SECRET", Scopes: []string{"mcp:tools"}})
	lookup := func(k string) (string, bool) {
		if k == "SVC_SECRET" {
			return "svc-secret-0123456789", true
		}
		return "", false
	}
	if _, err := New(e, nil, Options{Lookup: func(string) (string, bool) { return "", false }}); err == nil || !strings.Contains(err.Error(), "SVC_SECRET is not set") {
		t.Fatalf("no secret: %v", err)
	}
	set, _ := aiodSet(t, m, e, Options{Lookup: lookup})
	if got := toolNames(set); !slices.Equal(got, []string{"prot_admin", "prot_echo"}) {
		t.Fatalf("tools %v", got)
	}
	if text, isErr := callText(t, set, "prot_echo"); isErr || text != "echo: hi" {
		t.Fatalf("call: %q %v", text, isErr)
	}
	if text, isErr := callText(t, set, "prot_admin"); isErr || text != "admin: hi" {
		t.Fatalf("step-up call: %q %v", text, isErr)
	}
	if n := m.Count("admin"); n != 2 {
		t.Fatalf("admin reached the server %d times, want 2 (the 403, then the call with the new scope)", n)
	}
	// A 403 that is not insufficient_scope is the server's answer: no
	// second try, no scope asked.
	text, isErr := callText(t, set, "prot_locked")
	if !isErr || !strings.Contains(text, "Forbidden") || m.Count("locked") != 1 {
		t.Fatalf("a plain 403: %q %v, %d tries", text, isErr, m.Count("locked"))
	}
	// A wrong secret: the grant fails, the tools are not offered.
	bad, _ := aiodSet(t, m, e, Options{Lookup: func(string) (string, bool) { return "wrong", true }})
	if got := toolNames(bad); len(got) != 0 {
		t.Fatalf("tools with a wrong secret: %v", got)
	}
	if text, isErr := callText(t, bad, "prot_echo"); !isErr || !strings.Contains(text, "client credentials grant failed") {
		t.Fatalf("call with a wrong secret: %q", text)
	}
}

// A 403 insufficient_scope to a logged-in server: the call fails saying
// which scope and to log in; the next login asks for it, and the call
// then goes through.
func TestStepUpLogin(t *testing.T) {
	m := oauthtest.StartMCP(t)
	s := newStore(t)
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public", Scopes: []string{"mcp:tools"}})
	if _, err := login(t, m, e, s, nil); err != nil {
		t.Fatal(err)
	}
	set, _ := aiodSet(t, m, e, Options{Store: s})
	text, isErr := callText(t, set, "prot_admin")
	if !isErr || !strings.Contains(text, `asks for the scope "mcp:tools mcp:admin"`) || !strings.Contains(text, "aiod upstream login prot") {
		t.Fatalf("step-up: %q %v", text, isErr)
	}
	st, _ := s.Load("prot")
	if !slices.Contains(st.Wanted, "mcp:admin") {
		t.Fatalf("wanted %v", st.Wanted)
	}
	st2, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st2.Scopes, "mcp:admin") {
		t.Fatalf("the second login asked for %v", st2.Scopes)
	}
	if text, isErr := callText(t, set, "prot_admin"); isErr || text != "admin: hi" {
		t.Fatalf("after the step-up login: %q %v", text, isErr)
	}
}

// Refresh without anyone (access tokens of 1 s: every request refreshes),
// with resource on the refresh (the provider gives no token for the
// resource without it) and the rotated refresh token kept; logout revokes
// the refresh token at the provider; the server is then not offered and
// its calls say to log in.
func TestRefreshRotationLogout(t *testing.T) {
	m := oauthtest.StartMCP(t, "ACCESS_TTL=1", "GRANTED_RESOURCE=0")
	s := newStore(t)
	// With openid among the scopes, a refresh without resource gets a
	// token for the provider's userinfo, not for the MCP server.
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public", Scopes: []string{"openid", "mcp:tools"}})
	st, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := st.Token.RefreshToken
	set, _ := aiodSet(t, m, e, Options{Store: s})
	for i := 0; i < 3; i++ {
		if text, isErr := callText(t, set, "prot_echo"); isErr || text != "echo: hi" {
			t.Fatalf("call %d: %q %v", i, text, isErr)
		}
	}
	now, _ := s.Load("prot")
	if now.Token.RefreshToken == first || now.Token.AccessToken == st.Token.AccessToken {
		t.Fatal("the refresh token was not rotated (or not kept)")
	}
	// The first refresh token was rotated away: the provider refuses it.
	if _, err := refreshWith(now, first); err == nil {
		t.Fatal("the rotated-away refresh token still works")
	}
	res, err := Logout(context.Background(), e, NewHTTPClient(nil), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Revoked, "refresh_token") {
		t.Fatalf("logout: %+v", res)
	}
	if _, err := refreshWith(now, now.Token.RefreshToken); err == nil {
		t.Fatal("the revoked refresh token still works")
	}
	if after, err := s.Load("prot"); after != nil || err != nil {
		t.Fatalf("after logout: %+v %v", after, err)
	}
	waitNoTools(t, set)
	if text, isErr := callText(t, set, "prot_echo"); !isErr || !strings.Contains(text, "not logged in") || !strings.Contains(text, "aiod upstream login prot") {
		t.Fatalf("call after logout: %q", text)
	}
	if res, _ := Logout(context.Background(), e, NewHTTPClient(nil), s, nil); !res.Nothing {
		t.Fatalf("second logout: %+v", res)
	}
}

// A login that lapses (its refresh token revoked behind aiod's back): the
// tools are withheld, the calls say `aiod upstream login prot`; a new login
// while aiod runs brings them back without a restart.
func TestLapsedLogin(t *testing.T) {
	m := oauthtest.StartMCP(t, "ACCESS_TTL=1")
	s := newStore(t)
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public"})
	st, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := aiodSet(t, m, e, Options{Store: s})
	if got := toolNames(set); len(got) != 2 {
		t.Fatalf("tools %v", got)
	}
	// The provider's operator revokes the grant.
	if err := revoke(context.Background(), NewHTTPClient(nil), st, "", st.Token.RefreshToken, "refresh_token"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	text, isErr := callText(t, set, "prot_echo")
	if !isErr || !strings.Contains(text, "lapsed") || !strings.Contains(text, "aiod upstream login prot") {
		t.Fatalf("call after the lapse: %q", text)
	}
	waitNoTools(t, set)
	time.Sleep(20 * time.Millisecond) // a new modification time
	if _, err := login(t, m, e, s, nil); err != nil {
		t.Fatal(err)
	}
	if text, isErr := callText(t, set, "prot_echo"); isErr || text != "echo: hi" {
		t.Fatalf("after a new login: %q", text)
	}
}

// refreshWith asks the provider for a token with a refresh token.
func refreshWith(st *State, refresh string) (*oauth2.Token, error) {
	cfg := &oauth2.Config{ClientID: st.ClientID, Endpoint: oauth2.Endpoint{TokenURL: st.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, withResource(NewHTTPClient(nil), st.TokenEndpoint, st.Resource))
	return cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: refresh, Expiry: time.Unix(1, 0)}).Token()
}

// waitNoTools waits for the set to stop offering the server's tools: a
// stale list is served once more while its refresh runs.
func waitNoTools(t *testing.T, set *upstream.Set) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if len(toolNames(set)) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server's tools are still offered: %v", toolNames(set))
}

// A client ID metadata document: the provider fetches it (https, the
// test's CA) and the login uses its URL as the client's id.
func TestLoginClientMetadataDocument(t *testing.T) {
	ca := testca.New(t)
	m := oauthtest.StartMCP(t, "NODE_EXTRA_CA_CERTS="+ca.PEMFile)
	doc := oauthtest.ClientMetadataDocument(t, ca.ServerConfig())
	s := newStore(t)
	e := entry(m, &caps.UpstreamOAuth{ClientMetadataURL: doc})
	st, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Registration != RegMetadataDocument || st.ClientID != doc {
		t.Fatalf("state %+v", st)
	}
	set, _ := aiodSet(t, m, e, Options{Store: s})
	if text, isErr := callText(t, set, "prot_echo"); isErr || text != "echo: hi" {
		t.Fatalf("call: %q %v", text, isErr)
	}
}

// Hostile metadata: a protected resource metadata document for another
// resource (RFC 9728 §3.3), or naming an authorization server over plain
// http on another host, or one whose metadata names endpoints elsewhere
// over plain http: the login stops, saying why, before any browser.
func TestHostileMetadata(t *testing.T) {
	m := oauthtest.StartMCP(t)
	e := entry(m, &caps.UpstreamOAuth{ClientID: "aiod-public"})
	serve := func(doc string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, doc)
		})
	}
	asm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issuer":"http://`+r.Host+`","authorization_endpoint":"http://login.example/auth","token_endpoint":"http://`+r.Host+`/token","code_challenge_methods_supported":["S256"],"response_types_supported":["code"]}`)
	}))
	defer asm.Close()
	for _, tc := range []struct{ doc, want string }{
		{`{"resource":"http://127.0.0.1:1/other","authorization_servers":["` + m.Issuer + `"]}`, "got metadata resource"},
		{`{"resource":"` + m.URL + `","authorization_servers":["http://as.example"]}`, "does not use HTTPS or is not a loopback address"},
		{`{"resource":"` + m.URL + `","authorization_servers":["` + asm.URL + `"]}`, `authorization_endpoint: URL "http://login.example/auth" does not use HTTPS or is not a loopback address`},
	} {
		m.PRM = serve(tc.doc)
		opened := false
		var out strings.Builder
		_, err := Login(context.Background(), LoginOptions{Server: e, Store: newStore(t), Out: &out, Open: func(string) error { opened = true; return nil }})
		if err == nil || !strings.Contains(err.Error(), tc.want) || opened {
			t.Errorf("%s: got %v (browser opened: %v), want %q", tc.doc, err, opened, tc.want)
		}
	}
}

// A server of the 2024-11-05 HTTP+SSE transport: the login finds its
// challenge on the stream's GET (its POST answers 405), and aiod's set
// reaches it over that transport with the token on the GET and the POSTs.
func TestLoginSSE(t *testing.T) {
	m := oauthtest.StartMCP(t)
	s := newStore(t)
	e := caps.UpstreamServer{Name: "prot", URL: m.SSEURL, Prefix: "prot", Transport: "sse", OAuth: &caps.UpstreamOAuth{ClientID: "aiod-public"}}
	st, err := login(t, m, e, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resource != m.SSEURL {
		t.Fatalf("resource %s", st.Resource)
	}
	a, err := New(e, nil, Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	set := upstream.New([]upstream.Server{{Name: "prot", URL: m.SSEURL, Prefix: "prot", FromPolicy: true, Transport: upstream.TransportSSE, Auth: a.Wrap}},
		upstream.Options{ListTimeout: 10 * time.Second})
	defer set.Close()
	if got := toolNames(set); !slices.Equal(got, []string{"prot_admin", "prot_echo"}) {
		t.Fatalf("tools %v", got)
	}
	if text, isErr := callText(t, set, "prot_echo"); isErr || text != "echo: hi" {
		t.Fatalf("call: %q %v", text, isErr)
	}
}
