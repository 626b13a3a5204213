package server

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// queueListener closes without resetting the connections the kernel has
// already completed and queued for it: closing a listening socket resets
// them, and a proxy that opened one has sent its request on it, which it
// then does not send to another replica (a POST may not be sent twice).
// stop takes them all from the queue first (acceptQueued), then closes;
// Accept hands them out before it reports the listener closed.
type queueListener struct {
	net.Listener
	mu      sync.Mutex
	queued  []net.Conn
	closing atomic.Bool
}

func (l *queueListener) Accept() (net.Conn, error) {
	if c := l.next(); c != nil {
		return c, nil
	}
	c, err := l.Listener.Accept()
	if err == nil || !l.closing.Load() {
		return c, err
	}
	// stopped while waiting: what stop took from the queue, then closed
	if c := l.next(); c != nil {
		return c, nil
	}
	return nil, net.ErrClosed
}

func (l *queueListener) next() net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queued) == 0 {
		return nil
	}
	c := l.queued[0]
	l.queued = l.queued[1:]
	return c
}

// stop takes the queued connections, then closes the listener. Once.
func (l *queueListener) stop() error {
	if !l.closing.CompareAndSwap(false, true) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if sc, ok := l.Listener.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { l.queued = append(l.queued, acceptQueued(int(fd))...) })
		}
	}
	return l.Listener.Close()
}
