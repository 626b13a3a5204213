package browser

import (
	"context"
	"fmt"
	"sync"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
)

// Session is a flat session on one target (a tab). It is a cdp.Session:
// typed cdproto commands run on it with cdp.Call. Its events are kept in
// a bounded buffer (MaxSessionEvents, MaxSessionEventBytes; the oldest
// go first) for Events, and handed to Subscribe's subscribers.
type Session struct {
	c        *Conn
	ID       target.SessionID
	TargetID target.ID

	mu      sync.Mutex
	events  []Event
	bytes   int
	dropped int
	wake    chan struct{}
	subs    subscribers
	closed  chan struct{}
	reason  error
	endOnce sync.Once
}

// Event is one event of a session.
type Event struct {
	Method string
	Params jsonv2.Value
}

// Conn is the connection the session is on.
func (s *Session) Conn() *Conn { return s.c }

// Call runs a command on the session's target (cdp.Session).
func (s *Session) Call(ctx context.Context, method string, params, result any) error {
	return call(ctx, s.c, s, method, params, result)
}

// Raw sends a command with raw JSON params and returns the raw result.
func (s *Session) Raw(ctx context.Context, method string, params []byte) ([]byte, error) {
	return s.c.send(ctx, s, method, params)
}

// Subscribe delivers the session's events of method (cdp.Session); a
// subscriber that does not keep up loses events.
func (s *Session) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return s.subs.subscribe(method)
}

// Err is why the session ended (ErrTargetClosed, ErrTargetCrashed or the
// connection's error), nil while it is usable.
func (s *Session) Err() error {
	select {
	case <-s.closed:
		return s.reason
	default:
		return nil
	}
}

// Detach ends the session (Target.detachFromTarget). Idempotent.
func (s *Session) Detach(ctx context.Context) error {
	if s.Err() != nil {
		return nil
	}
	err := s.c.Call(ctx, "Target.detachFromTarget", map[string]any{"sessionId": s.ID}, nil)
	s.c.endSession(s.ID, fmt.Errorf("%w: the session was detached", ErrTargetClosed))
	return err
}

func (s *Session) end(err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.reason = err
		close(s.closed)
		s.mu.Unlock()
		s.subs.close()
	})
}

// event buffers one event of the session.
func (s *Session) event(method string, params jsonv2.Value) {
	if method == "Inspector.targetCrashed" {
		s.c.endSession(s.ID, fmt.Errorf("%w: the page crashed (target %s)", ErrTargetCrashed, s.TargetID))
	}
	s.subs.publish(method, params)
	n := len(method) + len(params)
	s.mu.Lock()
	if n > MaxSessionEventBytes {
		s.dropped++
		s.mu.Unlock()
		return
	}
	s.events = append(s.events, Event{Method: method, Params: params})
	s.bytes += n
	for len(s.events) > MaxSessionEvents || s.bytes > MaxSessionEventBytes {
		s.bytes -= len(s.events[0].Method) + len(s.events[0].Params)
		s.events[0] = Event{}
		s.events = s.events[1:]
		s.dropped++
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// EventOverhead is what Events counts for one event besides its method
// and params: the framing of its JSON in an answer.
const EventOverhead = 64

// Events takes from the buffer, in order, up to max events that match
// (nil matches every event) and fit in maxBytes together (EventOverhead
// each besides their JSON; an event that alone does not fit is dropped), waiting up to
// wait for the first one. Events that do not match stay. It returns them,
// how many events the buffer dropped since the last call, and whether more
// matching events remain.
func (s *Session) Events(ctx context.Context, match func(method string) bool, max, maxBytes int, wait time.Duration) (evs []Event, dropped int, more bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		s.mu.Lock()
		size := 0
		keep := s.events[:0:0]
		taken := 0 // bytes leaving the buffer
		for i, e := range s.events {
			if match != nil && !match(e.Method) {
				keep = append(keep, e)
				continue
			}
			n := len(e.Method) + len(e.Params)
			if n+EventOverhead > maxBytes {
				// It can never be delivered: drop it.
				s.dropped++
				taken += n
				continue
			}
			if len(evs) >= max || size+n+EventOverhead > maxBytes {
				more = true
				keep = append(keep, s.events[i:]...)
				break
			}
			evs = append(evs, e)
			size += n + EventOverhead
			taken += n
		}
		if taken > 0 {
			s.events = keep
			s.bytes -= taken
		}
		dropped = s.dropped
		s.dropped = 0
		s.mu.Unlock()
		if len(evs) > 0 || more || wait <= 0 {
			return evs, dropped, more, nil
		}
		if e := s.Err(); e != nil {
			return nil, dropped, false, e
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, dropped, false, nil
		}
		t := time.NewTimer(left)
		select {
		case <-s.wake:
		case <-s.closed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, dropped, false, ctx.Err()
		}
		t.Stop()
		s.mu.Lock()
		s.dropped += dropped // not yet reported
		s.mu.Unlock()
	}
}

// subscribers are the Subscribe channels of a session, by method. publish
// never blocks: a full channel loses the event.
type subscribers struct {
	mu     sync.Mutex
	subs   map[string]map[chan jsonv2.Value]struct{}
	closed bool
}

func (s *subscribers) subscribe(method string) (<-chan jsonv2.Value, func()) {
	ch := make(chan jsonv2.Value, 256)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(ch)
		return ch, func() {}
	}
	if s.subs == nil {
		s.subs = map[string]map[chan jsonv2.Value]struct{}{}
	}
	if s.subs[method] == nil {
		s.subs[method] = map[chan jsonv2.Value]struct{}{}
	}
	s.subs[method][ch] = struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, ok := s.subs[method][ch]; ok {
				delete(s.subs[method], ch)
				close(ch)
			}
		})
	}
}

func (s *subscribers) publish(method string, params jsonv2.Value) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs[method] {
		select {
		case ch <- params:
		default:
		}
	}
}

func (s *subscribers) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, m := range s.subs {
		for ch := range m {
			close(ch)
		}
	}
	s.subs = nil
}
