package wasmsnap

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/runtime"
)

// Owners is one compiled module's owners' snapshots, of an engine's
// snapshot type S, and what runtime.Owned does with them: an owner's first
// instance captures (Engine.Capture) while its later ones start from
// scratch; once captured, the owner's instances are restored from its
// snapshot (Engine.Restore). The first refused capture (an error with an
// instance) stops every further try, with one notice (Instantiate's): the
// module's instances then start from scratch; a failed one (no instance)
// leaves the next instance to try again. Forget and Close release
// snapshots once the restores using them are done (Options.Release).
// Safe for concurrent use.
//
// Spares (Options.Spare, Options.Spares) are snapshots captured ahead, in
// the background, each for one owner never seen before: a spare is
// handed to exactly one owner, which keeps it as its own, so two owners
// never share one. The pool is refilled one capture at a time, and only
// once no new owner has come for Options.SpareDelay: the captures run
// beside calls on the same cores, and the new owners' own first calls come
// first.
type Owners[S any] struct {
	opts Options[S]

	mu     sync.Mutex
	owners map[string]*held[S] // nil value: a capture is under way
	// spares are snapshots captured ahead, each for one owner never seen
	// before (at most Options.Spares); sparing says the refill is under
	// way; lastNew is when the last owner never seen before came.
	spares   []*held[S]
	sparing  bool
	lastNew  time.Time
	captured bool  // a capture has succeeded (a spare may follow)
	refused  error // set once a capture is refused: no more tries
	closed   bool
	// bg ends a spare's capture at Close, which waits for it (wg).
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Options are an engine's choices for its Owners.
type Options[S any] struct {
	// Release frees a snapshot nothing restores from any more (Forget,
	// Close, or one captured too late). Restored instances outlive it.
	Release func(S)
	// Reshare: an owner's first instance, whose initialisation left every
	// page it touched its own, is exchanged for one restored from the
	// snapshot just captured (which shares them), when that restore works.
	Reshare bool
	// Spare, when not zero, keeps spare snapshots captured in the
	// background, once the module has served two owners (and a capture
	// has succeeded), each for one owner never seen before, which then
	// starts from it at once; each spare's capture is bounded by Spare. A
	// module only one owner uses (a host without tenants) never pays for
	// a spare.
	Spare time.Duration
	// Spares is how many spares are kept ready (with Spare; less than one
	// is one). Each holds the pages its initialisation changed against
	// the module's first capture, in a sealed memfd.
	Spares int
	// SpareDelay is how long the refill waits, after the last owner never
	// seen before came, before each capture: the new owners make their
	// first calls meanwhile, without a capture beside them (an
	// initialisation's faults, mappings and allocations on the same
	// process's memory and cores).
	SpareDelay time.Duration
}

// Engine is what Owners asks of an engine's compiled module.
type Engine[S any] interface {
	// Instantiate starts an instance from scratch, as without snapshots.
	Instantiate(ctx context.Context) (runtime.Instance, error)
	// Capture instantiates from scratch, capturing the initialised state:
	// the instance and its snapshot; or the instance and why its state
	// was not captured (a refusal); or no instance and why the
	// instantiation failed.
	Capture(ctx context.Context) (runtime.Instance, S, error)
	// Restore starts an instance from snap.
	Restore(ctx context.Context, snap S) (runtime.Instance, error)
}

// held is one snapshot in the table, with the restores using it.
type held[S any] struct {
	snap  S
	users sync.WaitGroup // restores from snap
	once  sync.Once
}

// close releases h's snapshot once its users are done. Only once h is out
// of the table (no new user can come).
func (h *held[S]) close(release func(S)) {
	h.once.Do(func() {
		h.users.Wait()
		if release != nil {
			release(h.snap)
		}
	})
}

// NewOwners returns an empty table.
func NewOwners[S any](opts Options[S]) *Owners[S] {
	o := &Owners[S]{opts: opts, owners: map[string]*held[S]{}}
	o.bg, o.cancel = context.WithCancel(context.Background())
	return o
}

// Instantiate makes an instance of e for owner (runtime.Owned's
// InstantiateFor): from owner's snapshot, capturing it (or taking the
// spare) if it has none. notice (nil: none) is told why the module's
// instances start without a snapshot when the first capture is refused.
func (o *Owners[S]) Instantiate(ctx context.Context, owner string, e Engine[S], notice func(string)) (runtime.Instance, error) {
	o.mu.Lock()
	if o.refused != nil || o.closed {
		o.mu.Unlock()
		return e.Instantiate(ctx)
	}
	h, seen := o.owners[owner]
	if h != nil {
		h.users.Add(1)
		o.mu.Unlock()
		defer h.users.Done()
		return e.Restore(ctx, h.snap)
	}
	if seen { // another instantiation is capturing: start as before
		o.mu.Unlock()
		return e.Instantiate(ctx)
	}
	o.lastNew = time.Now()
	if n := len(o.spares); n > 0 { // taken by this owner alone
		h = o.spares[n-1]
		o.spares[n-1] = nil
		o.spares = o.spares[:n-1]
		o.owners[owner] = h
		h.users.Add(1)
		o.mu.Unlock()
		defer h.users.Done()
		o.spareAhead(e)
		return e.Restore(ctx, h.snap)
	}
	o.owners[owner] = nil
	o.mu.Unlock()
	defer o.spareAhead(e)
	inst, snap, err := e.Capture(ctx)
	o.mu.Lock()
	switch {
	case err != nil && inst == nil:
		delete(o.owners, owner) // the instantiation failed: the next one tries again
		o.mu.Unlock()
		return nil, err
	case err != nil:
		delete(o.owners, owner)
		first := o.refused == nil
		if first {
			o.refused = err
		}
		o.mu.Unlock()
		if first && notice != nil {
			notice(fmt.Sprintf("instances start without a snapshot: %v", err))
		}
		return inst, nil
	case o.closed:
		delete(o.owners, owner)
		o.mu.Unlock()
		(&held[S]{snap: snap}).close(o.opts.Release)
		return inst, nil
	}
	h = &held[S]{snap: snap}
	o.owners[owner] = h
	o.captured = true
	if !o.opts.Reshare {
		o.mu.Unlock()
		return inst, nil
	}
	h.users.Add(1)
	o.mu.Unlock()
	defer h.users.Done()
	if r, err := e.Restore(ctx, snap); err == nil {
		inst.Close(context.WithoutCancel(ctx))
		return r, nil
	}
	return inst, nil
}

// spareAhead refills the spares in the background (Options.Spare), unless
// they are full, the refill is under way, no capture has succeeded yet,
// fewer than two owners have come, or captures are refused.
func (o *Owners[S]) spareAhead(e Engine[S]) {
	o.mu.Lock()
	if o.opts.Spare == 0 || len(o.spares) >= o.spareCap() || o.sparing || !o.captured || o.refused != nil || o.closed || len(o.owners) < 2 {
		o.mu.Unlock()
		return
	}
	o.sparing = true
	o.wg.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.wg.Done()
		for o.refill(e) {
		}
	}()
}

// spareCap is how many spares are kept (Options.Spares).
func (o *Owners[S]) spareCap() int { return max(1, o.opts.Spares) }

// refill captures one spare once no owner never seen before has come for
// Options.SpareDelay, and reports whether another is wanted (false ends
// the refill: the spares are full, the table is closed, or the capture
// failed).
func (o *Owners[S]) refill(e Engine[S]) bool {
	stop := func() bool {
		o.mu.Lock()
		o.sparing = false
		o.mu.Unlock()
		return false
	}
	for {
		o.mu.Lock()
		wait := time.Until(o.lastNew.Add(o.opts.SpareDelay))
		o.mu.Unlock()
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-o.bg.Done(): // closed meanwhile: no capture
			t.Stop()
			return stop()
		}
	}
	// Bounded as an instantiation is by its caller: a guest whose
	// initialisation does not end is stopped.
	ctx, cancel := context.WithTimeout(o.bg, o.opts.Spare)
	defer cancel()
	inst, snap, err := e.Capture(ctx)
	if inst != nil {
		inst.Close(context.Background())
	}
	if err != nil {
		return stop()
	}
	h := &held[S]{snap: snap}
	o.mu.Lock()
	if o.closed || len(o.spares) >= o.spareCap() {
		o.sparing = false
		o.mu.Unlock()
		h.close(o.opts.Release)
		return false
	}
	o.spares = append(o.spares, h)
	more := len(o.spares) < o.spareCap()
	if !more {
		o.sparing = false
	}
	o.mu.Unlock()
	return more
}

// Forget releases owner's snapshot once the restores from it are done
// (runtime.Owned.Forget; its instances keep theirs). A capture under way
// for owner is not stopped: it stores what it captures.
func (o *Owners[S]) Forget(owner string) {
	o.mu.Lock()
	h := o.owners[owner]
	if h != nil {
		delete(o.owners, owner)
	}
	o.mu.Unlock()
	if h != nil {
		h.close(o.opts.Release)
	}
}

// Close releases every snapshot once the restores from it are done,
// after ending the spares' refill; every later instance starts from
// scratch, and a capture under way releases what it captures. A second
// Close does nothing more.
func (o *Owners[S]) Close() {
	o.mu.Lock()
	o.closed = true
	o.cancel()
	o.mu.Unlock()
	o.wg.Wait()
	o.mu.Lock()
	owners, spares := o.owners, o.spares
	o.owners, o.spares = map[string]*held[S]{}, nil
	o.mu.Unlock()
	for _, h := range owners {
		if h != nil {
			h.close(o.opts.Release)
		}
	}
	for _, h := range spares {
		h.close(o.opts.Release)
	}
}

// Lookup returns owner's snapshot, if it has one (not held: for tests and
// reports, not to restore from).
func (o *Owners[S]) Lookup(owner string) (snap S, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if h := o.owners[owner]; h != nil {
		return h.snap, true
	}
	return snap, false
}

// HasSpare reports whether a spare snapshot is ready.
func (o *Owners[S]) HasSpare() bool { return o.Spares() > 0 }

// Spares reports how many spare snapshots are ready.
func (o *Owners[S]) Spares() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.spares)
}
