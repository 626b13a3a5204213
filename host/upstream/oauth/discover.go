// Package oauth gets the bearer tokens of upstream MCP servers by OAuth 2.1
// (spec/upstream.md, "OAuth"): `aiod upstream login` and `logout`
// (Login, Logout), and the HTTP transport hook that puts the token on every
// request to the server, refreshes it, and says how to log in again when it
// cannot (Auth).
//
// The protocol is the go-sdk's (github.com/modelcontextprotocol/go-sdk/auth
// and oauthex: protected resource and authorization server metadata, client
// registration, PKCE, the state and iss checks) over golang.org/x/oauth2;
// this package adds what aiod needs around it: discovery's bounds, the
// loopback redirect and the pasted one, the sealed token files, the grant
// without a user, step-up and revocation.
package oauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxRedirects bounds the redirects discovery and token requests follow.
const maxRedirects = 5

// NewHTTPClient is the client of every request this package makes (the
// probe, metadata, registration, token and revocation requests): it
// verifies with roots (nil: the system's) and follows a redirect only to
// https, or to http on loopback, never from https to http, at most 5.
func NewHTTPClient(roots *x509.CertPool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if roots != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{
		Transport: t,
		Timeout:   30 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if err := CheckEndpoint(req.URL.String()); err != nil {
				return fmt.Errorf("a redirect from %s refused: %w", via[len(via)-1].URL.Redacted(), err)
			}
			if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect from %s to %s refused: from https to http", via[len(via)-1].URL.Redacted(), req.URL.Redacted())
			}
			return nil
		},
	}
}

// CheckEndpoint accepts an https URL, or an http URL on 127.0.0.1, [::1]
// or localhost, without credentials.
func CheckEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q does not parse: %v", raw, err)
	}
	if u.User != nil {
		return fmt.Errorf("%s: credentials in the URL", u.Redacted())
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%s: plain http to a host that is not loopback", u.Redacted())
	}
	return fmt.Errorf("%s: not an https (or loopback http) URL", u.Redacted())
}

func loopback(host string) bool {
	host = strings.ToLower(host)
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// Discovery is what the server and its authorization server say of
// themselves.
type Discovery struct {
	Challenges []oauthex.Challenge                // the 401's WWW-Authenticate
	Resource   *oauthex.ProtectedResourceMetadata // RFC 9728
	Server     *oauthex.AuthServerMeta            // RFC 8414 or OpenID discovery
}

// Probe sends the server an initialize request without a token and
// returns the request and its answer (the body read and replaced): a
// server that wants a login answers 401 with a challenge. A POST answered
// 400, 404 or 405 may be a server of the 2024-11-05 HTTP+SSE transport:
// then its stream's GET is asked, and its answer returned when it is 401.
func Probe(ctx context.Context, c *http.Client, serverURL string) (*http.Request, *http.Response, error) {
	req, resp, err := probePost(ctx, c, serverURL)
	if err != nil || (resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed) {
		return req, resp, err
	}
	greq, err := http.NewRequestWithContext(ctx, http.MethodGet, serverURL, nil)
	if err != nil {
		return nil, nil, err
	}
	greq.Header.Set("Accept", "text/event-stream")
	gresp, err := noFollow(c).Do(greq)
	if err != nil {
		return req, resp, nil
	}
	if gresp.StatusCode != http.StatusUnauthorized {
		gresp.Body.Close() // a stream that answers without a token is not read
		return req, resp, nil
	}
	b, _ := io.ReadAll(io.LimitReader(gresp.Body, 64<<10))
	gresp.Body.Close()
	gresp.Body = io.NopCloser(bytes.NewReader(b))
	return greq, gresp, nil
}

func probePost(ctx context.Context, c *http.Client, serverURL string) (*http.Request, *http.Response, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"aiod","version":"login"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := noFollow(c).Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return req, resp, nil
}

// noFollow is c without redirects: the MCP endpoint itself never redirects
// aiod (spec/upstream.md, redirects).
func noFollow(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// Discover reads the 401's challenge, the server's protected resource
// metadata (the challenge's resource_metadata, else the well-known URIs
// at the endpoint's path and at the root) and its first authorization
// server's metadata (RFC 8414, else OpenID discovery). Each failure is an
// error naming the URL and the reason.
func Discover(ctx context.Context, c *http.Client, serverURL string, resp *http.Response) (*Discovery, error) {
	d := &Discovery{}
	if resp != nil {
		cs, err := ParseChallenges(resp.Header.Values("WWW-Authenticate"))
		if err != nil {
			return nil, err
		}
		d.Challenges = cs
	}
	var errs []error
	for _, p := range metadataURLs(ChallengeParam(d.Challenges, "resource_metadata"), serverURL) {
		if err := CheckEndpoint(p.url); err != nil {
			errs = append(errs, fmt.Errorf("resource metadata %w", err))
			continue
		}
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, p.url, p.resource, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", p.url)
		}
		d.Resource = prm
		break
	}
	if d.Resource == nil {
		return nil, fmt.Errorf("no protected resource metadata (RFC 9728) for %s: %w", serverURL, errors.Join(errs...))
	}
	issuer := d.Resource.AuthorizationServers[0]
	if err := CheckEndpoint(issuer); err != nil {
		return nil, fmt.Errorf("authorization server %w", err)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, c)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	}
	if asm == nil {
		return nil, fmt.Errorf("authorization server %s publishes no metadata (RFC 8414 or OpenID discovery)", issuer)
	}
	for name, u := range map[string]string{"authorization_endpoint": asm.AuthorizationEndpoint, "token_endpoint": asm.TokenEndpoint,
		"registration_endpoint": asm.RegistrationEndpoint, "revocation_endpoint": asm.RevocationEndpoint} {
		if u == "" {
			continue
		}
		if err := CheckEndpoint(u); err != nil {
			return nil, fmt.Errorf("authorization server %s: %s %w", issuer, name, err)
		}
	}
	if asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s: its metadata has no token_endpoint", issuer)
	}
	d.Server = asm
	return d, nil
}

type metaURL struct{ url, resource string }

// metadataURLs are where RFC 9728 metadata may be, in the order the MCP
// authorization specification gives: the challenge's, then the well-known
// URI with the endpoint's path, then at the root (whose resource is the
// origin).
func metadataURLs(fromChallenge, serverURL string) []metaURL {
	var out []metaURL
	if fromChallenge != "" {
		out = append(out, metaURL{fromChallenge, serverURL})
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return out
	}
	m := *u
	m.RawQuery, m.Fragment = "", ""
	if p := strings.TrimLeft(u.Path, "/"); p != "" {
		m.Path = "/.well-known/oauth-protected-resource/" + p
		out = append(out, metaURL{m.String(), serverURL})
	}
	m.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	return append(out, metaURL{m.String(), root.String()})
}

// ParseChallenges parses WWW-Authenticate values (RFC 9110 §11.6.1) with
// the go-sdk's parser, bounded: at most 8 KiB of header.
func ParseChallenges(values []string) ([]oauthex.Challenge, error) {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if n > 8<<10 {
		return nil, fmt.Errorf("WWW-Authenticate: %d bytes, over the 8 KiB aiod reads", n)
	}
	cs, err := oauthex.ParseWWWAuthenticate(values)
	if err != nil {
		return nil, fmt.Errorf("WWW-Authenticate: %w", err)
	}
	return cs, nil
}

// ChallengeParam is the named parameter of the first Bearer challenge that
// has it ("" when none has).
func ChallengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}
