package plugin

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
)

// deadlineCtx is a call's deadline (its grant's timeout) under its parent
// context, with no timer until something waits on it. A call's guest runs
// under its instance's own watch, which only asks Err (wazero's watch);
// most calls never select on Done (only a pool that is full, a plugin
// still loading or a family that waits does). context.WithTimeout would
// allocate a timerCtx and arm and stop a runtime timer for every call, a
// fifth of a no-op guard's cost on the host; this allocates the struct
// and reads the clock on Err. The first Done (or AfterFunc, which a
// derived context uses) makes the real context.WithDeadline, which then
// answers everything.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time
	// start is when the call began, in nanoseconds since clockBase: its
	// instance's pool takes it as the moment the instance went idle
	// (pool.done), so that a call reads the clock once for both.
	start int64
	real  atomic.Pointer[realCtx] // made once (materialise)
	// call is the host functions' state of the call, the context's value
	// of hostfn.CallKey (the engine then wraps the context in no value of
	// its own); nil until set.
	call *hostfn.Call
}

type realCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// withTimeout is context.WithTimeout(parent, timeout) made lazily, from a
// call starting now (one read of the monotonic clock); the stop function
// must be called when the call ends.
func withTimeout(parent context.Context, timeout time.Duration) *deadlineCtx {
	since := time.Since(clockBase)
	d := clockBase.Add(since + timeout)
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	return &deadlineCtx{parent: parent, deadline: d, start: int64(since)}
}

// clockBase anchors monoNow.
var clockBase = time.Now()

// monoNow is the time now read from the monotonic clock alone: time.Now
// reads the wall clock as well, and each read of a clock costs a no-op
// guard op a tenth of its host share on a VM. Its wall reading is
// clockBase's advanced by the monotonic clock (what deadlines and idle
// times compare is the monotonic reading).
func monoNow() time.Time { return clockBase.Add(time.Since(clockBase)) }

// materialise makes the real context once; of two made at once, the one
// stored first is kept and the other cancelled.
func (c *deadlineCtx) materialise() *realCtx {
	if r := c.real.Load(); r != nil {
		return r
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	r := &realCtx{ctx: ctx, cancel: cancel}
	if !c.real.CompareAndSwap(nil, r) {
		cancel()
		return c.real.Load()
	}
	return r
}

// stop releases the real context's timer, if one was made.
func (c *deadlineCtx) stop() {
	if r := c.real.Load(); r != nil {
		r.cancel()
	}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} { return c.materialise().ctx.Done() }

func (c *deadlineCtx) Err() error {
	if r := c.real.Load(); r != nil {
		return r.ctx.Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if time.Until(c.deadline) <= 0 { // the monotonic clock alone
		return context.DeadlineExceeded
	}
	return nil
}

// Value answers hostfn.CallKey with the call's Call once it is set;
// other keys are the parent's values, and once the real context is made,
// its
// (which answers the context package's own key with itself, so that a
// context derived from c registers with it instead of starting a
// goroutine to follow it, and context.Cause sees its deadline).
func (c *deadlineCtx) Value(key any) any {
	if _, ok := key.(hostfn.CallKey); ok && c.call != nil {
		return c.call
	}
	if r := c.real.Load(); r != nil {
		return r.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc lets a context derived from c (context.WithCancel and the
// like) follow it without a goroutine of its own.
func (c *deadlineCtx) AfterFunc(f func()) func() bool {
	return context.AfterFunc(c.materialise().ctx, f)
}

// ended is ctx.Err() != nil, for pool.done after a call returned. Of a
// deadlineCtx without its real context only the parent is asked, not the
// clock: nothing but that real context (a family that waited on it)
// could have acted on the deadline, and a guest the deadline interrupted
// did not return.
func ended(ctx context.Context) bool {
	if d, ok := ctx.(*deadlineCtx); ok {
		if r := d.real.Load(); r != nil {
			return r.ctx.Err() != nil
		}
		return d.parent.Err() != nil
	}
	return ctx.Err() != nil
}

// callStart is when the call of deadline ctx began (false for another
// context).
func callStart(ctx context.Context) (time.Time, bool) {
	if d, ok := ctx.(*deadlineCtx); ok {
		return clockBase.Add(time.Duration(d.start)), true
	}
	return time.Time{}, false
}
