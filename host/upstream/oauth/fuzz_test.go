package oauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzParseChallenges: a server's WWW-Authenticate is untrusted bytes.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource", scope="a b"`,
		`Bearer error="insufficient_scope", scope="mcp:admin"`,
		`Basic realm="x", Bearer`, `Bearer realm=x, error=invalid_token`, `Bearer "`, `, ,Bearer a="\"b\""`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		cs, err := ParseChallenges([]string{h})
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Scheme != strings.ToLower(c.Scheme) {
				t.Fatalf("scheme %q not lower case", c.Scheme)
			}
		}
		_ = ChallengeParam(cs, "scope")
	})
}

// FuzzDiscover: the protected resource and authorization server metadata
// documents are untrusted bytes; whatever they hold, a discovery that
// succeeds has only https or loopback endpoints, and a token endpoint.
func FuzzDiscover(f *testing.F) {
	f.Add([]byte(`{"resource":"http://127.0.0.1:9/mcp","authorization_servers":["http://127.0.0.1:9"]}`),
		[]byte(`{"issuer":"http://127.0.0.1:9","authorization_endpoint":"http://127.0.0.1:9/auth","token_endpoint":"http://127.0.0.1:9/token","code_challenge_methods_supported":["S256"],"response_types_supported":["code"]}`))
	f.Add([]byte(`{"resource":"http://127.0.0.1:9/mcp","authorization_servers":["http://as.example"]}`), []byte(`{}`))
	f.Add([]byte(`{"resource":"http://127.0.0.1:9/mcp","authorization_servers":["http://127.0.0.1:9"]}`),
		[]byte(`{"issuer":"http://127.0.0.1:9","authorization_endpoint":"javascript:x","token_endpoint":"http://evil.example/t","code_challenge_methods_supported":["S256"]}`))
	f.Fuzz(func(t *testing.T, prm, asm []byte) {
		c := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body := asm
			if strings.Contains(r.URL.Path, "oauth-protected-resource") {
				body = prm
			}
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
		})}
		d, err := Discover(context.Background(), c, "http://127.0.0.1:9/mcp", nil)
		if err != nil {
			return
		}
		if d.Server.TokenEndpoint == "" {
			t.Fatal("no token endpoint")
		}
		for _, u := range []string{d.Server.AuthorizationEndpoint, d.Server.TokenEndpoint, d.Server.RegistrationEndpoint, d.Server.RevocationEndpoint, d.Resource.AuthorizationServers[0]} {
			if u == "" {
				continue
			}
			if err := CheckEndpoint(u); err != nil {
				t.Fatalf("accepted %s: %v", u, err)
			}
		}
	})
}

// FuzzPasted: the pasted redirect URL is untrusted: only the redirect URI
// itself is ever accepted.
func FuzzPasted(f *testing.F) {
	f.Add("http://127.0.0.1:4567/callback?code=c&state=s")
	f.Add("http://127.0.0.1:4567@evil.example/callback?code=c")
	f.Add("http://evil.example/callback?code=c&state=s")
	c := newCallback("http://127.0.0.1:4567/callback")
	f.Fuzz(func(t *testing.T, s string) {
		r := c.pasted(s)
		if r.err != nil {
			return
		}
		if !strings.HasPrefix(s, "http://127.0.0.1:4567/callback") || r.res.Code == "" {
			t.Fatalf("accepted %q", s)
		}
	})
}
