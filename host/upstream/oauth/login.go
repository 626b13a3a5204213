package oauth

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Registration values of State.
const (
	RegPreregistered    = "preregistered"
	RegMetadataDocument = "metadata_document"
	RegDynamic          = "dynamic"
)

// LoginOptions are the inputs of Login.
type LoginOptions struct {
	// Server is the policy's entry (its URL and "oauth").
	Server caps.UpstreamServer
	// RootCAs verify the server and its authorization server (nil: the
	// system's).
	RootCAs *x509.CertPool
	// Store keeps the result.
	Store *Store
	// Lookup reads aiod's environment (the client secret's variable).
	Lookup func(string) (string, bool)
	// Open shows the authorization URL to the user's browser (nil: it is
	// only printed). Called in its own goroutine.
	Open func(authURL string) error
	// NoBrowser: print the URL and read the redirect URL the user pastes
	// from Stdin (the loopback listener still takes a redirect that
	// reaches it).
	NoBrowser bool
	Stdin     io.Reader
	// Out gets what the user reads: the URL, what was done.
	Out io.Writer
	// CallbackPort fixes the loopback redirect's port (0: any free one),
	// for a client registered with an exact redirect URI.
	CallbackPort int
	// Scopes are asked for besides the policy's (or the server's).
	Scopes []string
}

// redirectPath is the path of the loopback redirect URI.
const redirectPath = "/callback"

// Login runs the authorization code grant for the server (PKCE S256,
// resource, state and iss checked) and keeps its tokens, and its client
// when it was registered dynamically, in the store.
func Login(ctx context.Context, o LoginOptions) (*State, error) {
	srv := o.Server
	if srv.OAuth == nil {
		return nil, fmt.Errorf("upstream MCP server %q has no \"oauth\" in the policy", srv.Name)
	}
	if srv.OAuth.ClientCredentials() {
		return nil, fmt.Errorf("upstream MCP server %q uses the client_credentials grant: aiod gets its tokens itself, there is nothing to log in to", srv.Name)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	c := NewHTTPClient(o.RootCAs)
	req, resp, err := Probe(ctx, c, srv.URL)
	if err != nil {
		return nil, fmt.Errorf("upstream MCP server %q: %w", srv.Name, err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		return nil, fmt.Errorf("upstream MCP server %q answered HTTP %d to a request without a token, not 401: it does not ask for an OAuth login", srv.Name, resp.StatusCode)
	}
	d, err := Discover(ctx, c, srv.URL, resp)
	if err != nil {
		return nil, fmt.Errorf("upstream MCP server %q: %w", srv.Name, err)
	}
	prev, err := o.Store.Load(srv.Name)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.CallbackPort))
	if err != nil {
		return nil, fmt.Errorf("the loopback redirect listener: %w", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d%s", ln.Addr().(*net.TCPAddr).Port, redirectPath)
	cb := newCallback(redirect)
	hs := &http.Server{Handler: cb}
	go hs.Serve(ln)
	defer hs.Close()

	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:           redirect,
		Client:                c,
		RequestRefreshToken:   true,
		AcceptUnadvertisedIss: true, // a present iss is compared, advertised or not
	}
	reg := ""
	switch {
	case srv.OAuth.ClientID != "":
		pc := &oauthex.ClientCredentials{ClientID: srv.OAuth.ClientID}
		if srv.OAuth.ClientSecretEnv != "" {
			secret, err := secretFrom(srv, o.Lookup)
			if err != nil {
				return nil, err
			}
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient, reg = pc, RegPreregistered
	case prev != nil && prev.Registration == RegDynamic && prev.Issuer == d.Server.Issuer && prev.ClientID != "":
		pc := &oauthex.ClientCredentials{ClientID: prev.ClientID, Issuer: prev.Issuer}
		if prev.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: prev.ClientSecret}
		}
		cfg.PreregisteredClient, reg = pc, RegDynamic
		fmt.Fprintf(o.Out, "Using the client registered with %s at an earlier login (%s).\n", prev.Issuer, prev.ClientID)
	default:
		if srv.OAuth.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: srv.OAuth.ClientMetadataURL}
		}
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              "aiod",
		}}
		reg = RegDynamic
	}
	// The scopes: the policy's, else those the server names; with those a
	// 403 asked for since the last login (step-up) and those granted then.
	extra := slices.Clone(o.Scopes)
	if prev != nil {
		extra = append(append(extra, prev.Scopes...), prev.Wanted...)
	}
	cfg.ScopeFilter = func(discovered []string) []string {
		s := discovered
		if len(srv.OAuth.Scopes) > 0 {
			s = srv.OAuth.Scopes
		}
		out := slices.Clone(s)
		for _, x := range extra {
			if x != "offline_access" && !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
		return out
	}
	var (
		got    *oauth2.Config
		gotTok *oauth2.Token
	)
	cfg.NewTokenSource = func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
		got, gotTok = c, t
		return oauth2.StaticTokenSource(t), nil
	}
	cfg.AuthorizationCodeFetcher = func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if err := sameEndpoint(a.URL, d.Server.AuthorizationEndpoint); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "Open this URL in a browser to log in to %q:\n\n  %s\n\n", srv.Name, a.URL)
		if o.Open != nil && !o.NoBrowser {
			go func() {
				if err := o.Open(a.URL); err != nil {
					fmt.Fprintf(o.Out, "(the browser did not open: %v; open the URL yourself)\n", err)
				}
			}()
		}
		if o.NoBrowser {
			fmt.Fprintf(o.Out, "Then paste here the URL the browser was sent to (it starts with %s):\n", redirect)
			go cb.readPasted(o.Stdin)
		}
		select {
		case r := <-cb.result:
			return r.res, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("upstream MCP server %q: login: %w", srv.Name, err)
	}
	if got == nil || gotTok == nil {
		return nil, fmt.Errorf("upstream MCP server %q: login: no token came back", srv.Name)
	}
	if got.Endpoint.TokenURL != d.Server.TokenEndpoint {
		return nil, fmt.Errorf("upstream MCP server %q: login: the token endpoint changed during the login (%s, then %s)", srv.Name, d.Server.TokenEndpoint, got.Endpoint.TokenURL)
	}
	if reg == RegDynamic && srv.OAuth.ClientMetadataURL != "" && got.ClientID == srv.OAuth.ClientMetadataURL {
		reg = RegMetadataDocument
	}
	st := &State{
		Resource: d.Resource.Resource, Issuer: d.Server.Issuer,
		AuthorizationEndpoint: d.Server.AuthorizationEndpoint, TokenEndpoint: d.Server.TokenEndpoint,
		RevocationEndpoint: d.Server.RevocationEndpoint,
		ClientID:           got.ClientID, AuthStyle: got.Endpoint.AuthStyle, Registration: reg,
		Scopes: got.Scopes, Token: gotTok,
	}
	if reg == RegDynamic {
		st.ClientSecret = got.ClientSecret // the policy's secret stays in its variable
	}
	if err := o.Store.Save(srv.Name, st); err != nil {
		return nil, fmt.Errorf("upstream MCP server %q: keeping the tokens: %w", srv.Name, err)
	}
	return st, nil
}

// secretFrom reads the client secret from the variable the policy names.
func secretFrom(srv caps.UpstreamServer, lookup func(string) (string, bool)) (string, error) {
	v, ok := lookup(srv.OAuth.ClientSecretEnv)
	if !ok || v == "" {
		return "", fmt.Errorf("upstream MCP server %q: oauth client_secret_env: environment variable %s is not set", srv.Name, srv.OAuth.ClientSecretEnv)
	}
	return v, nil
}

// sameEndpoint checks that the URL to open is the metadata's authorization
// endpoint (scheme, host, port and path), an https or loopback URL.
func sameEndpoint(raw, endpoint string) error {
	if err := CheckEndpoint(raw); err != nil {
		return fmt.Errorf("authorization URL %w", err)
	}
	u, err1 := url.Parse(raw)
	e, err2 := url.Parse(endpoint)
	if err1 != nil || err2 != nil || u.Scheme != e.Scheme || u.Host != e.Host || u.Path != e.Path {
		return fmt.Errorf("authorization URL %s is not the authorization server's endpoint %s", u.Redacted(), endpoint)
	}
	return nil
}

// callback takes the authorization response: at the loopback redirect URI,
// or pasted.
type callback struct {
	redirect *url.URL
	once     sync.Once
	result   chan cbResult
}

type cbResult struct {
	res *auth.AuthorizationResult
	err error
}

func newCallback(redirect string) *callback {
	u, _ := url.Parse(redirect)
	return &callback{redirect: u, result: make(chan cbResult, 1)}
}

func (c *callback) deliver(r cbResult) {
	c.once.Do(func() { c.result <- r })
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != redirectPath || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	res, err := fromRedirect(r.URL.Query())
	c.deliver(cbResult{res, err})
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "aiod: the login failed: %v\n", err)
		return
	}
	fmt.Fprintln(w, "aiod has the answer of the authorization server; you may close this window.")
}

// readPasted reads the pasted redirect URL: it must be the redirect URI
// (scheme, host, port, path) with the answer in its query.
func (c *callback) readPasted(in io.Reader) {
	if in == nil {
		return
	}
	sc := bufio.NewScanner(io.LimitReader(in, 64<<10))
	sc.Buffer(make([]byte, 16<<10), 16<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		c.deliver(c.pasted(line))
		return
	}
	err := sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	c.deliver(cbResult{nil, fmt.Errorf("reading the pasted redirect URL: %w", err)})
}

func (c *callback) pasted(line string) cbResult {
	u, err := url.Parse(line)
	if err != nil {
		return cbResult{nil, fmt.Errorf("the pasted text is not a URL: %v", err)}
	}
	if u.Scheme != c.redirect.Scheme || u.Host != c.redirect.Host || u.Path != c.redirect.Path {
		return cbResult{nil, fmt.Errorf("the pasted URL %s is not the redirect URL %s: refused", u.Redacted(), c.redirect)}
	}
	res, err := fromRedirect(u.Query())
	return cbResult{res, err}
}

// fromRedirect reads an authorization response (RFC 6749 §4.1.2, RFC 9207).
func fromRedirect(q url.Values) (*auth.AuthorizationResult, error) {
	if e := q.Get("error"); e != "" {
		msg := "the authorization server refused: " + e
		if d := q.Get("error_description"); d != "" {
			msg += " (" + d + ")"
		}
		return nil, errors.New(msg)
	}
	for _, k := range []string{"code", "state", "iss"} {
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("the redirect has %q twice", k)
		}
	}
	if q.Get("code") == "" {
		return nil, errors.New("the redirect has no code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
