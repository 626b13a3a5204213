package mcp

import (
	"bytes"
	"sync"
	"time"
)

// SSEWriter is the transport's side of an event stream: Write buffers,
// Flush sends. An error from either means the client is gone.
type SSEWriter interface {
	Write(p []byte) (int, error)
	Flush() error
}

// keepAlive is how often an idle stream gets a comment line, which is also
// how a client that went away is noticed.
const keepAlive = time.Second

// item is one message on a stream; final marks a request's response.
type item struct {
	msg    []byte
	final  bool
	status int // HTTP status, should the final message end up as a JSON body
}

// Stream is an SSE response body. The transport calls Pump once; it
// returns when the stream is over or the client has gone.
type Stream struct {
	first *item
	q     *queue
}

// Pump writes the stream to w until its final message, the end of the
// queue, or a write error (then the queue is marked gone, which cancels
// the work behind it).
func (s *Stream) Pump(w SSEWriter) {
	defer s.q.leave()
	var buf []byte
	write := func(it item) bool {
		buf = frame(buf[:0], it.msg)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	if s.first != nil {
		if s.first.msg == nil || !write(*s.first) || s.first.final {
			return
		}
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case it, ok := <-s.q.ch:
			if !ok || it.msg == nil {
				return
			}
			if !write(it) || it.final {
				return
			}
		case <-t.C:
			if _, err := w.Write([]byte(":\n\n")); err != nil || w.Flush() != nil {
				return
			}
		case <-s.q.stop:
			return
		}
	}
}

// frame appends msg as one SSE "message" event. JSON carries newlines only
// as insignificant whitespace; each line becomes its own data: line.
func frame(b, msg []byte) []byte {
	b = append(b, "event: message\n"...)
	for {
		i := bytes.IndexAny(msg, "\r\n")
		if i < 0 {
			break
		}
		b = append(b, "data: "...)
		b = append(b, msg[:i]...)
		b = append(b, '\n')
		msg = msg[i+1:]
	}
	b = append(b, "data: "...)
	b = append(b, msg...)
	return append(b, '\n', '\n')
}

// queue carries messages from the work behind a stream to the transport.
// Producers never block on a client that has gone.
type queue struct {
	ch       chan item
	gone     chan struct{} // closed when the consumer left
	stop     chan struct{} // closed by the producer side to end an open-ended stream
	once     sync.Once
	stopOnce sync.Once
	onGone   func()
}

func newQueue(n int, onGone func()) *queue {
	return &queue{ch: make(chan item, n), gone: make(chan struct{}), stop: make(chan struct{}), onGone: onGone}
}

// send queues a message; false when the consumer is gone.
func (q *queue) send(it item) bool {
	select {
	case <-q.gone:
		return false
	default:
	}
	select {
	case q.ch <- it:
		return true
	case <-q.gone:
		return false
	}
}

// trySend queues without waiting (broadcasts drop for slow consumers).
func (q *queue) trySend(it item) bool {
	select {
	case q.ch <- it:
		return true
	default:
		return false
	}
}

// leave marks the consumer gone (idempotent).
func (q *queue) leave() {
	q.once.Do(func() {
		close(q.gone)
		if q.onGone != nil {
			q.onGone()
		}
	})
}

// end asks the consumer to finish an open-ended stream.
func (q *queue) end() { q.stopOnce.Do(func() { close(q.stop) }) }

func (q *queue) isGone() bool {
	select {
	case <-q.gone:
		return true
	default:
		return false
	}
}
