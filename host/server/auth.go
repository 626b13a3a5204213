package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/aiodhq/aiod/host/internal/netx"
	"github.com/aiodhq/aiod/host/tenant"
)

// guard enforces authentication and the Host/Origin rules on every route
// but /health and the OAuth resource metadata. Keys are kept only as
// their SHA-256, compared in constant time (tenant.Set.Authenticate), and
// never logged. It resolves who is calling to a tenant (tenantOf).
type guard struct {
	tenants  *tenant.Set
	oauth    *Verifier
	adminSum *[32]byte // the admin key's, for /admin/ and /metrics only
	loopback bool
	hosts    map[string]bool
	origins  map[string]bool
	anyOrig  bool
	// hostSeen is the last Host header value hostOK accepted: a client
	// sends the same one on every request, and the answer depends on the
	// value alone (the allowed hosts do not change after newGuard).
	hostSeen atomic.Pointer[string]
}

func newGuard(o Options) *guard {
	g := &guard{tenants: o.Tenants, oauth: o.OAuth, loopback: o.Loopback, hosts: map[string]bool{}, origins: map[string]bool{}}
	if g.tenants == nil {
		g.tenants = tenant.New(nil, o.APIKey)
	}
	if o.Admin != nil && o.Admin.Key != "" {
		sum := sha256.Sum256([]byte(o.Admin.Key))
		g.adminSum = &sum
	}
	for _, h := range o.AllowedHosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			g.hosts[h] = true
		}
	}
	for _, or := range o.AllowedOrigins {
		or = strings.ToLower(strings.TrimRight(strings.TrimSpace(or), "/"))
		if or == "*" {
			g.anyOrig = true
		} else if or != "" {
			g.origins[or] = true
		}
	}
	return g
}

// localTenant is the fiber.Ctx local holding the request's *tenant.Tenant.
const localTenant = "aiod.tenant"

// tenantOf is the tenant the guard resolved for c (nil: the default,
// unrestricted one).
func tenantOf(c *fiber.Ctx) *tenant.Tenant {
	t, _ := c.Locals(localTenant).(*tenant.Tenant)
	return t
}

// queryCredentials are query parameters that carry a credential in other
// servers: a request naming one is refused, whatever else it carries
// (MCP authorization: access tokens MUST NOT be in the URI).
var queryCredentials = []string{"api_key", "apikey", "access_token", "token", "key"}

func (g *guard) check(c *fiber.Ctx) error {
	p := c.Path()
	if p == "/health" || (g.oauth != nil && strings.HasPrefix(p, wellKnownResource)) {
		return c.Next()
	}
	// not copied: the checks below compare it and keep nothing of it
	host := utils.UnsafeString(c.Request().Header.Host())
	if !g.hostOK(host) {
		return deny(c, fiber.StatusForbidden, "Forbidden: invalid Host header")
	}
	if origin := string(c.Request().Header.Peek(fiber.HeaderOrigin)); origin != "" && !g.originOK(origin, host) {
		return deny(c, fiber.StatusForbidden, "Forbidden: invalid Origin header")
	}
	if strings.HasPrefix(p, adminPrefix) || p == metricsPath {
		// the admin key, and only it, opens /admin/ and /metrics (neither
		// the API key nor a tenant's key nor a token does)
		if g.adminSum == nil {
			return deny(c, fiber.StatusNotFound, "Not Found: the admin API is off (set --admin-key)")
		}
		if !keyMatches(credential(c), g.adminSum) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="aiod-admin"`)
			if p == adminPrefix && c.Method() == fiber.MethodGet && strings.Contains(string(c.Request().Header.Peek(fiber.HeaderAccept)), fiber.MIMETextHTML) {
				// a browser cannot send the key when it opens the page:
				// it gets the page (no data in it), which asks for the
				// key and sends it with each of its requests
				return sendAdminPage(c, fiber.StatusUnauthorized)
			}
			return deny(c, fiber.StatusUnauthorized, "Unauthorized: send the admin key as 'Authorization: Bearer <admin key>'")
		}
		return c.Next()
	}
	args := c.Request().URI().QueryArgs()
	for _, q := range queryCredentials {
		if args.Has(q) {
			return g.unauthorized(c, "Unauthorized: credentials are never accepted in the query string; send 'Authorization: Bearer <key or token>'")
		}
	}
	if !g.tenants.HasKeys() && g.oauth == nil {
		return c.Next() // no authentication configured: the default tenant
	}
	cred := credential(c)
	if cred == "" {
		return g.unauthorized(c, "Unauthorized: send the API key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'")
	}
	if g.oauth != nil && looksLikeJWT(cred) {
		name, err := g.oauth.tenant(cred)
		if err != nil {
			return g.unauthorized(c, "Unauthorized: invalid bearer token: "+err.Error())
		}
		t, ok := g.tenants.Lookup(name)
		if !ok {
			return deny(c, fiber.StatusForbidden, "Forbidden: the token's tenant is not one of this server's tenants")
		}
		c.Locals(localTenant, t)
		return c.Next()
	}
	t, ok := g.tenants.Authenticate(cred)
	if !ok {
		return g.unauthorized(c, "Unauthorized: send the API key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'")
	}
	c.Locals(localTenant, t)
	return c.Next()
}

// unauthorized answers 401 with a WWW-Authenticate header naming the
// resource metadata when OAuth is on (RFC 9728 §5.1).
func (g *guard) unauthorized(c *fiber.Ctx, msg string) error {
	if g.oauth != nil {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="aiod", resource_metadata="`+resourceMetadataURL(c)+`"`)
	} else {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="aiod"`)
	}
	return deny(c, fiber.StatusUnauthorized, msg)
}

func deny(c *fiber.Ctx, status int, msg string) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.SendString(rpcErrorBody(-32600, msg))
}

// credential is the request's Bearer token or x-api-key, "" when none.
func credential(c *fiber.Ctx) string {
	if a := string(c.Request().Header.Peek(fiber.HeaderAuthorization)); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	if k := c.Request().Header.Peek("X-Api-Key"); len(k) > 0 {
		return strings.TrimSpace(string(k))
	}
	return ""
}

// keyMatches reports whether got is the key whose SHA-256 is sum.
func keyMatches(got string, sum *[32]byte) bool {
	if got == "" {
		return false
	}
	gs := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(gs[:], sum[:]) == 1
}

// hostOK: behind loopback, the Host header must name a loopback host (or
// an allowed one), so a DNS-rebound name cannot reach the server.
func (g *guard) hostOK(host string) bool {
	if seen := g.hostSeen.Load(); seen != nil && *seen == host {
		return true
	}
	if !g.hostAllowed(host) {
		return false
	}
	kept := strings.Clone(host) // host is the request's buffer
	g.hostSeen.Store(&kept)
	return true
}

// hostAllowed is hostOK's rule.
func (g *guard) hostAllowed(host string) bool {
	h := strings.ToLower(host)
	if h == "" || g.hosts[h] || g.hosts[hostOnly(h)] {
		return true // no Host at all (HTTP/1.0 tools): not a browser, so not a rebinding
	}
	if !g.loopback {
		return true
	}
	return isLoopbackName(hostOnly(h))
}

// originOK: an Origin must be a loopback origin when serving loopback,
// the server's own origin, or an allowed one.
func (g *guard) originOK(origin, host string) bool {
	o := strings.ToLower(strings.TrimRight(origin, "/"))
	if g.anyOrig || g.origins[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	if g.loopback {
		return isLoopbackName(hostOnly(u.Host))
	}
	return strings.EqualFold(u.Host, host)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

// isLoopbackName is netx.Loopback, plus the names below "localhost"
// (RFC 6761: they resolve to loopback), which a Host or Origin header may
// carry.
func isLoopbackName(h string) bool {
	return netx.Loopback(h) || strings.HasSuffix(h, ".localhost")
}
