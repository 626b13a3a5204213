// Package callwatch stops a wasm instance's guest when the context of the
// call it runs ends, for both engines: each engine supplies how its guest
// is stopped (wazero sets the interrupt rewriter's flag, wasmtime fires the
// call's epoch flag).
//
// A Watch is an instance's own: one timer made once and re-armed only when
// a call needs it sooner than it is set to fire, so a call allocates
// nothing and registers nothing with its context (context.AfterFunc costs
// six allocations and the parent's lock per call, and the registry's
// deadline context makes its timer only when Done is asked), and calls in
// quick succession share one arming (a timer reset and stop per call cost
// a no-op guard op a tenth of its time). The price: a cancellation that
// comes before the deadline is seen within PollCancel, not at once; a
// deadline is met exactly. A timer that fires between calls finds none and
// is not re-armed.
package callwatch

import (
	"context"
	"sync"
	"time"
)

// PollCancel is how often a running call's context is looked at for a
// cancellation that comes before its deadline.
const PollCancel = 10 * time.Millisecond

// Watch watches one instance's calls, one at a time.
type Watch struct {
	stop func(gen uint32) // stops the running call's guest; mu is held
	mu   sync.Mutex
	ctx  context.Context // the running call's; nil between calls
	gen  uint32          // the running call's, passed to stop
	t    *time.Timer
	// fired: stop was called for the running call.
	fired bool
	// armed: t is set to fire at fireAt (and has not yet).
	armed  bool
	fireAt time.Time
}

// New returns a watch that calls stop with a call's generation (what the
// call was started with) when that call's context ends while it runs.
func New(stop func(gen uint32)) *Watch {
	w := &Watch{stop: stop}
	w.t = time.AfterFunc(time.Hour, w.check)
	w.t.Stop()
	return w
}

// next is when to look at ctx again, at now.
func next(ctx context.Context, now time.Time) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return min(d.Sub(now), PollCancel)
	}
	return PollCancel
}

// Start watches a call under ctx, of generation gen. A context with
// neither a deadline nor a Done channel never ends: nothing is armed. One
// that has already ended stops the call at once. A timer already set fires
// within PollCancel of now (it was set at most that far ahead); it is reset
// only when ctx's deadline comes before it, and otherwise no clock is read
// (check looks at the call when it fires, and re-arms for what is left).
func (w *Watch) Start(ctx context.Context, gen uint32) {
	d, hasDeadline := ctx.Deadline()
	if !hasDeadline && ctx.Done() == nil {
		return
	}
	w.mu.Lock()
	w.ctx, w.gen, w.fired = ctx, gen, false
	switch {
	case ctx.Err() != nil:
		w.stop(gen)
		w.fired = true
	case !w.armed || hasDeadline && w.fireAt.After(d):
		now := time.Now()
		w.arm(now, next(ctx, now))
	}
	w.mu.Unlock()
}

// arm sets the timer to fire d after now. w.mu is held.
func (w *Watch) arm(now time.Time, d time.Duration) {
	w.t.Reset(d)
	w.armed, w.fireAt = true, now.Add(d)
}

// End ends the call and reports whether its guest was told to stop (an
// engine whose flag outlives the call clears it then, so that a call that
// finished as its deadline fired leaves the instance usable). The timer
// stays set for the next call; a callback already running finds no call.
func (w *Watch) End() (fired bool) {
	w.mu.Lock()
	fired = w.fired
	w.ctx, w.fired = nil, false
	w.mu.Unlock()
	return fired
}

// check is the timer's callback.
func (w *Watch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	switch {
	case w.ctx == nil || w.fired:
	case w.ctx.Err() != nil:
		w.stop(w.gen)
		w.fired = true
	default:
		now := time.Now()
		w.arm(now, next(w.ctx, now))
	}
}

// Close releases the timer (the instance is closed). It may be called
// more than once.
func (w *Watch) Close() {
	w.mu.Lock()
	w.ctx, w.armed = nil, false
	w.t.Stop()
	w.mu.Unlock()
}
