package plugin

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// TestOwnerInstances: an owner's instances quota caps its pools below the
// grant's cap, and never raises them above it.
func TestOwnerInstances(t *testing.T) {
	p := &Plugin{Grant: &caps.Grant{MaxInstances: 8}, ownerMax: func(owner string) int {
		return map[string]int{"alice": 2, "bob": 100}[owner]
	}}
	for owner, want := range map[string]int{"alice": 2, "bob": 8, "carol": 8} {
		if got := cap(p.pool(owner).sem); got != want {
			t.Errorf("%s: pool of %d instances, want %d", owner, got, want)
		}
	}
}

// quotaCompiled makes quotaInstances and counts those alive.
type quotaCompiled struct {
	runtime.Compiled
	alive atomic.Int32
}

func (c *quotaCompiled) Instantiate(context.Context) (runtime.Instance, error) {
	c.alive.Add(1)
	return &quotaInstance{c: c}, nil
}

type quotaInstance struct {
	c      *quotaCompiled
	closed atomic.Bool
}

func (i *quotaInstance) Call(context.Context, *hostfn.Call, string, ...uint64) (int32, error) {
	return 0, nil
}

func (i *quotaInstance) Close(context.Context) error {
	if i.closed.CompareAndSwap(false, true) {
		i.c.alive.Add(-1)
	}
	return nil
}

// quotaRegistry is a registry of two fake plugins, a and b, whose owners'
// instances quota is quota (alice 2, others none).
func quotaRegistry() (r *Registry, a, b *Plugin) {
	r = &Registry{}
	r.slots = newOwnerSlots(func(owner string) int { return map[string]int{"alice": 2}[owner] }, r.evictOldest)
	mk := func(name string) *Plugin {
		return &Plugin{Manifest: &abi.Manifest{Name: name}, Grant: &caps.Grant{MaxInstances: 8}, compiled: &quotaCompiled{}, slots: r.slots}
	}
	a, b = mk("a"), mk("b")
	r.cat.Store(&Catalog{Plugins: []*Plugin{a, b}})
	return r, a, b
}

func alive(p *Plugin) int { return int(p.compiled.(*quotaCompiled).alive.Load()) }

// TestOwnerInstancesAcrossPlugins: the instances quota bounds an owner's
// instances of all its plugins together: at it, a call of another plugin
// closes the owner's oldest idle instance, or waits while all are in
// calls; another owner is not bounded by it.
func TestOwnerInstancesAcrossPlugins(t *testing.T) {
	r, a, b := quotaRegistry()
	ctx := context.Background()
	pa, ia, err := a.get(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	pb, ib, err := b.get(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	// both in calls: a third instance waits, until its context ends
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, _, err := b.get(short, "alice"); err != context.DeadlineExceeded {
		t.Fatalf("a third instance with two in calls: %v, want to wait until the deadline", err)
	}
	cancel()
	if n := r.slots.holding("alice"); n != 2 {
		t.Fatalf("alice holds %d slots, want 2", n)
	}
	// a third call waits; one goes idle: the waiter closes it and takes
	// its slot
	got := make(chan error, 1)
	go func() {
		pl, inst, err := b.get(ctx, "alice")
		if err == nil {
			pl.put(inst, time.Now())
		}
		got <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); r.slots.waiters.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the third call never waited for a slot")
		}
		goruntime.Gosched()
	}
	pa.put(ia, time.Now()) // a goes idle: the waiter wakes and closes it
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if alive(a) != 0 || a.IdleInstances("alice") != 0 {
		t.Errorf("a: %d alive, %d idle; want its idle instance closed to make room", alive(a), a.IdleInstances("alice"))
	}
	pb.put(ib, time.Now())
	if n := alive(a) + alive(b); n != 2 || r.slots.holding("alice") != 2 {
		t.Errorf("alice has %d instances, %d slots; want 2 and 2", n, r.slots.holding("alice"))
	}
	// bob has no quota
	var held []*pool
	var insts []runtime.Instance
	for range 5 {
		pl, inst, err := a.get(ctx, "bob")
		if err != nil {
			t.Fatalf("bob: %v", err)
		}
		held, insts = append(held, pl), append(insts, inst)
	}
	for i := range held {
		held[i].discard(insts[i])
	}
	if n := r.slots.holding("bob"); n != 0 {
		t.Errorf("bob holds %d slots after discarding every instance", n)
	}
	// closing the pools gives every slot back, and leaves no entry
	a.pools.Range(func(_, v any) bool { v.(*pool).close(); return true })
	b.pools.Range(func(_, v any) bool { v.(*pool).close(); return true })
	if n := len(r.slots.live); n != 0 || alive(a)+alive(b) != 0 {
		t.Errorf("after close: %d owners hold slots, %d instances alive", n, alive(a)+alive(b))
	}
}

// TestPrewarmWithinQuota: prewarm makes no instance its owner has no slot
// for (it does not wait, and it is no failure).
func TestPrewarmWithinQuota(t *testing.T) {
	r, a, _ := quotaRegistry()
	if _, err := a.instantiate(context.Background(), "alice", false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.instantiate(context.Background(), "alice", false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.instantiate(context.Background(), "alice", false); err != errNoSlot {
		t.Fatalf("a third instance without waiting: %v, want errNoSlot", err)
	}
	if n := r.slots.holding("alice"); n != 2 {
		t.Errorf("alice holds %d slots, want 2", n)
	}
}

// TestRetiredPool: an empty pool retires (and leaves its plugin's map);
// one with an instance idle or in a call does not; a get that still holds
// a retired pool takes a new one.
func TestRetiredPool(t *testing.T) {
	_, a, _ := quotaRegistry()
	ctx := context.Background()
	pl, inst, err := a.get(ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if pl.retire() {
		t.Fatal("a pool with an instance in a call retired")
	}
	pl.put(inst, time.Now())
	if pl.retire() {
		t.Fatal("a pool with an idle instance retired")
	}
	if n := pl.evict(time.Now().Add(time.Hour), 0); n != 1 || !pl.retire() {
		t.Fatalf("evicted %d; the empty pool must retire", n)
	}
	// the janitor has not removed it from the map yet: get takes a new one
	np, inst, err := a.get(ctx, "carol")
	if err != nil || np == pl {
		t.Fatalf("get after retire: %v (same pool: %v)", err, np == pl)
	}
	np.put(inst, time.Now())
	if v, _ := a.pools.Load("carol"); v != np || a.IdleInstances("carol") != 1 {
		t.Errorf("carol's pool is not the new one with its instance")
	}
	fresh, _ := a.compiled.Instantiate(ctx)
	pl.add(fresh) // an instance added to a retired pool is closed, not lost
	if alive(a) != 1 {
		t.Errorf("%d instances alive, want 1: the one added to the retired pool closed", alive(a))
	}
}
