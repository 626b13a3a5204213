package wazero

import (
	"context"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// pollCancel is how often a running call's context is looked at for a
// cancellation that comes before its deadline (a deadline is met exactly).
const pollCancel = 10 * time.Millisecond

// watch sets an instrumented instance's interrupt flag when the context of
// the call it runs ends. It is the instance's own: one timer made once and
// re-armed only when a call needs it sooner than it is set to fire, so a
// call allocates nothing and registers nothing with its context
// (context.AfterFunc costs six allocations and the parent's lock per
// call), and calls in quick succession share one arming (a timer reset
// and stop per call cost a no-op guard a tenth of its time); the price is
// that a cancellation is seen within pollCancel, not at once. A timer that
// fires between calls finds none and is not re-armed.
type watch struct {
	flag api.MutableGlobal
	mu   sync.Mutex
	ctx  context.Context // the running call's; nil between calls
	t    *time.Timer
	// fired: the flag is set for the running call.
	fired bool
	// armed: t is set to fire at fireAt (and has not yet).
	armed  bool
	fireAt time.Time
}

func newWatch(flag api.MutableGlobal) *watch {
	w := &watch{flag: flag}
	w.t = time.AfterFunc(time.Hour, w.check)
	w.t.Stop()
	return w
}

// next is when to look at ctx again, at now.
func next(ctx context.Context, now time.Time) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return min(d.Sub(now), pollCancel)
	}
	return pollCancel
}

// start arms the watch for a call under ctx. A timer already set fires
// within pollCancel of now (it was set at most that far ahead); it is
// reset only when ctx's deadline comes before it, and otherwise no clock
// is read (check looks at the call when it fires, and re-arms for what is
// left).
func (w *watch) start(ctx context.Context) {
	w.mu.Lock()
	w.ctx, w.fired = ctx, false
	if d, ok := ctx.Deadline(); !w.armed || ok && w.fireAt.After(d) {
		now := time.Now()
		w.arm(now, next(ctx, now))
	}
	w.mu.Unlock()
}

// arm sets the timer to fire d after now. w.mu is held.
func (w *watch) arm(now time.Time, d time.Duration) {
	w.t.Reset(d)
	w.armed, w.fireAt = true, now.Add(d)
}

// end ends the call, and clears the flag if it was set: a call that
// finished as its deadline fired leaves the instance usable, and the next
// call sees no stale interrupt. The timer stays set for the next call; a
// callback already running finds no call.
func (w *watch) end() {
	w.mu.Lock()
	w.ctx = nil
	if w.fired {
		w.flag.Set(0)
		w.fired = false
	}
	w.mu.Unlock()
}

// check is the timer's callback.
func (w *watch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	switch {
	case w.ctx == nil || w.fired:
	case w.ctx.Err() != nil:
		w.flag.Set(1)
		w.fired = true
	default:
		now := time.Now()
		w.arm(now, next(w.ctx, now))
	}
}

// stop releases the timer (the instance is closed).
func (w *watch) stop() {
	w.mu.Lock()
	w.ctx = nil
	w.armed = false
	w.t.Stop()
	w.mu.Unlock()
}
