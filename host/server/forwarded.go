package server

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/aiodhq/aiod/host/browser"
)

// forwardedContext is the request's context, carrying how the client
// reached aiod when it came through a reverse proxy (any of
// X-Forwarded-Proto, -Host or -Prefix set): browser_get_info's cdp_url is
// then the proxy's (browser.Forwarded). Of a list ("a, b"), the first
// (the client's) value counts.
func forwardedContext(c *fiber.Ctx, h *reqHeaders) context.Context {
	proto, host, prefix := h.forwarded(hFwdProto), h.forwarded(hFwdHost), h.forwarded(hFwdPrefix)
	if proto == "" && host == "" && prefix == "" {
		return c.UserContext()
	}
	if host == "" {
		host = string(c.Request().Host())
	}
	if proto == "" {
		proto = c.Protocol()
	}
	return browser.WithForwarded(c.UserContext(), browser.Forwarded{Proto: proto, Host: host, Prefix: prefix, Query: string(c.Request().URI().QueryString())})
}
