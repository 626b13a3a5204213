package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
)

// adminPrefix starts every admin route.
const adminPrefix = "/admin/"

// Admin is the operator's API and page: reachable only with its own key
// (never with the API key, never as an MCP tool), off when Key is empty.
type Admin struct {
	Key string
	// Reload rebuilds the catalogue and reports what changed; it returns
	// when the new generation serves.
	Reload func(ctx context.Context) (any, error)
	// Plugins describes each loaded plugin.
	Plugins func() any
	// State is what the page shows of the plugins, tenants and recent
	// calls (GET /admin/state): cheap, the page polls it.
	State func() any
	// Upstreams lists the upstream servers with the tools their pins
	// withhold (GET /admin/upstreams): it may wait for an upstream's list.
	Upstreams func(ctx context.Context) any
	// Accept pins one withheld upstream tool whose definition has the
	// digest the operator reviewed (POST /admin/upstreams/accept); an
	// *AdminError says which answer to give.
	Accept func(ctx context.Context, server, tool, digest string) error
}

// AdminError is an admin action refused with an HTTP status.
type AdminError struct {
	Status int
	Err    error
}

func (e *AdminError) Error() string { return e.Err.Error() }
func (e *AdminError) Unwrap() error { return e.Err }

// adminReloadTimeout bounds POST /admin/reload (a cold compile of a large
// plugin takes tens of seconds); adminListTimeout bounds GET
// /admin/upstreams and POST /admin/upstreams/accept.
const (
	adminReloadTimeout = 5 * time.Minute
	adminListTimeout   = 30 * time.Second
)

// adminJSON answers an admin route: never cached, never sniffed.
func adminJSON(c *fiber.Ctx, status int, data any, err error) error {
	body := map[string]any{"success": err == nil, "data": data, "error": nil}
	if err != nil {
		body["error"] = err.Error()
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Status(status).JSON(body)
}

func (s *Server) routeAdmin(a *Admin) {
	s.app.Get(adminPrefix, func(c *fiber.Ctx) error { return sendAdminPage(c, fiber.StatusOK) })
	s.app.Post(adminPrefix+"reload", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), adminReloadTimeout)
		defer cancel()
		rep, err := a.Reload(ctx)
		return adminJSON(c, fiber.StatusOK, rep, err)
	})
	s.app.Get(adminPrefix+"plugins", func(c *fiber.Ctx) error {
		return adminJSON(c, fiber.StatusOK, a.Plugins(), nil)
	})
	s.app.Get(adminPrefix+"state", func(c *fiber.Ctx) error {
		return adminJSON(c, fiber.StatusOK, a.State(), nil)
	})
	s.app.Get(adminPrefix+"upstreams", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), adminListTimeout)
		defer cancel()
		return adminJSON(c, fiber.StatusOK, a.Upstreams(ctx), nil)
	})
	s.app.Post(adminPrefix+"upstreams/accept", func(c *fiber.Ctx) error {
		if !c.Is("json") {
			return adminJSON(c, fiber.StatusUnsupportedMediaType, nil, errors.New("send the body as application/json"))
		}
		var req struct {
			Server string `json:"server"`
			Tool   string `json:"tool"`
			Digest string `json:"digest"`
		}
		if err := json.Unmarshal(c.Body(), &req); err != nil || req.Server == "" || req.Tool == "" || req.Digest == "" {
			return adminJSON(c, fiber.StatusBadRequest, nil, errors.New(`the body must be {"server": …, "tool": …, "digest": "sha256:…"}, each a non-empty string`))
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), adminListTimeout)
		defer cancel()
		err := a.Accept(ctx, req.Server, req.Tool, req.Digest)
		status := fiber.StatusOK
		if ae := (*AdminError)(nil); errors.As(err, &ae) {
			status = ae.Status
		} else if err != nil {
			status = fiber.StatusInternalServerError
		}
		return adminJSON(c, status, map[string]any{"server": req.Server, "tool": req.Tool, "accepted": err == nil}, err)
	})
}
