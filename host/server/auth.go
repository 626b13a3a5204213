package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// guard enforces the API key and the Host/Origin rules on every route but
// /health. The key is kept only as its SHA-256, compared in constant time,
// and never logged.
type guard struct {
	keySum   *[32]byte
	adminSum *[32]byte // the admin key's, for /admin/ routes only
	loopback bool
	hosts    map[string]bool
	origins  map[string]bool
	anyOrig  bool
}

func newGuard(o Options) *guard {
	g := &guard{loopback: o.Loopback, hosts: map[string]bool{}, origins: map[string]bool{}}
	if o.APIKey != "" {
		sum := sha256.Sum256([]byte(o.APIKey))
		g.keySum = &sum
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

func (g *guard) check(c *fiber.Ctx) error {
	if c.Path() == "/health" {
		return c.Next()
	}
	host := string(c.Request().Header.Host())
	if !g.hostOK(host) {
		return deny(c, fiber.StatusForbidden, "Forbidden: invalid Host header")
	}
	if origin := string(c.Request().Header.Peek(fiber.HeaderOrigin)); origin != "" && !g.originOK(origin, host) {
		return deny(c, fiber.StatusForbidden, "Forbidden: invalid Origin header")
	}
	if strings.HasPrefix(c.Path(), adminPrefix) {
		// the admin key, and only it, opens /admin/ (the API key does not)
		if g.adminSum == nil {
			return deny(c, fiber.StatusNotFound, "Not Found: the admin API is off (set --admin-key)")
		}
		if !keyMatches(c, g.adminSum) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="aiod-admin"`)
			return deny(c, fiber.StatusUnauthorized, "Unauthorized: send the admin key as 'Authorization: Bearer <admin key>'")
		}
		return c.Next()
	}
	if g.keySum != nil && !g.keyOK(c) {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="aiod"`)
		return deny(c, fiber.StatusUnauthorized, "Unauthorized: send the API key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'")
	}
	return c.Next()
}

func deny(c *fiber.Ctx, status int, msg string) error {
	c.Status(status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.SendString(rpcErrorBody(-32600, msg))
}

func (g *guard) keyOK(c *fiber.Ctx) bool { return keyMatches(c, g.keySum) }

// keyMatches reports whether the request carries the key whose SHA-256 is
// sum, as a Bearer token or x-api-key.
func keyMatches(c *fiber.Ctx, sum *[32]byte) bool {
	got := ""
	if a := string(c.Request().Header.Peek(fiber.HeaderAuthorization)); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		got = strings.TrimSpace(a[7:])
	} else if k := c.Request().Header.Peek("X-Api-Key"); len(k) > 0 {
		got = strings.TrimSpace(string(k))
	}
	if got == "" {
		return false
	}
	gs := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(gs[:], sum[:]) == 1
}

// hostOK: behind loopback, the Host header must name a loopback host (or
// an allowed one), so a DNS-rebound name cannot reach the server.
func (g *guard) hostOK(host string) bool {
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

func isLoopbackName(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
