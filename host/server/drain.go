package server

import (
	"net"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// Drain starts the server's stop, ahead of its Shutdown: it stops
// accepting connections (a proxy's new connection is refused, which it
// retries on another replica, the request not having been sent; those the
// kernel had already completed are taken and served: queueListener), while the
// connections already open are still served: every response closes its
// connection, and /health on them answers 503 {"status":"draining"}.
// Shutdown, a drain delay later, then finds no idle connection to close
// under a request a proxy is sending on it (which a proxy does not retry,
// a POST having been sent).
func (s *Server) Drain() {
	s.draining.Store(true)
	s.lnMu.Lock()
	ln := s.ln
	s.lnMu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// front is the middleware of every route: Drain's (a response while
// draining closes its connection), then the guard's checks (auth.go).
func (s *Server) front(c *fiber.Ctx) error {
	if s.draining.Load() {
		c.Set(fiber.HeaderConnection, "close")
	}
	return s.guard.check(c)
}

// health is GET /health: ok, or 503 while draining.
func (s *Server) health(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	if s.draining.Load() {
		return c.Status(fiber.StatusServiceUnavailable).SendString(`{"status":"draining"}`)
	}
	return c.SendString(`{"status":"ok"}`)
}

// onceListener closes its listener once: Drain closes it, and Shutdown's
// close after that is not an error (which would end Shutdown before it
// waits for the open connections).
type onceListener struct {
	net.Listener
	stop func() error // the close: queueListener's stop
	once sync.Once
	err  error
}

func (l *onceListener) Close() error {
	l.once.Do(func() { l.err = l.stop() })
	return l.err
}
