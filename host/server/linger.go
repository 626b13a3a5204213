package server

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/mcp"
)

// Lingering close. fasthttp answers a body over mcp.MaxBodyBytes with 413
// before reading it, then closes the connection. A client still sending
// (Python's urllib writes the whole body before it reads) then has unread
// data in the server's receive buffer, so the close becomes a reset and
// the client sees a broken pipe instead of the 413. A connection marked
// in the error handler therefore lingers when closed, as Apache and nginx
// do: the response is already written, the write side is shut down, and
// what the client still sends is read and dropped, up to lingerBytes and
// for at most lingerTime (lingerIdle without data ends it sooner), before
// the real close.
const (
	lingerBytes = 4 * mcp.MaxBodyBytes
	lingerTime  = 10 * time.Second
	lingerIdle  = 2 * time.Second
)

// lingerListener hands out connections that can linger on close.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c}, nil
}

type lingerConn struct {
	net.Conn
	linger atomic.Bool
	closed atomic.Bool
}

// lingerOnClose marks c (when it came from a lingerListener) to drain the
// client's unread data when it is closed.
func lingerOnClose(c net.Conn) {
	if lc, ok := c.(*lingerConn); ok {
		lc.linger.Store(true)
	}
}

// Close drains the connection first when it was marked. Idempotent.
func (c *lingerConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	if c.linger.Load() {
		c.drain()
	}
	return c.Conn.Close()
}

func (c *lingerConn) drain() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite() // the response is out: tell the client we are done
	}
	end := time.Now().Add(lingerTime)
	buf := make([]byte, 32<<10)
	for n := 0; n < lingerBytes; {
		d := time.Now().Add(lingerIdle)
		if d.After(end) {
			d = end
		}
		_ = c.Conn.SetReadDeadline(d)
		m, err := c.Conn.Read(buf)
		n += m
		if err != nil { // EOF (the client closed), the deadline, or a reset
			return
		}
	}
}
