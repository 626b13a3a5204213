package plugin

import (
	"context"
	"errors"
	"sync"
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
}

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
	return &pool{newInst: newInst, sem: make(chan struct{}, max)}
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
	p.peak = max(p.peak, len(p.sem))
	if n := len(p.idle); n > 0 {
		inst := p.idle[n-1].inst
		p.idle[n-1] = idleInst{}
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return inst, nil
	}
	p.mu.Unlock()
	inst, err := p.newInst(ctx)
	if err != nil {
		<-p.sem
		return nil, err
	}
	return inst, nil
}

// put returns a healthy instance to the pool.
func (p *pool) put(inst runtime.Instance) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		inst.Close(context.Background())
		<-p.sem
		return
	}
	p.idle = append(p.idle, idleInst{inst: inst, at: time.Now()})
	p.mu.Unlock()
	<-p.sem
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
	p.idle = append(p.idle, idleInst{inst: inst, at: time.Now()})
	p.mu.Unlock()
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
func (p *pool) done(ctx context.Context, inst runtime.Instance) {
	if ctx.Err() != nil {
		p.discard(inst)
		return
	}
	p.put(inst)
}

func (p *pool) discard(inst runtime.Instance) {
	inst.Close(context.Background())
	<-p.sem
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
