package oauth

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Auth puts a server's bearer token on every request aiod makes to it (the
// hook of the upstream's HTTP transport, Wrap). For the authorization code
// grant the token is the one `aiod upstream login` kept, refreshed while
// the refresh token lasts (a rotated refresh token is kept), and read again
// when the file changes (a login while aiod runs takes effect at once).
// Without a usable token a request is not sent: it fails with an error
// saying to run `aiod upstream login NAME`, so the server's tools are not
// offered. For the client credentials grant aiod gets tokens itself.
type Auth struct {
	srv    caps.UpstreamServer
	store  *Store // nil for client credentials
	client *http.Client
	lookup func(string) (string, bool)
	log    *slog.Logger

	mu      sync.Mutex
	st      *State
	stamp   time.Time // the file's modification time when st was read
	ts      oauth2.TokenSource
	lapsed  string // why the login cannot be used ("": it can)
	ccCfg   *clientcredentials.Config
	ccScope []string // scopes a 403 asked for, added to the next token
}

// Options are aiod's settings for the servers' Auth.
type Options struct {
	// Store keeps the logins' tokens (nil: only client credentials
	// servers can be used).
	Store *Store
	// Lookup reads aiod's environment.
	Lookup func(string) (string, bool)
	Logger *slog.Logger
}

// New returns the Auth of a policy entry with "oauth"; roots verify its
// authorization server (nil: the system's).
func New(srv caps.UpstreamServer, roots *x509.CertPool, o Options) (*Auth, error) {
	if srv.OAuth == nil {
		return nil, fmt.Errorf("upstream MCP server %q has no \"oauth\"", srv.Name)
	}
	if o.Lookup == nil {
		o.Lookup = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	a := &Auth{srv: srv, client: NewHTTPClient(roots), lookup: o.Lookup, log: o.Logger}
	if srv.OAuth.ClientCredentials() {
		if _, err := secretFrom(srv, o.Lookup); err != nil {
			return nil, err
		}
		return a, nil
	}
	if o.Store == nil {
		return nil, fmt.Errorf("upstream MCP server %q logs in with OAuth: --upstream-key-file (AIO_UPSTREAM_KEY_FILE) is required, the key its tokens are kept encrypted with", srv.Name)
	}
	a.store = o.Store
	return a, nil
}

// Wrap is the hook of the upstream's HTTP transport.
func (a *Auth) Wrap(base http.RoundTripper) http.RoundTripper {
	return authTransport{a: a, base: base}
}

// LoginError is a request not sent, or refused, for want of a usable token.
type LoginError struct {
	Server string
	Why    string
}

// AuthFailure marks the error for host/upstream: its text answers the call.
func (e *LoginError) AuthFailure() {}

func (e *LoginError) Error() string {
	return fmt.Sprintf("upstream MCP server %q: %s: run `aiod upstream login %s`", e.Server, e.Why, e.Server)
}

// ScopeError is a 403 insufficient_scope: the server wants more scopes.
type ScopeError struct {
	Server string
	Scopes []string
	Login  bool // a login must grant them (authorization code grant)
}

// AuthFailure marks the error for host/upstream: its text answers the call.
func (e *ScopeError) AuthFailure() {}

func (e *ScopeError) Error() string {
	if e.Login {
		return fmt.Sprintf("upstream MCP server %q asks for the scope %q (HTTP 403 insufficient_scope): run `aiod upstream login %s` to grant it (the login asks for it)", e.Server, strings.Join(e.Scopes, " "), e.Server)
	}
	return fmt.Sprintf("upstream MCP server %q asks for the scope %q (HTTP 403 insufficient_scope), and refused the token granted with it", e.Server, strings.Join(e.Scopes, " "))
}

type authTransport struct {
	a    *Auth
	base http.RoundTripper
}

func (t authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := t.a
	for attempt := 0; ; attempt++ {
		tok, err := a.token(req.Context())
		if err != nil {
			return nil, err
		}
		r := req.Clone(req.Context())
		if attempt > 0 && req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, errors.New("cannot send the request again")
			}
			if r.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := t.base.RoundTrip(r)
		if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			return resp, err
		}
		cs, _ := ParseChallenges(resp.Header.Values("WWW-Authenticate"))
		if resp.StatusCode == http.StatusForbidden && ChallengeParam(cs, "error") != "insufficient_scope" {
			return resp, nil // a refusal that no token changes: the server's answer as it is
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		retry := attempt == 0 && (req.Body == nil || req.Body == http.NoBody || req.GetBody != nil)
		if resp.StatusCode == http.StatusUnauthorized {
			// The server refused the token: one new token and one more try,
			// then the login is lapsed.
			if retry {
				a.expire(tok)
				continue
			}
			return nil, a.lapse("it refused the OAuth token (HTTP 401) after a refresh")
		}
		scopes := strings.Fields(ChallengeParam(cs, "scope"))
		if err := a.stepUp(scopes); err != nil {
			return nil, err
		}
		if !retry {
			return nil, &ScopeError{Server: a.srv.Name, Scopes: scopes}
		}
		a.expire(tok)
	}
}

// token returns a usable access token, refreshed when it has expired.
func (a *Auth) token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv.OAuth.ClientCredentials() {
		return a.ccToken(ctx)
	}
	a.reload()
	if a.st == nil || a.st.Token == nil {
		return "", &LoginError{a.srv.Name, "not logged in with OAuth"}
	}
	if a.lapsed != "" {
		return "", &LoginError{a.srv.Name, a.lapsed}
	}
	tok, err := a.ts.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) && re.ErrorCode != "":
			a.lapsed = fmt.Sprintf("its OAuth login has lapsed (the authorization server refused the refresh: %s)", re.ErrorCode)
		case a.st.Token.RefreshToken == "":
			a.lapsed = "its OAuth token expired and no refresh token was granted"
		default:
			return "", fmt.Errorf("upstream MCP server %q: its OAuth token could not be refreshed: %v (if this lasts, run `aiod upstream login %s`)", a.srv.Name, err, a.srv.Name)
		}
		a.log.Warn("upstream MCP server: OAuth login lapsed; its tools are withheld until an operator logs in again", "server", a.srv.Name, "why", a.lapsed)
		return "", &LoginError{a.srv.Name, a.lapsed}
	}
	if tok.AccessToken != a.st.Token.AccessToken {
		a.st.Token = tok // rotated: the new refresh token is kept
		if err := a.store.Save(a.srv.Name, a.st); err != nil {
			a.log.Warn("upstream MCP server: keeping its refreshed OAuth token", "server", a.srv.Name, "err", err)
		} else if fi, err := os.Stat(a.store.path(a.srv.Name)); err == nil {
			a.stamp = fi.ModTime()
		}
	}
	return tok.AccessToken, nil
}

// reload reads the state again when its file changed (or was never read).
func (a *Auth) reload() {
	fi, err := os.Stat(a.store.path(a.srv.Name))
	if err != nil {
		if a.st != nil {
			a.st, a.ts, a.lapsed = nil, nil, ""
		}
		return
	}
	if a.st != nil && fi.ModTime().Equal(a.stamp) {
		return
	}
	st, err := a.store.Load(a.srv.Name)
	a.stamp, a.lapsed = fi.ModTime(), ""
	if err != nil {
		a.st, a.ts = nil, nil
		a.log.Warn("upstream MCP server: its OAuth tokens cannot be read", "server", a.srv.Name, "err", err)
		return
	}
	a.st = st
	if st == nil || st.Token == nil {
		a.ts = nil
		return
	}
	a.reloadSource()
}

// expire makes the next token call get a new token, unless tok was
// already replaced.
func (a *Auth) expire(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv.OAuth.ClientCredentials() {
		if a.ccCfg != nil {
			a.ts = nil
		}
		return
	}
	if a.st == nil || a.st.Token == nil || a.st.Token.AccessToken != tok {
		return
	}
	t := *a.st.Token
	t.Expiry = time.Unix(1, 0)
	a.st.Token = &t
	a.reloadSource()
}

func (a *Auth) reloadSource() {
	st := a.st
	cfg := &oauth2.Config{ClientID: st.ClientID, ClientSecret: st.ClientSecret, Scopes: st.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: st.AuthorizationEndpoint, TokenURL: st.TokenEndpoint, AuthStyle: st.AuthStyle}}
	if st.Registration == RegPreregistered && a.srv.OAuth.ClientSecretEnv != "" {
		cfg.ClientSecret, _ = a.lookup(a.srv.OAuth.ClientSecretEnv)
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, withResource(a.client, st.TokenEndpoint, st.Resource))
	a.ts = oauth2.ReuseTokenSource(st.Token, cfg.TokenSource(ctx, st.Token))
}

func (a *Auth) lapse(why string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.srv.OAuth.ClientCredentials() {
		a.lapsed = why
		a.log.Warn("upstream MCP server: OAuth login lapsed; its tools are withheld until an operator logs in again", "server", a.srv.Name, "why", why)
		return &LoginError{a.srv.Name, why}
	}
	return fmt.Errorf("upstream MCP server %q %s (client credentials)", a.srv.Name, why)
}

// stepUp records scopes a 403 asked for: client credentials ask for them
// with the next token; a login keeps them for the next `aiod upstream
// login` and fails the request saying so.
func (a *Auth) stepUp(scopes []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(scopes) == 0 {
		return fmt.Errorf("upstream MCP server %q answered HTTP 403 insufficient_scope without naming a scope", a.srv.Name)
	}
	if a.srv.OAuth.ClientCredentials() {
		added := false
		for _, s := range scopes {
			if !slices.Contains(a.ccScope, s) {
				a.ccScope, added = append(a.ccScope, s), true
			}
		}
		if !added {
			return &ScopeError{Server: a.srv.Name, Scopes: scopes}
		}
		a.log.Info("upstream MCP server: asking for more scopes (step-up)", "server", a.srv.Name, "scopes", strings.Join(scopes, " "))
		return nil
	}
	if a.st != nil {
		changed := false
		for _, s := range scopes {
			if !slices.Contains(a.st.Wanted, s) {
				a.st.Wanted, changed = append(a.st.Wanted, s), true
			}
		}
		if changed {
			if err := a.store.Save(a.srv.Name, a.st); err == nil {
				if fi, err := os.Stat(a.store.path(a.srv.Name)); err == nil {
					a.stamp = fi.ModTime()
				}
			}
		}
	}
	return &ScopeError{Server: a.srv.Name, Scopes: scopes, Login: true}
}

// ccToken gets (or reuses) a client credentials token; the first one
// finds the token endpoint by discovery.
func (a *Auth) ccToken(ctx context.Context) (string, error) {
	if a.ccCfg == nil {
		_, resp, err := Probe(ctx, a.client, a.srv.URL)
		if err != nil {
			return "", fmt.Errorf("upstream MCP server %q: %w", a.srv.Name, err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			return "", fmt.Errorf("upstream MCP server %q answered HTTP %d to a request without a token, not 401 with its authorization metadata", a.srv.Name, resp.StatusCode)
		}
		d, err := Discover(ctx, a.client, a.srv.URL, resp)
		if err != nil {
			return "", fmt.Errorf("upstream MCP server %q: %w", a.srv.Name, err)
		}
		secret, err := secretFrom(a.srv, a.lookup)
		if err != nil {
			return "", err
		}
		a.ccCfg = &clientcredentials.Config{ClientID: a.srv.OAuth.ClientID, ClientSecret: secret, TokenURL: d.Server.TokenEndpoint,
			EndpointParams: url.Values{"resource": {d.Resource.Resource}}}
		if len(a.srv.OAuth.Scopes) > 0 {
			a.ccScope = slices.Clone(a.srv.OAuth.Scopes)
		} else if s := ChallengeParam(d.Challenges, "scope"); s != "" {
			a.ccScope = strings.Fields(s)
		}
	}
	if a.ts == nil || !slices.Equal(a.ccCfg.Scopes, a.ccScope) {
		a.ccCfg.Scopes = slices.Clone(a.ccScope)
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, a.client)
		a.ts = oauth2.ReuseTokenSource(nil, a.ccCfg.TokenSource(ctx))
	}
	tok, err := a.ts.Token()
	if err != nil {
		a.ts = nil
		return "", fmt.Errorf("upstream MCP server %q: the client credentials grant failed: %v", a.srv.Name, err)
	}
	return tok.AccessToken, nil
}

// withResource is c with RFC 8707's resource added to every POST to the
// token endpoint that lacks it (oauth2's refresh sends no extra
// parameter).
func withResource(c *http.Client, tokenURL, resource string) *http.Client {
	cc := *c
	cc.Transport = resourceParam{base: c.Transport, tokenURL: tokenURL, resource: resource}
	return &cc
}

type resourceParam struct {
	base               http.RoundTripper
	tokenURL, resource string
}

func (t resourceParam) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.String() != t.tokenURL || req.Body == nil || t.resource == "" {
		return t.base.RoundTrip(req)
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, err
	}
	if form.Get("resource") == "" {
		form.Set("resource", t.resource)
	}
	enc := []byte(form.Encode())
	r := req.Clone(req.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(enc)), int64(len(enc))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(enc)), nil }
	return t.base.RoundTrip(r)
}
