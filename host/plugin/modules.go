package plugin

import (
	"context"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/runtime"
)

// modules shares compiled modules between the versions of a plugin across
// generations. Compiling is most of a reload's CPU even when the engine's
// cache holds the machine code (wazero decodes and validates every
// function of the module on each compile), so a reload that needs a
// module compiled with the same inputs (module digest, plugin name, form,
// grant: the grant decides the linked families, memory cap and fuel) as
// one still held takes that one. A module no plugin holds any more is kept
// for reuse, one per plugin name (the version replaced last: a rollback,
// or a swap back in an A/B deploy, compiles nothing); the one it displaces,
// those of plugins no longer in the catalogue and those no plugin loaded
// with (refused by its check) are closed.
type modules struct {
	mu     sync.Mutex
	m      map[string]*module
	closed bool // the registry is closed: keep nothing
}

// module is one compiled module and the plugins holding it.
type module struct {
	key      string
	name     string // the plugin's
	compiled runtime.Compiled
	refs     int  // plugins holding it; guarded by modules.mu
	loaded   bool // a plugin passed its check with it; guarded by modules.mu
	// passed holds the keys (Plugin.key: module, manifest, grant) of the
	// plugins that passed their check with it: the same inputs pass
	// again, so a swap back to such a version skips the check's
	// instantiation. Guarded by modules.mu.
	passed map[string]bool
	set    *modules
}

// get returns the held module for key with a new reference, or nil.
func (s *modules) get(key string) *module {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.m[key]
	if m != nil {
		m.refs++
	}
	return m
}

// add holds c, just compiled for key, with one reference. When a module
// for key was added meanwhile (two loads at once), that one is returned
// with a reference and c closed.
func (s *modules) add(key, name string, c runtime.Compiled) *module {
	s.mu.Lock()
	if m := s.m[key]; m != nil {
		m.refs++
		s.mu.Unlock()
		c.Close(context.Background())
		return m
	}
	if s.m == nil {
		s.m = map[string]*module{}
	}
	m := &module{key: key, name: name, compiled: c, refs: 1, set: s}
	s.m[key] = m
	s.mu.Unlock()
	return m
}

// release drops a reference. A module left unreferenced is kept, and the
// other unreferenced modules of its plugin closed.
func (m *module) release() {
	s := m.set
	s.mu.Lock()
	m.refs--
	if m.refs > 0 {
		s.mu.Unlock()
		return
	}
	var drop []runtime.Compiled
	for k, o := range s.m {
		if o.name != m.name || o.refs > 0 {
			continue
		}
		// m itself goes if it is not worth keeping; if it is, it
		// displaces the module kept before it
		if o == m && (s.closed || !m.loaded) || o != m && m.loaded {
			drop = append(drop, o.compiled)
			delete(s.m, k)
		}
	}
	s.mu.Unlock()
	closeAll(drop)
}

// checked marks m as a module a plugin loaded with (kept once released),
// after the check of the plugin with key passed.
func (m *module) checked(key string) {
	m.set.mu.Lock()
	m.loaded = true
	if m.passed == nil {
		m.passed = map[string]bool{}
	}
	m.passed[key] = true
	m.set.mu.Unlock()
}

// hasPassed reports whether a plugin with key passed its check with m.
func (m *module) hasPassed(key string) bool {
	m.set.mu.Lock()
	defer m.set.mu.Unlock()
	return m.passed[key]
}

// prune closes the unreferenced modules of plugins not in keep (after a
// reload: those of removed plugins).
func (s *modules) prune(keep map[string]bool) {
	s.mu.Lock()
	var drop []runtime.Compiled
	for k, m := range s.m {
		if m.refs == 0 && !keep[m.name] {
			drop = append(drop, m.compiled)
			delete(s.m, k)
		}
	}
	s.mu.Unlock()
	closeAll(drop)
}

// close closes every unreferenced module, and makes release close a
// module once unreferenced instead of keeping it. Idempotent.
func (s *modules) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.prune(nil)
}

// held counts the modules held (in use or kept), for tests.
func (s *modules) held() (inUse, kept int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.m {
		if m.refs > 0 {
			inUse++
		} else {
			kept++
		}
	}
	return inUse, kept
}

func closeAll(cs []runtime.Compiled) {
	for _, c := range cs {
		c.Close(context.Background())
	}
}

// lazy lists the modules that can sleep.
func (s *modules) lazy() []*lazyCompiled {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []*lazyCompiled
	for _, m := range s.m {
		if l, ok := m.compiled.(*lazyCompiled); ok {
			ls = append(ls, l)
		}
	}
	return ls
}

// rest puts to sleep the modules (in use or kept) that have had no live
// instance since idleSince (lazy.go), but for those prewoken when spare is
// set, and counts them.
func (s *modules) rest(idleSince time.Time, spare bool) int {
	n := 0
	for _, l := range s.lazy() {
		if l.sleep(idleSince, spare) {
			n++
		} else {
			go l.noteState() // in use: noted awake (prewake.go)
		}
	}
	return n
}
