package server

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// adminPrefix starts every admin route.
const adminPrefix = "/admin/"

// Admin is the operator's API: reachable only with its own key (never
// with the API key, never as an MCP tool), off when Key is empty.
type Admin struct {
	Key string
	// Reload rebuilds the catalogue and reports what changed; it returns
	// when the new generation serves.
	Reload func(ctx context.Context) (any, error)
	// Plugins describes each loaded plugin.
	Plugins func() any
}

// adminReloadTimeout bounds POST /admin/reload (a cold compile of a large
// plugin takes tens of seconds).
const adminReloadTimeout = 5 * time.Minute

func (s *Server) routeAdmin(a *Admin) {
	s.app.Post(adminPrefix+"reload", func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), adminReloadTimeout)
		defer cancel()
		rep, err := a.Reload(ctx)
		body := map[string]any{"success": err == nil, "data": rep, "error": nil}
		if err != nil {
			body["error"] = err.Error()
		}
		return c.JSON(body)
	})
	s.app.Get(adminPrefix+"plugins", func(c *fiber.Ctx) error {
		return c.JSON(map[string]any{"success": true, "data": a.Plugins()})
	})
}
