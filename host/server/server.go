// Package server is the only package that imports Fiber: it routes HTTP to
// the MCP dispatcher in host/mcp.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/aiodhq/aiod/host/mcp"
)

// MaxBodyBytes bounds a request body; larger bodies get 413.
const MaxBodyBytes = 8 << 20

// Options configure the HTTP server.
type Options struct {
	MCP    *mcp.Server
	Logger *slog.Logger
}

// Server serves /mcp and the operational routes.
type Server struct {
	app *fiber.App
	mcp *mcp.Server
	log *slog.Logger
}

// New builds the Fiber app.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{mcp: opts.MCP, log: opts.Logger}
	s.app = fiber.New(fiber.Config{
		DisableStartupMessage: true,
		BodyLimit:             MaxBodyBytes,
		ReadTimeout:           5 * time.Minute,
		IdleTimeout:           2 * time.Minute,
		ErrorHandler:          s.errorHandler,
	})
	s.app.Get("/health", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(`{"status":"ok"}`)
	})
	s.app.Post("/mcp", s.postMCP)
	return s
}

func (s *Server) postMCP(c *fiber.Ctx) error {
	r := s.mcp.Handle(c.UserContext(), mcp.Principal{}, c.Body())
	if r.Status == fiber.StatusAccepted || len(r.Body) == 0 {
		return c.SendStatus(r.Status)
	}
	c.Status(r.Status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(r.Body)
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	code := fiber.StatusInternalServerError
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code = fe.Code
	}
	msg := err.Error()
	if code == fiber.StatusRequestEntityTooLarge {
		msg = "request body exceeds 8 MiB"
	}
	c.Status(code)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.SendString(`{"error":` + quote(msg) + `}`)
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.app.Listener(ln) }

// Shutdown stops accepting and waits for in-flight requests up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.app.ShutdownWithContext(ctx)
}

// Test runs one request through the app (for tests).
func (s *Server) App() *fiber.App { return s.app }

func quote(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
