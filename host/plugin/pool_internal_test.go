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
