package plugin

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/aiodhq/aiod/host/runtime"
)

// ownerSlots bounds the live instances (idle or in a call) each owner
// holds across all its plugins, for Options.OwnerInstances (a tenant's
// "instances" quota, spec/tenants.md §3). An instance made for an owner
// takes one of its slots and gives it back when it is closed, however
// that happens (eviction, a failed call, an unload). At its quota an
// owner that needs an instance of one plugin closes its oldest idle
// instance of another; when all are in calls, it waits for one to go
// idle or be closed (or for its context). Owners holding no instance
// keep no entry.
type ownerSlots struct {
	max func(owner string) int // 0: no quota
	// evict closes the owner's oldest idle instance of any plugin of the
	// current catalogue, and reports whether there was one.
	evict func(owner string) bool

	mu      sync.Mutex
	live    map[string]int
	wake    chan struct{} // closed when a slot is freed or an instance goes idle, if waiters
	waiters atomic.Int32  // changed under mu
}

func newOwnerSlots(max func(owner string) int, evict func(owner string) bool) *ownerSlots {
	return &ownerSlots{max: max, evict: evict, live: map[string]int{}, wake: make(chan struct{})}
}

// take takes a slot of owner if one is free (prewarm: never waits).
func (o *ownerSlots) take(owner string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.takeLocked(owner)
}

func (o *ownerSlots) takeLocked(owner string) bool {
	if n := o.max(owner); n > 0 && o.live[owner] >= n {
		return false
	}
	o.live[owner]++
	return true
}

// acquire takes a slot of owner, making room or waiting as the type says.
func (o *ownerSlots) acquire(ctx context.Context, owner string) error {
	for {
		o.mu.Lock()
		if o.takeLocked(owner) {
			o.mu.Unlock()
			return nil
		}
		// a waiter from here on: whatever frees a slot or idles an
		// instance after this closes wake
		o.waiters.Add(1)
		wake := o.wake
		o.mu.Unlock()
		var err error
		if o.evict == nil || !o.evict(owner) {
			select {
			case <-wake:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		o.mu.Lock()
		o.waiters.Add(-1)
		o.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// release gives a slot of owner back.
func (o *ownerSlots) release(owner string) {
	o.mu.Lock()
	if n := o.live[owner] - 1; n > 0 {
		o.live[owner] = n
	} else {
		delete(o.live, owner)
	}
	o.broadcast()
	o.mu.Unlock()
}

// idled says an instance went idle (after it is in its pool's idle list):
// an owner waiting at its quota may close it now. Without waiters (the
// common case) it costs one atomic load: a waiter that registers after
// the load finds the instance idle when it looks for one to evict.
func (o *ownerSlots) idled() {
	if o.waiters.Load() == 0 {
		return
	}
	o.mu.Lock()
	o.broadcast()
	o.mu.Unlock()
}

func (o *ownerSlots) broadcast() {
	if o.waiters.Load() == 0 {
		return
	}
	close(o.wake)
	o.wake = make(chan struct{})
}

// holding reports the slots owner holds (tests).
func (o *ownerSlots) holding(owner string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.live[owner]
}

// slotInstance is an instance holding a slot of its owner until closed.
type slotInstance struct {
	runtime.Instance
	slots *ownerSlots
	owner string
	done  atomic.Bool
}

func (i *slotInstance) Close(ctx context.Context) error {
	err := i.Instance.Close(ctx)
	if i.done.CompareAndSwap(false, true) {
		i.slots.release(i.owner)
	}
	return err
}

// instantiate makes an instance of p for owner within owner's slots
// (none when the registry has no OwnerInstances): wait says whether to
// wait for a slot or give up at once (prewarm).
func (p *Plugin) instantiate(ctx context.Context, owner string, wait bool) (runtime.Instance, error) {
	o := p.slots
	if o == nil {
		return runtime.InstantiateFor(ctx, p.compiled, owner)
	}
	if wait {
		if err := o.acquire(ctx, owner); err != nil {
			return nil, err
		}
	} else if !o.take(owner) {
		return nil, errNoSlot
	}
	inst, err := runtime.InstantiateFor(ctx, p.compiled, owner)
	if err != nil {
		o.release(owner)
		return nil, err
	}
	return &slotInstance{Instance: inst, slots: o, owner: owner}, nil
}

// evictOldest closes owner's oldest idle instance among the plugins of
// the current catalogue (ownerSlots.evict).
func (r *Registry) evictOldest(owner string) bool {
	var oldest *pool
	var at int64
	for _, p := range r.cat.Load().Plugins {
		v, ok := p.pools.Load(owner)
		if !ok {
			continue
		}
		if t, ok := v.(*pool).oldestIdle(); ok && (oldest == nil || t < at) {
			oldest, at = v.(*pool), t
		}
	}
	return oldest != nil && oldest.evictOne()
}

// OwnerInstances is how many instances (idle or in a call) owner holds now
// across all plugins; 0 without Options.OwnerInstances.
func (r *Registry) OwnerInstances(owner string) int {
	if r.slots == nil {
		return 0
	}
	return r.slots.holding(owner)
}
