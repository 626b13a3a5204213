package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Session defaults (cmd/aiod exposes both as flags).
const (
	DefaultMaxSessions        = 1024
	DefaultSessionIdleTimeout = 30 * time.Minute
)

// clientCaps are the optional client capabilities a server acts on.
type clientCaps struct {
	Raw         json.RawMessage
	Elicitation bool
	Sampling    bool
	Roots       bool
}

func parseClientCaps(raw json.RawMessage) clientCaps {
	c := clientCaps{Raw: raw}
	if len(raw) == 0 || string(raw) == "null" {
		c.Raw = json.RawMessage(`{}`)
		return c
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		c.Raw = json.RawMessage(`{}`)
		return c
	}
	present := func(k string) bool { x, ok := v[k]; return ok && string(x) != "null" }
	c.Elicitation, c.Sampling, c.Roots = present("elicitation"), present("sampling"), present("roots")
	return c
}

func (c clientCaps) any() bool { return c.Elicitation || c.Sampling || c.Roots }

// session is a legacy-era Mcp-Session-Id session: what initialize
// negotiated, the log level, resource subscriptions, the standalone GET
// stream, and the requests in flight (for notifications/cancelled).
type session struct {
	id         string
	owner      string
	version    string
	caps       clientCaps
	clientInfo json.RawMessage
	ctx        context.Context // ended by DELETE, expiry or shutdown
	cancel     context.CancelFunc
	lastUsed   atomic.Int64 // unix nanos
	busy       atomic.Int32 // requests in flight and open streams

	mu       sync.Mutex
	logLevel int // -1: the client has not set one
	subs     map[string]bool
	get      *queue // the standalone GET stream, nil when none
	inflight map[string]context.CancelFunc
}

func (s *session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

func (s *session) level() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}

// track registers a request in flight for cancellation; the returned func
// unregisters it.
func (s *session) track(id json.RawMessage, cancel context.CancelFunc) func() {
	s.busy.Add(1)
	key := string(id)
	s.mu.Lock()
	if s.inflight == nil {
		s.inflight = map[string]context.CancelFunc{}
	}
	s.inflight[key] = cancel
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		s.busy.Add(-1)
		s.touch()
	}
}

func (s *session) cancelRequest(id json.RawMessage) bool {
	s.mu.Lock()
	c := s.inflight[string(id)]
	s.mu.Unlock()
	if c != nil {
		c()
	}
	return c != nil
}

// sendStandalone queues a server-initiated message on the GET stream, if
// one is open; slow streams drop rather than block the sender.
func (s *session) sendStandalone(msg []byte) {
	s.mu.Lock()
	q := s.get
	s.mu.Unlock()
	if q != nil {
		q.trySend(item{msg: msg})
	}
}

func (s *session) close() {
	s.cancel()
	s.mu.Lock()
	q := s.get
	s.get = nil
	s.mu.Unlock()
	if q != nil {
		q.end()
	}
}

// sessions is the bounded session table.
type sessions struct {
	mu   sync.Mutex
	m    map[string]*session
	max  int
	idle time.Duration
	// perOwner, when set, is the most sessions one owner holds (0: no
	// such limit); Options.SessionsPerOwner.
	perOwner func(owner string) int
	// prefix starts every session id: the replica tag and "."
	// (Options.ReplicaID), else empty.
	prefix string
	stop   chan struct{}
	done   sync.WaitGroup
}

// errTooManySessions is answered with 503 when every slot is busy.
var errTooManySessions = errors.New("too many sessions: every session is in use; try again later")

func newSessions(max int, idle time.Duration) *sessions {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if idle <= 0 {
		idle = DefaultSessionIdleTimeout
	}
	t := &sessions{m: map[string]*session{}, max: max, idle: idle, stop: make(chan struct{})}
	t.done.Add(1)
	go t.janitor()
	return t
}

// newID returns 32 random bytes as base64url: visible ASCII only.
func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create opens a session; when the table is full the least recently used
// idle session is ended to make room.
func (t *sessions) create(owner, version string, caps clientCaps, info json.RawMessage) (*session, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{id: t.prefix + newID(), owner: owner, version: version, caps: caps, clientInfo: info, ctx: ctx, cancel: cancel, logLevel: -1}
	s.touch()
	t.mu.Lock()
	var evicted *session
	if lim := t.ownerLimit(owner); lim > 0 {
		// at the owner's limit, its own least recently used idle session
		// makes room; another owner's never does
		n := 0
		for _, o := range t.m {
			if o.owner == owner {
				n++
				if o.busy.Load() == 0 && (evicted == nil || o.lastUsed.Load() < evicted.lastUsed.Load()) {
					evicted = o
				}
			}
		}
		if n < lim {
			evicted = nil
		} else if evicted == nil {
			t.mu.Unlock()
			cancel()
			return nil, errTooManySessions
		} else {
			delete(t.m, evicted.id)
		}
	}
	if evicted == nil && len(t.m) >= t.max {
		for _, o := range t.m {
			if o.busy.Load() == 0 && (evicted == nil || o.lastUsed.Load() < evicted.lastUsed.Load()) {
				evicted = o
			}
		}
		if evicted == nil {
			t.mu.Unlock()
			cancel()
			return nil, errTooManySessions
		}
		delete(t.m, evicted.id)
	}
	t.m[s.id] = s
	t.mu.Unlock()
	if evicted != nil {
		evicted.close()
	}
	return s, nil
}

func (t *sessions) ownerLimit(owner string) int {
	if t.perOwner == nil {
		return 0
	}
	return t.perOwner(owner)
}

// get finds a live session of owner.
func (t *sessions) get(id, owner string) *session {
	t.mu.Lock()
	s := t.m[id]
	t.mu.Unlock()
	if s == nil || s.owner != owner {
		return nil
	}
	if time.Since(time.Unix(0, s.lastUsed.Load())) > t.idle && s.busy.Load() == 0 {
		t.remove(id)
		return nil
	}
	s.touch()
	return s
}

func (t *sessions) remove(id string) bool {
	t.mu.Lock()
	s := t.m[id]
	delete(t.m, id)
	t.mu.Unlock()
	if s != nil {
		s.close()
	}
	return s != nil
}

func (t *sessions) each(f func(*session)) {
	t.mu.Lock()
	all := make([]*session, 0, len(t.m))
	for _, s := range t.m {
		all = append(all, s)
	}
	t.mu.Unlock()
	for _, s := range all {
		f(s)
	}
}

// Len is the number of live sessions.
func (t *sessions) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// byOwner counts the sessions of each owner.
func (t *sessions) byOwner() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for _, s := range t.m {
		out[s.owner]++
	}
	return out
}

func (t *sessions) janitor() {
	defer t.done.Done()
	every := min(t.idle/2, 30*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			var expired []string
			t.mu.Lock()
			for id, s := range t.m {
				if s.busy.Load() == 0 && now.Sub(time.Unix(0, s.lastUsed.Load())) > t.idle {
					expired = append(expired, id)
				}
			}
			t.mu.Unlock()
			for _, id := range expired {
				t.remove(id)
			}
		}
	}
}

func (t *sessions) close() {
	select {
	case <-t.stop:
		return
	default:
	}
	close(t.stop)
	t.done.Wait()
	t.each(func(s *session) { t.remove(s.id) })
}
