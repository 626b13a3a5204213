//go:build cgo

package wasmtime

import (
	"context"
	"sync"
	"time"
)

// pollCancel is how often a running call's context is looked at for a
// cancellation that comes before its deadline (a deadline is met exactly).
const pollCancel = 10 * time.Millisecond

// callWatch stops an instance's guest when the context of the call it runs
// ends, as watch does for one-off runs, without asking the context for
// Done: a call's context with a deadline (the registry's, which makes its
// timer only when Done is asked) is looked at when the instance's own
// timer fires, at its deadline or within pollCancel. The timer is made
// once and re-armed only when a call needs it sooner than it is set to
// fire, so a call registers nothing with its context (context.AfterFunc
// and the deadline's timer were a tenth of a no-op guard op's CPU); the
// price is that a cancellation is seen within pollCancel, not at once.
type callWatch struct {
	flag   *stopFlag
	mu     sync.Mutex
	ctx    context.Context // the running call's; nil between calls
	gen    uint32
	t      *time.Timer
	armed  bool
	fireAt time.Time
}

func newCallWatch(flag *stopFlag) *callWatch {
	w := &callWatch{flag: flag}
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

// start watches a call under ctx, of stopFlag generation gen. A context
// with neither a deadline nor a Done channel never ends: nothing is armed.
func (w *callWatch) start(ctx context.Context, gen uint32) {
	d, hasDeadline := ctx.Deadline()
	if !hasDeadline && ctx.Done() == nil {
		return
	}
	if ctx.Err() != nil {
		w.flag.fire(gen)
		return
	}
	w.mu.Lock()
	w.ctx, w.gen = ctx, gen
	if !w.armed || hasDeadline && w.fireAt.After(d) {
		now := time.Now()
		w.arm(now, next(ctx, now))
	}
	w.mu.Unlock()
}

// arm sets the timer to fire d after now. w.mu is held.
func (w *callWatch) arm(now time.Time, d time.Duration) {
	w.t.Reset(d)
	w.armed, w.fireAt = true, now.Add(d)
}

// end ends the call; the timer stays set for the next one (a callback
// that runs meanwhile finds no call).
func (w *callWatch) end() {
	w.mu.Lock()
	w.ctx = nil
	w.mu.Unlock()
}

// check is the timer's callback.
func (w *callWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	switch {
	case w.ctx == nil:
	case w.ctx.Err() != nil:
		w.flag.fire(w.gen) // the guest stops at its next epoch tick
	default:
		now := time.Now()
		w.arm(now, next(w.ctx, now))
	}
}

// stop releases the timer (the instance is closed).
func (w *callWatch) stop() {
	w.mu.Lock()
	w.ctx = nil
	w.armed = false
	w.t.Stop()
	w.mu.Unlock()
}
