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
// reset per call, so a call allocates nothing and registers nothing with
// its context (context.AfterFunc costs six allocations and the parent's
// lock per call); the price is that a cancellation is seen within
// pollCancel, not at once.
type watch struct {
	flag api.MutableGlobal
	mu   sync.Mutex
	ctx  context.Context // the running call's; nil between calls
	t    *time.Timer
	// fired: the flag is set for the running call.
	fired bool
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

// start arms the watch for a call under ctx starting at now.
func (w *watch) start(ctx context.Context, now time.Time) {
	w.mu.Lock()
	w.ctx, w.fired = ctx, false
	w.t.Reset(next(ctx, now))
	w.mu.Unlock()
}

// end disarms it, and clears the flag if it was set: a call that finished
// as its deadline fired leaves the instance usable, and the next call sees
// no stale interrupt. A callback already running finds no call.
func (w *watch) end() {
	w.mu.Lock()
	w.ctx = nil
	w.t.Stop()
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
	switch {
	case w.ctx == nil || w.fired:
	case w.ctx.Err() != nil:
		w.flag.Set(1)
		w.fired = true
	default:
		w.t.Reset(next(w.ctx, time.Now()))
	}
}

// stop releases the timer (the instance is closed).
func (w *watch) stop() {
	w.mu.Lock()
	w.ctx = nil
	w.t.Stop()
	w.mu.Unlock()
}
