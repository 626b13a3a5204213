package plugin

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/runtime"
)

// pool keeps warm instances of one plugin for one owner. It is bounded: at
// most max instances exist at once; callers beyond that wait (or give up
// with their context). An instance that failed in any way is discarded,
// never returned to the pool.
type pool struct {
	newInst func(ctx context.Context) (runtime.Instance, error)
	onIdle  func()        // after an instance goes idle (ownerSlots.idled); may be nil
	sem     chan struct{} // one token per live instance
	mu      sync.Mutex
	idle    []idleInst // LIFO: the warmest on top
	closed  bool
	// retired: the pool was empty (no instance idle or in a call) and left
	// its plugin's map (retire), so that an idle owner keeps nothing; a
	// get that still found it takes a new pool (errRetired).
	retired bool
	peak    int // the most instances in calls at once (prewarm sizes a new version's pool by it)
	inUse   int // instances in calls (or being made for one) now
	// avail is signalled (without blocking) when an instance goes idle,
	// for a get waiting on growWait; waiting counts those gets.
	avail   chan struct{}
	waiting int
}

// growWait is how long a get that finds no idle instance, while others
// are in calls, waits for one of them to come back before instantiating
// another. A standard-Go guest takes ~10 ms of CPU to instantiate (its
// runtime's initialisation), and a short call gives its instance back in
// tens of microseconds: under a burst of short calls, waiting serves them
// with the instances there are instead of making one per concurrent call
// (which, after a swap, made the new version's empty pool instantiate a
// dozen at once). A call that finds every instance in a long call pays
// growWait before its instantiation, a tenth of it.
const growWait = time.Millisecond

// errRetired is get's answer from a retired pool: take the owner's pool
// again (Plugin.get).
var errRetired = errors.New("pool retired")

// errNoSlot is a prewarm's instance its owner has no slot for.
var errNoSlot = errors.New("owner at its instances quota")

type idleInst struct {
	inst runtime.Instance
	at   time.Time
}

func newPool(max int, newInst func(ctx context.Context) (runtime.Instance, error)) *pool {
	if max < 1 {
		max = 1
	}
	return &pool{newInst: newInst, sem: make(chan struct{}, max), avail: make(chan struct{}, 1)}
}

// get returns an instance, creating one if none is idle.
func (p *pool) get(ctx context.Context) (runtime.Instance, error) {
	select {
	case p.sem <- struct{}{}:
	default:
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	if p.retired {
		p.mu.Unlock()
		<-p.sem
		return nil, errRetired
	}
	inst := p.takeIdle()
	if inst == nil && p.inUse > 0 { // others are in calls: wait a moment for one
		p.waiting++
		p.mu.Unlock()
		inst = p.awaitIdle(ctx)
		p.mu.Lock()
		p.waiting--
		if inst == nil {
			inst = p.takeIdle()
		}
		if inst == nil && ctx.Err() != nil {
			p.mu.Unlock()
			<-p.sem
			return nil, ctx.Err()
		}
	}
	p.inUse++ // counted from here, also while instantiating
	p.peak = max(p.peak, p.inUse)
	p.mu.Unlock()
	if inst != nil {
		return inst, nil
	}
	inst, err := p.newInst(ctx)
	if err != nil {
		p.release()
		return nil, err
	}
	return inst, nil
}

// release ends a get's hold on its slot without an instance to keep.
func (p *pool) release() {
	p.mu.Lock()
	p.inUse--
	p.mu.Unlock()
	<-p.sem
}

// takeIdle pops the warmest idle instance, or nil. p.mu is held.
func (p *pool) takeIdle() runtime.Instance {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	inst := p.idle[n-1].inst
	p.idle[n-1] = idleInst{}
	p.idle = p.idle[:n-1]
	return inst
}

// awaitIdle waits up to growWait for an instance to go idle and takes it;
// nil when none did (or ctx ended).
func (p *pool) awaitIdle(ctx context.Context) runtime.Instance {
	t := time.NewTimer(growWait)
	defer t.Stop()
	for {
		select {
		case <-p.avail:
			p.mu.Lock()
			inst := p.takeIdle()
			p.mu.Unlock()
			if inst != nil {
				return inst
			}
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// signal tells one waiting get that an instance went idle.
func (p *pool) signal() {
	select {
	case p.avail <- struct{}{}:
	default:
	}
}

// put returns a healthy instance to the pool, idle since at.
func (p *pool) put(inst runtime.Instance, at time.Time) {
	p.mu.Lock()
	p.inUse--
	if p.closed {
		p.mu.Unlock()
		inst.Close(context.Background())
		<-p.sem
		return
	}
	p.idle = append(p.idle, idleInst{inst: inst, at: at})
	wake := p.waiting > 0
	p.mu.Unlock()
	<-p.sem
	if wake {
		p.signal()
	}
	if p.onIdle != nil {
		p.onIdle()
	}
}

// add puts a fresh instance that was not obtained with get into the pool.
func (p *pool) add(inst runtime.Instance) {
	p.mu.Lock()
	if p.closed || p.retired {
		p.mu.Unlock()
		inst.Close(context.Background())
		return
	}
	p.idle = append(p.idle, idleInst{inst: inst, at: monoNow()})
	wake := p.waiting > 0
	p.mu.Unlock()
	if wake {
		p.signal()
	}
	if p.onIdle != nil {
		p.onIdle()
	}
}

// discard drops a failed instance.
// done gives inst back after a call in it returned: to the idle list, or
// closed when the call's context ended before it returned. wazero closes a
// module from a goroutine of its own when the context of a call in it ends
// (WithCloseOnContextDone), also while a host function runs, and the guest
// can still return normally after that (a cancelled task's process killed,
// its host call answered): such an instance fails every later call with
// "module closed with context canceled", so it is never kept. A context
// that ends after the call returned closes nothing.
//
// The instance is idle since its call began when ctx is the call's
// deadline (withTimeout read the clock then; no second read): eviction
// (IdleTimeout, minutes) then counts a call's own run as idle time, which
// at worst evicts an instance that ran a call as long as the timeout
// sooner after it.
func (p *pool) done(ctx context.Context, inst runtime.Instance) {
	if ended(ctx) {
		p.discard(inst)
		return
	}
	at, ok := callStart(ctx)
	if !ok {
		at = monoNow()
	}
	p.put(inst, at)
}

func (p *pool) discard(inst runtime.Instance) {
	inst.Close(context.Background())
	p.release()
}

// evict closes instances idle since before cutoff, keeping keep of them.
func (p *pool) evict(cutoff time.Time, keep int) int {
	p.mu.Lock()
	var drop []runtime.Instance
	kept := p.idle[:0]
	// idle is LIFO, oldest first.
	n := len(p.idle)
	for i, e := range p.idle {
		if e.at.Before(cutoff) && n-i > keep {
			drop = append(drop, e.inst)
			continue
		}
		kept = append(kept, e)
	}
	for i := len(kept); i < len(p.idle); i++ {
		p.idle[i] = idleInst{}
	}
	p.idle = kept
	if len(kept) == 0 {
		p.idle = nil // an idle owner keeps no array
	}
	p.mu.Unlock()
	for _, inst := range drop {
		inst.Close(context.Background())
	}
	return len(drop)
}

// oldestIdle is the time (unix ns) the oldest idle instance went idle.
func (p *pool) oldestIdle() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return 0, false
	}
	return p.idle[0].at.UnixNano(), true
}

// evictOne closes the oldest idle instance, if any is left.
func (p *pool) evictOne() bool {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.mu.Unlock()
		return false
	}
	inst := p.idle[0].inst
	n := copy(p.idle, p.idle[1:])
	p.idle[n] = idleInst{}
	p.idle = p.idle[:n]
	p.mu.Unlock()
	inst.Close(context.Background())
	return true
}

// retire marks an empty pool retired (see pool.retired) and reports
// whether it did; a pool with an instance idle or in a call stays.
func (p *pool) retire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) > 0 || len(p.sem) > 0 {
		return false
	}
	p.retired = true
	p.idle = nil
	return true
}

// inUsePeak returns the most instances that were in calls at once.
func (p *pool) inUsePeak() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// size returns the idle count.
func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// close closes idle instances and makes put close instead of keep.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, e := range idle {
		e.inst.Close(context.Background())
	}
}

func (p *Plugin) pool(owner string) *pool {
	if owner == DefaultOwner {
		if pl := p.defaultPool.Load(); pl != nil {
			return pl
		}
	}
	if v, ok := p.pools.Load(owner); ok {
		pl := v.(*pool)
		if owner == DefaultOwner {
			p.defaultPool.Store(pl)
		}
		return pl
	}
	max := p.Grant.MaxInstances
	if p.ownerMax != nil {
		if n := p.ownerMax(owner); n > 0 {
			max = min(max, n)
		}
	}
	np := newPool(max, func(ctx context.Context) (runtime.Instance, error) {
		return p.instantiate(ctx, owner, true)
	})
	if p.slots != nil {
		np.onIdle = p.slots.idled
	}
	v, loaded := p.pools.LoadOrStore(owner, np)
	if !loaded && p.closed.Load() {
		np.close()
	}
	if owner == DefaultOwner {
		p.defaultPool.Store(v.(*pool))
	}
	return v.(*pool)
}

// get takes an instance of owner's pool: the pool it came from, to give it
// back to. A pool the janitor retired meanwhile is left for a new one.
func (p *Plugin) get(ctx context.Context, owner string) (*pool, runtime.Instance, error) {
	for {
		pl := p.pool(owner)
		inst, err := pl.get(ctx)
		if err == errRetired {
			p.pools.CompareAndDelete(owner, pl)
			p.defaultPool.CompareAndSwap(pl, nil)
			continue
		}
		return pl, inst, err
	}
}

// prewarmMax bounds the instances prewarm makes per owner.
const prewarmMax = 16

// prewarmBudget bounds how long prewarm delays a swap: past it (and once
// it has made one instance) it stops, and the new version's pools grow on
// demand. Without it a version replaced after a burst (16 instances in
// calls at once) held its successor back ~300 ms under load.
var prewarmBudget = 100 * time.Millisecond

// prewarm gives p, a new version of prev, as many warm instances per owner
// as prev had in calls at once (at most prewarmMax, within prewarmBudget),
// before p is swapped in: otherwise every call that finds the new pool
// empty right after a swap under load pays an instantiation. Not as many
// as prev has live: its idle instances are the high-water mark of past
// bursts (and of its own prewarm), which each swap would pay for again; a
// pool short of instances grows on demand. Instances are made on loaders()
// goroutines; a failure stops warming (calls instantiate as usual then).
// It returns how many it made.
func (p *Plugin) prewarm(ctx context.Context, prev *Plugin) int {
	type job struct {
		owner string
		pool  *pool
	}
	var jobs []job
	prev.pools.Range(func(k, v any) bool {
		owner := k.(string)
		n := min(v.(*pool).inUsePeak(), prewarmMax, p.Grant.MaxInstances)
		np := p.pool(owner)
		for i := np.size(); i < n; i++ {
			jobs = append(jobs, job{owner, np})
		}
		return true
	})
	if len(jobs) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, p.Grant.Timeout)
	defer cancel()
	work := make(chan job)
	var wg sync.WaitGroup
	var failed atomic.Bool
	var made atomic.Int32
	until := time.Now().Add(prewarmBudget)
	for range min(len(jobs), loaders()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if failed.Load() || (made.Load() > 0 && time.Now().After(until)) {
					continue
				}
				inst, err := p.instantiate(ctx, j.owner, false)
				if err == errNoSlot {
					continue // the owner is at its instances quota
				}
				if err != nil {
					failed.Store(true)
					p.log.Warn("prewarm stopped", "owner", j.owner, "err", err)
					continue
				}
				j.pool.add(inst)
				made.Add(1)
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	return int(made.Load())
}

// IdleInstances reports the idle instances of owner's pool (for tests and
// metrics).
func (p *Plugin) IdleInstances(owner string) int {
	if v, ok := p.pools.Load(owner); ok {
		return v.(*pool).size()
	}
	return 0
}

func (r *Registry) releasePlugin(p *Plugin) {
	if p.refs.Add(-1) == 0 {
		if p.ready != nil {
			<-p.ready // a loader is still working on it
		}
		p.close()
	}
}
