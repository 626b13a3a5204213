package browser

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp/remote"
)

// Errors of a connection and its sessions (wrapped; match with errors.Is).
var (
	// ErrUnavailable: no browser to talk to (off, unreachable, starting,
	// or the connection was lost).
	ErrUnavailable = errors.New("browser unavailable")
	// ErrTargetClosed: the session's target was closed or detached.
	ErrTargetClosed = errors.New("target closed")
	// ErrTargetCrashed: the session's page crashed.
	ErrTargetCrashed = errors.New("target crashed")
)

// Event buffering limits of one session: past them the oldest events are
// dropped (and counted), so a page that floods events costs the host at
// most this much per session.
const (
	MaxSessionEvents     = 1024
	MaxSessionEventBytes = 8 << 20
)

// Conn is one websocket connection to a browser (chromedp's remote
// client), shared by every caller. Commands are matched to their answers
// by id; messages of flat sessions are routed by sessionId; each session
// keeps its events in a bounded buffer. The browser target itself is a
// cdp.Session: Conn.Call sends browser-level commands.
type Conn struct {
	ws      *remote.Conn
	version Version
	next    atomic.Int64

	mu       sync.Mutex
	pending  map[int64]*pendingCall
	sessions map[target.SessionID]*Session
	subs     subscribers

	done      chan struct{}
	err       error // why done closed; valid after done
	closeOnce sync.Once
}

type pendingCall struct {
	ch      chan *cdproto.Message
	session target.SessionID
}

// Dial connects to the browser's websocket URL (v.WebSocketURL).
func Dial(ctx context.Context, v Version) (*Conn, error) {
	ws, err := remote.DialContext(ctx, v.WebSocketURL)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", ErrUnavailable, v.WebSocketURL, err)
	}
	c := &Conn{ws: ws, version: v, pending: map[int64]*pendingCall{}, sessions: map[target.SessionID]*Session{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

// Version is what the browser said about itself when the connection was
// made.
func (c *Conn) Version() Version { return c.version }

// Done is closed when the connection ends; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it is up).
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Close ends the connection and every session on it. Idempotent.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("%w: the connection was closed", ErrUnavailable))
	return nil
}

func (c *Conn) fail(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		close(c.done)
		pending := c.pending
		c.pending = map[int64]*pendingCall{}
		sessions := c.sessions
		c.sessions = map[target.SessionID]*Session{}
		c.mu.Unlock()
		c.ws.Close()
		for _, p := range pending {
			close(p.ch)
		}
		for _, s := range sessions {
			s.end(err)
		}
		c.subs.close()
	})
}

// read dispatches every message of the browser until the connection ends.
func (c *Conn) read() {
	for {
		msg := new(cdproto.Message)
		if err := c.ws.Read(context.Background(), msg); err != nil {
			c.fail(fmt.Errorf("%w: the connection to the browser was lost: %w", ErrUnavailable, err))
			return
		}
		switch {
		case msg.ID != 0:
			c.mu.Lock()
			p := c.pending[msg.ID]
			delete(c.pending, msg.ID)
			c.mu.Unlock()
			if p != nil {
				p.ch <- msg // buffered, one answer
			}
		case msg.Method != "" && msg.SessionID != "":
			c.mu.Lock()
			s := c.sessions[msg.SessionID]
			c.mu.Unlock()
			if s != nil {
				s.event(string(msg.Method), msg.Params)
			}
		case msg.Method != "":
			c.browserEvent(msg)
		}
	}
}

// browserEvent handles an event of the browser target: a detached session
// ends, and subscribers get it.
func (c *Conn) browserEvent(msg *cdproto.Message) {
	if string(msg.Method) == target.DetachedFromTarget.Method {
		var ev target.EventDetachedFromTarget
		if jsonv2.Unmarshal(msg.Params, &ev) == nil {
			c.endSession(ev.SessionID, fmt.Errorf("%w: the target was closed or detached", ErrTargetClosed))
		}
	}
	c.subs.publish(string(msg.Method), msg.Params)
}

func (c *Conn) endSession(id target.SessionID, err error) {
	c.mu.Lock()
	s := c.sessions[id]
	delete(c.sessions, id)
	var fail []*pendingCall
	for k, p := range c.pending {
		if p.session == id {
			fail = append(fail, p)
			delete(c.pending, k)
		}
	}
	c.mu.Unlock()
	if s != nil {
		s.end(err)
	}
	for _, p := range fail {
		close(p.ch)
	}
}

// send sends one command (on session, "" for the browser) and waits for
// its answer: the raw result, or a *cdproto.Error from the browser, or an
// error wrapping ErrUnavailable, ErrTargetClosed or the context's.
func (c *Conn) send(ctx context.Context, session *Session, method string, params jsonv2.Value) (jsonv2.Value, error) {
	id := c.next.Add(1)
	p := &pendingCall{ch: make(chan *cdproto.Message, 1)}
	msg := &cdproto.Message{ID: id, Method: cdproto.MethodType(method), Params: params}
	if session != nil {
		p.session, msg.SessionID = session.ID, session.ID
	}
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return nil, c.err
	default:
	}
	if session != nil {
		if err := session.Err(); err != nil {
			c.mu.Unlock()
			return nil, err
		}
	}
	c.pending[id] = p
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.ws.Write(ctx, msg); err != nil {
		forget()
		c.fail(fmt.Errorf("%w: writing to the browser: %w", ErrUnavailable, err))
		return nil, c.err
	}
	select {
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case ans, ok := <-p.ch:
		if !ok {
			if session != nil && session.Err() != nil {
				return nil, session.Err()
			}
			return nil, c.Err()
		}
		if ans.Error != nil {
			return nil, ans.Error
		}
		return ans.Result, nil
	}
}

// Raw sends a command with raw JSON params on the browser target and
// returns the raw result.
func (c *Conn) Raw(ctx context.Context, method string, params []byte) ([]byte, error) {
	return c.send(ctx, nil, method, params)
}

// Call runs a browser-level command (cdp.Session): params is marshalled
// with JSON v2, the result decoded into result when it is not nil.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return call(ctx, c, nil, method, params, result)
}

// Subscribe delivers the browser target's events of method (cdp.Session).
// A subscriber that does not keep up loses events (the channel holds 256)
// rather than blocking the connection.
func (c *Conn) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return c.subs.subscribe(method)
}

func call(ctx context.Context, c *Conn, s *Session, method string, params, result any) error {
	var raw jsonv2.Value
	switch p := params.(type) {
	case nil:
	case jsonv2.Value:
		raw = p
	default:
		b, err := jsonv2.Marshal(params)
		if err != nil {
			return fmt.Errorf("%s: encoding params: %w", method, err)
		}
		raw = b
	}
	res, err := c.send(ctx, s, method, raw)
	if err != nil {
		return err
	}
	if result != nil && len(res) > 0 {
		if err := jsonv2.Unmarshal(res, result, jsonv2.AllowInvalidUTF8(true)); err != nil {
			return fmt.Errorf("%s: decoding result: %w", method, err)
		}
	}
	return nil
}

// Attach attaches to a target with a flat session (Target.attachToTarget)
// whose events are buffered from the start.
func (c *Conn) Attach(ctx context.Context, id target.ID) (*Session, error) {
	res, err := cdp.Call(ctx, c, target.AttachToTarget, target.AttachToTargetParams{TargetID: id, Flatten: ptr(true)})
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, ID: res.SessionID, TargetID: id, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return nil, c.err
	default:
	}
	c.sessions[s.ID] = s
	c.mu.Unlock()
	return s, nil
}

// Targets lists the browser's targets (Target.getTargets).
func (c *Conn) Targets(ctx context.Context) ([]*target.Info, error) {
	res, err := cdp.Call(ctx, c, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil, err
	}
	return res.TargetInfos, nil
}

func ptr[T any](v T) *T { return &v }
