package plugin

import (
	"context"
	"testing"
	"time"
)

// TestPoolDone: an instance whose call's context ended before the call
// returned is closed, not kept (wazero may have closed its module from
// its context watcher while the guest went on to return normally: a
// kept one would fail every later call); one whose call returned with its
// context alive is kept and reused. Either way the pool's slot is free.
func TestPoolDone(t *testing.T) {
	c := &quotaCompiled{}
	p := newPool(1, c.Instantiate)
	ctx := context.Background()

	first, err := p.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.done(ctx, first)
	if p.size() != 1 || c.alive.Load() != 1 {
		t.Fatalf("after a call: %d idle, %d alive, want the instance kept", p.size(), c.alive.Load())
	}

	cctx, cancel := context.WithCancel(ctx)
	again, err := p.get(cctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatal("the idle instance was not reused")
	}
	cancel() // the call's context ends while it runs
	p.done(cctx, again)
	if p.size() != 0 || c.alive.Load() != 0 || !again.(*quotaInstance).closed.Load() {
		t.Fatalf("after a cancelled call: %d idle, %d alive, want it closed", p.size(), c.alive.Load())
	}

	// the slot was given back: the next call gets a new instance at once
	gctx, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	fresh, err := p.get(gctx)
	if err != nil {
		t.Fatalf("no slot after the cancelled call: %v", err)
	}
	if fresh == again {
		t.Fatal("the closed instance came back")
	}
	p.done(ctx, fresh)
}

// TestPoolGrowWait: a get that finds every instance in a call waits a
// moment for one to come back before making another: a short call's
// instance serves the next call (no new instance); an instance held past
// growWait makes the pool grow.
func TestPoolGrowWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hold     time.Duration // how long the first call keeps its instance
		want     int32         // instances made in all
		sameInst bool
	}{
		{"short call: reused", 0, 1, true},
		{"long call: grows", 20 * growWait, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &quotaCompiled{}
			p := newPool(4, c.Instantiate)
			ctx := context.Background()
			first, err := p.get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				// once the second get waits (a short call: at once)
				for {
					p.mu.Lock()
					w := p.waiting
					p.mu.Unlock()
					if w > 0 {
						break
					}
					time.Sleep(10 * time.Microsecond)
				}
				time.Sleep(tc.hold)
				p.done(ctx, first)
			}()
			t0 := time.Now()
			second, err := p.get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			waited := time.Since(t0)
			if got := c.alive.Load(); got != tc.want {
				t.Errorf("%d instances made, want %d", got, tc.want)
			}
			if (second == first) != tc.sameInst {
				t.Errorf("second call got the first's instance: %v, want %v", second == first, tc.sameInst)
			}
			if !tc.sameInst && waited < growWait {
				t.Errorf("grew after %v, before growWait %v", waited, growWait)
			}
			p.done(ctx, second)
		})
	}
	// alone in the pool (nothing in a call), a get instantiates at once
	c := &quotaCompiled{}
	p := newPool(4, c.Instantiate)
	t0 := time.Now()
	inst, err := p.get(context.Background())
	if err != nil || time.Since(t0) >= growWait {
		t.Errorf("the first get took %v (err %v), want no wait", time.Since(t0), err)
	}
	p.done(context.Background(), inst)
	// a cancelled get gives its slot back
	busy, _ := p.get(context.Background())
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.get(cctx); err == nil {
		t.Error("a cancelled get while every instance is busy returned an instance")
	}
	if len(p.sem) != 1 {
		t.Errorf("%d slots held after the cancelled get, want 1 (the busy call)", len(p.sem))
	}
	p.done(context.Background(), busy)
}
