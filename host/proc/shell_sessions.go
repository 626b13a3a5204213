package proc

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The session table of the shell sessions: each Key's session, created on
// first use, the least recently used idle one evicted at a bound, the idle
// ones expired.

type session struct {
	key    Key
	sem    chan struct{} // held by the Exec running on the session
	closed atomic.Bool
	used   atomic.Int64 // unix nanos of the last use

	// Guarded by sem; sh is also written under shMu, for peekShell.
	shMu    sync.Mutex
	dir     string // private directory: prelude, command, saved state
	seq     uint64
	sh      *shell
	cwd     string
	started bool
}

func (s *session) touch() { s.used.Store(time.Now().UnixNano()) }

func (s *session) tryLock() bool {
	select {
	case s.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// CloseSession kills the session's shell and forgets its state. It
// reports whether the session existed. It waits for a running command of
// the session to end.
func (m *Manager) CloseSession(ctx context.Context, key Key) (bool, error) {
	m.mu.Lock()
	s, ok := m.sessions[key]
	if ok {
		delete(m.sessions, key)
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	s.closed.Store(true)
	// Kill first so a running command ends now, then take the lock.
	if s.tryLock() {
		s.stop(m)
		<-s.sem
		return true, nil
	}
	if sh := s.peekShell(); sh != nil {
		sh.u.kill(reasonClosed)
	}
	select {
	case s.sem <- struct{}{}:
		s.stop(m)
		<-s.sem
		return true, nil
	case <-ctxDone(ctx):
		return true, ctx.Err()
	}
}

// peekShell returns the shell without holding sem, for killing only.
func (s *session) peekShell() *shell {
	s.shMu.Lock()
	defer s.shMu.Unlock()
	return s.sh
}

// setShell sets the shell; the caller holds sem.
func (s *session) setShell(sh *shell) {
	s.shMu.Lock()
	s.sh = sh
	s.shMu.Unlock()
}

// stop kills the shell and removes the session directory. Caller holds sem.
func (s *session) stop(m *Manager) {
	if s.sh != nil {
		s.sh.stop(m)
		s.setShell(nil)
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// close is stop for Close: the shells are already dead, so sem is free
// soon.
func (s *session) close(m *Manager) {
	s.closed.Store(true)
	s.sem <- struct{}{}
	s.stop(m)
	<-s.sem
}

// Sessions returns the number of live sessions.
func (m *Manager) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// session finds or creates the session of key, evicting an idle one when
// a bound is reached.
func (m *Manager) session(key Key) (*session, error) {
	var evict []*session
	defer func() {
		for _, s := range evict {
			s.stop(m)
			<-s.sem
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errorf(ErrClosed, "process manager closed")
	}
	if s, ok := m.sessions[key]; ok {
		return s, nil
	}
	sameOwner := func(s *session) bool { return s.key.Plugin == key.Plugin && s.key.Owner == key.Owner }
	owned := 0
	for _, s := range m.sessions {
		if sameOwner(s) {
			owned++
		}
	}
	if owned >= m.cfg.MaxSessionsPerOwner {
		s := m.lruIdle(sameOwner)
		if s == nil {
			return nil, errorf(ErrBusy, "too many shell sessions for this plugin and owner (max %d), none idle", m.cfg.MaxSessionsPerOwner)
		}
		evict = append(evict, s)
	} else if len(m.sessions) >= m.cfg.MaxSessions {
		s := m.lruIdle(func(*session) bool { return true })
		if s == nil {
			return nil, errorf(ErrBusy, "too many shell sessions (max %d), none idle", m.cfg.MaxSessions)
		}
		evict = append(evict, s)
	}
	s := &session{key: key, sem: make(chan struct{}, 1)}
	s.touch()
	m.sessions[key] = s
	return s, nil
}

// lruIdle locks and unlinks the least recently used idle session matching
// ok. Caller holds m.mu; the returned session's sem is held.
func (m *Manager) lruIdle(ok func(*session) bool) *session {
	var cands []*session
	for _, s := range m.sessions {
		if ok(s) {
			cands = append(cands, s)
		}
	}
	// Oldest first.
	for len(cands) > 0 {
		oi := 0
		for i, s := range cands {
			if s.used.Load() < cands[oi].used.Load() {
				oi = i
			}
		}
		s := cands[oi]
		if s.tryLock() {
			s.closed.Store(true)
			delete(m.sessions, s.key)
			return s
		}
		cands = append(cands[:oi], cands[oi+1:]...)
	}
	return nil
}

func (m *Manager) expireIdle() {
	cutoff := time.Now().Add(-m.cfg.IdleTimeout).UnixNano()
	var expired []*session
	m.mu.Lock()
	for k, s := range m.sessions {
		if s.used.Load() < cutoff && s.tryLock() {
			s.closed.Store(true)
			delete(m.sessions, k)
			expired = append(expired, s)
		}
	}
	m.mu.Unlock()
	for _, s := range expired {
		s.stop(m)
		<-s.sem
	}
}
