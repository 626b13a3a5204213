// Package server is the only package that imports Fiber: it routes HTTP to
// the MCP dispatcher in host/mcp, and guards every route with the API key
// and the Host/Origin checks (auth.go).
package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
)

// Options configure the HTTP server.
type Options struct {
	MCP    *mcp.Server
	Logger *slog.Logger
	// APIKey, when not empty, is required on every route but /health, as
	// "Authorization: Bearer <key>" or "x-api-key: <key>".
	APIKey string
	// Loopback says the server listens on a loopback address only: then
	// the Host header must name a loopback host (DNS rebinding).
	Loopback bool
	// AllowedHosts are further Host header values accepted (host or
	// host:port); AllowedOrigins further Origin values (scheme://host[:port],
	// or "*" for any).
	AllowedHosts   []string
	AllowedOrigins []string
	// Capabilities reports what the host can do for GET /v1/capabilities;
	// nil answers an empty report.
	Capabilities func() any
	// Admin is the operator's API under /admin/ (admin.go); nil or an
	// empty key leaves it off.
	Admin *Admin
	// Status serves GET /v2/sandbox and the per-domain part of GET
	// /v1/capabilities (status.go); nil leaves both out.
	Status *Status
	// Tenancy: the tenants keys resolve to (nil: APIKey alone, tenant
	// "default"), OAuth bearer tokens (nil: off), the audit log of the
	// requests refused before dispatch, and the metrics served at
	// /metrics behind the admin key (nil: off). tenancy.go.
	Tenants *tenant.Set
	OAuth   *Verifier
	Audit   *audit.Log
	Metrics *Metrics
}

// Server serves /mcp and the operational routes.
type Server struct {
	app   *fiber.App
	mcp   *mcp.Server
	log   *slog.Logger
	opts  Options
	guard *guard
	// draining: Drain was called (drain.go); ln is what Serve serves
	draining atomic.Bool
	lnMu     sync.Mutex
	ln       *onceListener
}

// New builds the Fiber app.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{mcp: opts.MCP, log: opts.Logger, opts: opts, guard: newGuard(opts)}
	s.app = fiber.New(fiber.Config{
		DisableStartupMessage: true,
		BodyLimit:             mcp.MaxBodyBytes,
		ReadTimeout:           5 * time.Minute,
		IdleTimeout:           2 * time.Minute,
		ErrorHandler:          s.errorHandler,
	})
	s.app.Use(s.front) // one middleware: each is a walk of Fiber's route stack
	s.app.Get("/health", s.health)
	s.app.Get("/v1/capabilities", s.capabilities)
	s.routeStatus()
	s.app.All("/mcp", s.handleMCP)
	if opts.Admin != nil && opts.Admin.Key != "" {
		s.routeAdmin(opts.Admin)
	}
	s.routeTenancy()
	return s
}

// The Accept values of the MCP clients (a streamable HTTP client must
// accept both).
const (
	acceptBoth         = "application/json, text/event-stream"
	acceptBothSpaced   = "application/json,text/event-stream"
	acceptBothReversed = "text/event-stream, application/json"
)

// mcpRequest is what handleMCP keeps for one request, in one allocation:
// the exchange mcp serves, the quota slot's release (which the
// exchange's Hold can take) and the request's headers.
type mcpRequest struct {
	ex      mcp.Exchange
	release func()
	headers reqHeaders // ex.Header
}

func (s *Server) handleMCP(c *fiber.Ctx) error {
	release, refused := s.admit(c)
	if release == nil {
		return refused
	}
	m := &mcpRequest{release: release, ex: mcp.Exchange{Method: c.Method(), Principal: principal(c), Context: c.Context()}}
	m.headers.scan(c)
	m.ex.Header = &m.headers
	defer func() {
		if m.release != nil {
			m.release()
		}
	}()
	ex := &m.ex
	if tracing.On() {
		ex.Trace = [2]string{string(c.Request().Header.Peek("traceparent")), string(c.Request().Header.Peek("tracestate"))}
	}
	if ex.Method == fiber.MethodPost {
		ex.Body = body(c)
		ex.Hold = m // a call that becomes a task keeps the slot (mcpRequest.Hold)
	}
	var start time.Time
	if s.opts.Audit != nil {
		start = time.Now()
	}
	r := s.mcp.Serve(forwardedContext(c, &m.headers), ex) // behind a proxy, cdp_url is the proxy's (forwarded.go)
	if s.opts.Audit != nil && ex.Method == fiber.MethodPost {
		if err := s.auditOutside(c, start, r); err != nil {
			return err
		}
	}
	for _, h := range r.Header {
		c.Set(h.Name, h.Value)
	}
	c.Status(r.Status)
	if r.Stream != nil {
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set("X-Accel-Buffering", "no")
		st, done := r.Stream, m.release
		m.release = nil // the quota slot is held until the stream ends
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			if done != nil {
				defer done()
			}
			st.Pump(w)
		})
		return nil
	}
	if len(r.Body) == 0 {
		return nil
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(r.Body)
}

// body is the request's body as Fiber's Body gives it: decoded when it
// came with a Content-Encoding (Body's work), else fasthttp's buffer
// itself (Body's answer then, without its visit of every header and its
// list of encodings).
func body(c *fiber.Ctx) []byte {
	if len(c.Request().Header.PeekAll(fiber.HeaderContentEncoding)) == 0 {
		return c.Request().Body()
	}
	return c.Body()
}

func (s *Server) capabilities(c *fiber.Ctx) error {
	var data any = map[string]any{}
	if s.opts.Capabilities != nil {
		data = s.opts.Capabilities()
	}
	s.addDomains(c, data)
	return c.JSON(map[string]any{"success": true, "message": "capabilities", "data": data, "hint": nil})
}

func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	code := fiber.StatusInternalServerError
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code = fe.Code
	}
	msg := err.Error()
	rpc := -32603
	switch code {
	case fiber.StatusRequestEntityTooLarge:
		msg, rpc = "request body exceeds 8 MiB", -32600
		lingerOnClose(c.Context().Conn()) // the client may still be sending: drain, so it reads this
	case fiber.StatusNotFound, fiber.StatusMethodNotAllowed:
		rpc = -32601
	case fiber.StatusBadRequest:
		rpc = -32600
	}
	c.Status(code)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.SendString(rpcErrorBody(rpc, msg))
}

// rpcErrorBody is a JSON-RPC error without id: every refusal on /mcp is
// still something an MCP client can parse.
func rpcErrorBody(code int, msg string) string {
	m, _ := json.Marshal(msg) // a string always marshals
	return `{"jsonrpc":"2.0","id":null,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`
}

// Serve accepts connections on ln until Shutdown.
// A listener closed by Drain ends it with nil.
func (s *Server) Serve(ln net.Listener) error {
	q := &queueListener{Listener: ln}
	ol := &onceListener{Listener: lingerListener{q}, stop: q.stop}
	s.lnMu.Lock()
	s.ln = ol
	s.lnMu.Unlock()
	return s.app.Listener(ol)
}

// Shutdown stops accepting, ends open MCP streams and waits for in-flight
// requests up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.mcp != nil {
		s.mcp.Close()
	}
	return s.app.ShutdownWithContext(ctx)
}
