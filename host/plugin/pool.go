package plugin

import (
	"context"
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
	sem     chan struct{} // one token per live instance
	mu      sync.Mutex
	idle    []idleInst // LIFO: the warmest on top
	closed  bool
	peak    int // the most instances in calls at once (prewarm sizes a new version's pool by it)
}

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
}

// add puts a fresh instance that was not obtained with get into the pool.
func (p *pool) add(inst runtime.Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		inst.Close(context.Background())
		return
	}
	p.idle = append(p.idle, idleInst{inst: inst, at: time.Now()})
}

// discard drops a failed instance.
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
	p.mu.Unlock()
	for _, inst := range drop {
		inst.Close(context.Background())
	}
	return len(drop)
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
