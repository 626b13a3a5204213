package plugin

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/runtime"
)

// errModuleClosed answers a wake of a module its registry closed.
var errModuleClosed = errors.New("compiled module closed")

// wakeTimeout bounds one compile on a wake (a cold compile of a 5 MB Go
// module takes seconds; the engine's disk cache makes it ~130 ms).
const wakeTimeout = 5 * time.Minute

// lazyCompiled is a compiled module whose machine code can be dropped
// while no instance of it is live (it is "dormant") and compiled again,
// from the engine's disk cache, when one is next needed. The machine code
// of a 5 MB standard-Go module is ~20 MiB, and the engine keeps as much
// again of decoded module beside it: a host with 13 plugins nobody calls
// held 260 MiB of code (RATIONALE, "Footprint: dormant modules"). The
// registry puts modules to sleep when the start-up load ends (none has an
// instance then) and, on the janitor's round, those without an instance
// for the idle timeout.
type lazyCompiled struct {
	exports []string // the module's, kept while dormant

	mu     sync.Mutex
	c      runtime.Compiled // nil while dormant
	waking chan struct{}    // closed when the wake in progress ends
	live   int              // instances and command runs not yet closed
	idle   time.Time        // when live last fell to 0
	closed bool
	// wake compiles the module again: reads its bytes (checking their
	// digest) and compiles them with the config of the first compile.
	wake func(ctx context.Context) (runtime.Compiled, error)

	wakes atomic.Int64 // compiles on a wake, for tests and logs
	// asleep is c == nil while not closed, for a call to see in one load
	// that it must wake the module before its deadline starts (callOp).
	asleep atomic.Bool

	// prewoken is set for a module woken at start because its record
	// said it was awake (prewake.go): the end of the start-up load does
	// not put it back to sleep; the idle timeout does.
	prewoken atomic.Bool
	// called is set once an instance is made for a call (or the module
	// is prewoken) since it last woke: only such a module is noted awake
	// (not one its load check compiled).
	called atomic.Bool
	// note records the module's state (awake or asleep) after each
	// change, in the background; noted is the state last written.
	noteMu sync.Mutex
	note   func(awake bool)
	noted  bool
}

// wakeDelay lengthens every wake (tests: a wake slower than a call's
// timeout, as on a loaded machine).
var wakeDelay atomic.Int64 // a time.Duration

func newLazy(c runtime.Compiled, wake func(context.Context) (runtime.Compiled, error)) *lazyCompiled {
	return &lazyCompiled{exports: c.Exports(), c: c, wake: wake, idle: time.Now()}
}

// wakeRelease is how long after a wake Options.Rested runs: the wakes of
// a burst (a client's first calls of several plugins) share one release.
const wakeRelease = 200 * time.Millisecond

// woke runs Options.Rested once after a burst of wakes.
func (r *Registry) woke() {
	if r.opts.Rested == nil || !r.releasing.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(wakeRelease, func() {
		r.releasing.Store(false)
		if !r.closed.Load() {
			r.opts.Rested()
		}
	})
}

// newDormant is a module listed without compiling it (its check passed
// at an earlier start of this program, checked.go): its first use
// compiles it.
func newDormant(exports []string, wake func(context.Context) (runtime.Compiled, error)) *lazyCompiled {
	l := &lazyCompiled{exports: exports, wake: wake, idle: time.Now()}
	l.asleep.Store(true)
	return l
}

// setWake replaces how the module is compiled again (a later generation
// reusing the module knows where its bytes are now).
func (l *lazyCompiled) setWake(wake func(context.Context) (runtime.Compiled, error)) {
	l.mu.Lock()
	l.wake = wake
	l.mu.Unlock()
}

func (l *lazyCompiled) Exports() []string { return l.exports }

// acquire returns the compiled module, compiling it again if dormant, and
// counts one more live user; done gives it back.
func (l *lazyCompiled) acquire(ctx context.Context) (runtime.Compiled, error) {
	for {
		l.mu.Lock()
		switch {
		case l.closed:
			l.mu.Unlock()
			return nil, errModuleClosed
		case l.c != nil:
			l.live++
			c := l.c
			l.mu.Unlock()
			return c, nil
		case l.waking != nil:
			ch := l.waking
			l.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		l.waking = ch
		wake := l.wake
		l.mu.Unlock()
		// the compile serves every caller waiting for it: one caller's
		// deadline does not abandon it half-way
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
		if d := wakeDelay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		c, err := wake(wctx)
		cancel()
		l.mu.Lock()
		l.waking = nil
		close(ch)
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		if l.closed {
			l.mu.Unlock()
			c.Close(context.Background())
			return nil, errModuleClosed
		}
		l.c = c
		l.asleep.Store(false)
		l.live++
		l.mu.Unlock()
		l.wakes.Add(1)
		go l.noteState()
		return c, nil
	}
}

// awaken compiles the module again if it is dormant (under ctx, as
// acquire), before a call's deadline starts: the grant's timeout bounds
// the plugin's work, not the host's compile (a second or more on a loaded
// machine, which failed a guard's first call after the start-up load).
// A failure is left to the instantiation, which reports it.
func (l *lazyCompiled) awaken(ctx context.Context) {
	if _, err := l.acquire(ctx); err == nil {
		l.done()
	}
}

func (l *lazyCompiled) done() {
	l.mu.Lock()
	l.live--
	if l.live == 0 {
		l.idle = time.Now()
	}
	l.mu.Unlock()
}

func (l *lazyCompiled) Instantiate(ctx context.Context) (runtime.Instance, error) {
	c, err := l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	inst, err := c.Instantiate(ctx)
	if err != nil {
		l.done()
		return nil, err
	}
	return &lazyInstance{Instance: inst, l: l}, nil
}

var _ runtime.Owned = (*lazyCompiled)(nil)

// InstantiateFor implements runtime.Owned for the module it wakes.
func (l *lazyCompiled) InstantiateFor(ctx context.Context, owner string) (runtime.Instance, error) {
	first := !l.called.Swap(true)
	c, err := l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if first { // a module a call's wake (awaken) compiled is noted now
		go l.noteState()
	}
	inst, err := runtime.InstantiateFor(ctx, c, owner)
	if err != nil {
		l.done()
		return nil, err
	}
	return &lazyInstance{Instance: inst, l: l}, nil
}

// Forget implements runtime.Owned (nothing to forget while asleep: the
// snapshots went with the machine code).
func (l *lazyCompiled) Forget(owner string) {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if o, ok := c.(runtime.Owned); ok {
		o.Forget(owner)
	}
}

func (l *lazyCompiled) RunCommand(ctx context.Context, c *hostfn.Call, stdin []byte, maxOut int64) ([]byte, uint32, error) {
	cm, err := l.acquire(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer l.done()
	return cm.RunCommand(ctx, c, stdin, maxOut)
}

// sleep drops the machine code if no instance has been live since before
// idleSince (and, when spare is set, unless it was prewoken); it reports
// whether it did.
func (l *lazyCompiled) sleep(idleSince time.Time, spare bool) bool {
	l.mu.Lock()
	c := l.c
	if c == nil || l.live > 0 || l.closed || l.idle.After(idleSince) || spare && l.prewoken.Load() {
		l.mu.Unlock()
		return false
	}
	l.c = nil
	l.asleep.Store(true)
	l.called.Store(false)
	l.mu.Unlock()
	c.Close(context.Background())
	go l.noteState()
	return true
}

// setNote sets how the module's state is recorded, and the state its
// record holds now.
func (l *lazyCompiled) setNote(noted bool, note func(awake bool)) {
	l.noteMu.Lock()
	l.note, l.noted = note, noted
	l.noteMu.Unlock()
}

// noteState records the module's current state if it differs from the
// one last recorded (the last of several racing calls writes the final
// state: each reads it under noteMu).
func (l *lazyCompiled) noteState() {
	l.noteMu.Lock()
	defer l.noteMu.Unlock()
	l.mu.Lock()
	awake, closed := l.c != nil && l.called.Load(), l.closed
	l.mu.Unlock()
	if l.note == nil || closed || awake == l.noted {
		return
	}
	l.note(awake)
	l.noted = awake
}

// dormant reports whether the machine code is dropped.
func (l *lazyCompiled) dormant() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c == nil
}

// Close releases the module for good. Idempotent.
func (l *lazyCompiled) Close(ctx context.Context) error {
	l.mu.Lock()
	c := l.c
	l.c, l.closed = nil, true
	l.asleep.Store(false)
	l.mu.Unlock()
	if c != nil {
		return c.Close(ctx)
	}
	return nil
}

// lazyInstance counts as a live user of its module until closed.
type lazyInstance struct {
	runtime.Instance
	l    *lazyCompiled
	once sync.Once
}

func (i *lazyInstance) Close(ctx context.Context) error {
	err := i.Instance.Close(ctx)
	i.once.Do(i.l.done)
	return err
}
