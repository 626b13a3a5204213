package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
)

// OAuth makes the server an OAuth 2.1 resource server (MCP authorization,
// 2026-07-28): it accepts bearer JWTs its issuer signed for its audience,
// and names the tenant by a claim of the token.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier (the "iss"
	// every token must carry, and what the resource metadata names).
	Issuer string
	// Audience is this server's resource identifier: a token whose "aud"
	// does not name it is refused.
	Audience string
	// JWKS is where the issuer's signing keys are: a JWKS file, or an
	// http(s) URL on a loopback host (fetched at start and again, at most
	// every jwksRefresh, when a token names a key it does not hold).
	JWKS string
	// TenantClaim is the claim whose value is the tenant's name ("sub"
	// when empty).
	TenantClaim string
}

// wellKnownResource is RFC 9728's protected resource metadata path.
const wellKnownResource = "/.well-known/oauth-protected-resource"

// jwksRefresh is the least time between two fetches of a JWKS URL.
const jwksRefresh = 30 * time.Second

// oauthAlgs are the signature algorithms accepted (asymmetric only: a
// resource server holds no shared secret with the issuer).
var oauthAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Verifier checks bearer JWTs against an OAuth configuration (LoadOAuth).
type Verifier struct {
	o      OAuth
	claim  string
	parser *jwt.Parser

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
}

// LoadOAuth checks o and loads its keys; a JWKS that cannot be read is
// an error.
func LoadOAuth(o OAuth) (*Verifier, error) {
	if o.Issuer == "" || o.Audience == "" || o.JWKS == "" {
		return nil, errors.New("oauth: --oauth-issuer, --oauth-audience and --oauth-jwks are all required")
	}
	if u, err := url.Parse(o.JWKS); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		if !isLoopbackName(hostOnly(u.Host)) {
			return nil, fmt.Errorf("oauth: JWKS URL %s: only a loopback host is fetched (give a file otherwise)", o.JWKS)
		}
	}
	v := &Verifier{o: o, claim: o.TenantClaim}
	if v.claim == "" {
		v.claim = "sub"
	}
	v.parser = jwt.NewParser(jwt.WithIssuer(o.Issuer), jwt.WithAudience(o.Audience), jwt.WithExpirationRequired(),
		jwt.WithValidMethods(oauthAlgs), jwt.WithLeeway(30*time.Second))
	if err := v.load(context.Background()); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *Verifier) load(ctx context.Context) error {
	var data []byte
	var err error
	if strings.HasPrefix(v.o.JWKS, "http://") || strings.HasPrefix(v.o.JWKS, "https://") {
		data, err = fetchJWKS(ctx, v.o.JWKS)
	} else {
		data, err = os.ReadFile(v.o.JWKS)
	}
	if err != nil {
		return fmt.Errorf("oauth: JWKS %s: %w", v.o.JWKS, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return fmt.Errorf("oauth: JWKS %s: %w", v.o.JWKS, err)
	}
	for _, k := range set.Keys {
		if !k.IsPublic() {
			return fmt.Errorf("oauth: JWKS %s: key %q is not a public key (a resource server holds public keys only)", v.o.JWKS, k.KeyID)
		}
	}
	v.mu.Lock()
	v.keys, v.fetched = set, time.Now()
	v.mu.Unlock()
	return nil
}

func fetchJWKS(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// Never follow a redirect away from loopback.
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{}).DialContext}}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// key returns the public key a token names (by kid; the only key when the
// token names none and the set holds one).
func (v *Verifier) key(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	for attempt := 0; attempt < 2; attempt++ {
		v.mu.Lock()
		keys, fetched := v.keys, v.fetched
		v.mu.Unlock()
		var cand []jose.JSONWebKey
		if kid != "" {
			cand = keys.Key(kid)
		} else if len(keys.Keys) == 1 {
			cand = keys.Keys
		}
		if len(cand) > 0 {
			return cand[0].Key, nil
		}
		if attempt > 0 || !strings.HasPrefix(v.o.JWKS, "http") || time.Since(fetched) < jwksRefresh {
			break
		}
		if err := v.load(context.Background()); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no key %q in the JWKS", kid)
}

// tenant verifies token and returns the value of its tenant claim.
func (v *Verifier) tenant(token string) (string, error) {
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.key); err != nil {
		return "", err
	}
	name, _ := claims[v.claim].(string)
	if name == "" {
		return "", fmt.Errorf("the token has no %q claim", v.claim)
	}
	return name, nil
}

// looksLikeJWT: three base64url parts (a JWS compact serialization); an
// API key never has two dots.
func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 && len(s) > 20 }

// resourceMetadataURL is where this server's RFC 9728 metadata is, as
// the client reached it.
func resourceMetadataURL(c *fiber.Ctx) string {
	return c.Protocol() + "://" + string(c.Request().Header.Host()) + wellKnownResource
}

// routeOAuth serves the protected resource metadata (RFC 9728 §3), at the
// well-known path and at its /mcp suffix form.
func (s *Server) routeOAuth(v *Verifier) {
	o := v.o
	meta := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "max-age=300")
		return c.JSON(map[string]any{
			"resource":                 o.Audience,
			"authorization_servers":    []string{o.Issuer},
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "aiod",
		})
	}
	s.app.Get(wellKnownResource, meta)
	s.app.Get(wellKnownResource+"/mcp", meta)
}
