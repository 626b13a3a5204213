package plugin

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
)

type derivedKey struct{}

// TestDeadlineCtx: a call's lazy deadline answers as
// context.WithDeadline would: its deadline, its parent's cancellation,
// Done closing at the deadline once asked for, Cause, and contexts
// derived from it following it without a goroutine each.
func TestDeadlineCtx(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()

	c := withTimeout(parent, 30*time.Millisecond)
	defer c.stop()
	if c.Err() != nil || c.real.Load() != nil {
		t.Fatalf("fresh: %v, real %v", c.Err(), c.real.Load())
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) > 30*time.Millisecond {
		t.Fatalf("deadline %v %v", d, ok)
	}
	time.Sleep(40 * time.Millisecond)
	if !errors.Is(c.Err(), context.DeadlineExceeded) || c.real.Load() != nil {
		t.Fatalf("past the deadline, not asked for Done: %v", c.Err())
	}

	// a parent's earlier deadline is the call's
	pd, pcancel := context.WithTimeout(parent, 10*time.Millisecond)
	defer pcancel()
	c2 := withTimeout(pd, time.Hour)
	defer c2.stop()
	if d, _ := c2.Deadline(); time.Until(d) > 10*time.Millisecond {
		t.Fatalf("deadline %v, want the parent's", d)
	}
	select {
	case <-c2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not close at the parent's deadline")
	}

	// Done closes at its own deadline; Cause says why
	c3 := withTimeout(parent, 20*time.Millisecond)
	defer c3.stop()
	select {
	case <-c3.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not close at the deadline")
	}
	if !errors.Is(context.Cause(c3), context.DeadlineExceeded) || ended(c3) != true {
		t.Fatalf("cause %v, ended %v", context.Cause(c3), ended(c3))
	}

	// derived contexts register with the real one: no goroutine each
	c4 := withTimeout(parent, time.Hour)
	defer c4.stop()
	before := runtime.NumGoroutine()
	var stops []context.CancelFunc
	for i := 0; i < 50; i++ {
		_, st := context.WithCancel(context.WithValue(c4, derivedKey{}, i))
		stops = append(stops, st)
	}
	if n := runtime.NumGoroutine() - before; n > 5 {
		t.Errorf("%d goroutines for 50 derived contexts", n)
	}
	for _, st := range stops {
		st()
	}

	// the parent's cancellation, before and after Done was asked for
	c5 := withTimeout(parent, time.Hour)
	defer c5.stop()
	if ended(c5) {
		t.Fatal("ended before anything happened")
	}
	cancel()
	if !errors.Is(c5.Err(), context.Canceled) || !ended(c5) || !errors.Is(context.Cause(c5), context.Canceled) {
		t.Fatalf("parent cancelled: %v %v", c5.Err(), context.Cause(c5))
	}
	select {
	case <-c4.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a materialised context did not follow its parent's cancellation")
	}
}

// TestDeadlineCtxCall: the call's context answers hostfn.CallKey with its
// Call once set (the engine then adds no value of its own), other keys
// with its parent's, and gives its instance's pool the call's start as the
// moment the instance went idle.
func TestDeadlineCtxCall(t *testing.T) {
	parent := context.WithValue(context.Background(), derivedKey{}, "parent's")
	before := time.Now()
	c := withTimeout(parent, time.Hour)
	defer c.stop()
	if v := c.Value(hostfn.CallKey{}); v != nil {
		t.Fatalf("no call yet, but %v", v)
	}
	call := &hostfn.Call{Plugin: "p"}
	c.call = call
	if v, _ := c.Value(hostfn.CallKey{}).(*hostfn.Call); v != call {
		t.Fatalf("CallKey: %v", v)
	}
	if v := c.Value(derivedKey{}); v != "parent's" {
		t.Fatalf("the parent's value: %v", v)
	}
	c.Done() // the real context made: still the call's
	if v, _ := c.Value(hostfn.CallKey{}).(*hostfn.Call); v != call {
		t.Fatalf("CallKey after Done: %v", v)
	}
	at, ok := callStart(c)
	if !ok || at.Before(before) || at.After(time.Now()) {
		t.Fatalf("start %v (%v), want between %v and now", at, ok, before)
	}
	if d, _ := c.Deadline(); d.Sub(at) != time.Hour {
		t.Fatalf("deadline %v is not an hour after the start %v", d, at)
	}
	if _, ok := callStart(context.Background()); ok {
		t.Fatal("a start for another context")
	}
}
