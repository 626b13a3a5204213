package wazero

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/wasmsnap"
	"github.com/aiodhq/aiod/host/runtime"
)

// Instances from snapshots (RATIONALE.md, "Instances from snapshots").
//
// The first instance of an owner (a tenant) runs _initialize as always;
// right after it, before any call, its memory and mutable globals (exported
// by wasmsnap.Prepare) are captured into that owner's snapshot, and the
// instance goes on to serve. Every later instance of the owner starts from
// the snapshot instead of running _initialize: the module's data image is
// mapped as for any instance, the memory grown to the snapshot's size, the
// pages the initialisation changed mapped copy-on-write from the owner's
// sealed memfd, and the globals set. A snapshot is never shared between
// owners: each owner's comes from its own initialisation, so what the guest
// derived there from randomness and the clock (the Go runtime's hash seeds)
// is its own.
//
// During the capturing initialisation every host function family refuses
// (callFrom panics on a capturing call) and a write to stdout or stderr
// marks it: a module whose initialisation reaches the host for anything but
// the clock, randomness and its own memory is not snapshotted (the reason
// is logged once, through Config.Refused) and starts as before.

// snapshots are one compiled module's owners' snapshots (nil: the module
// is not snapshotted, refused says why).
type snapshots struct {
	plan wasmsnap.Plan

	mu sync.Mutex
	// ref is the memory the first capture left (every non-zero page, in a
	// sealed memfd): each snapshot keeps only the pages where its own
	// initialisation left something else.
	ref    *memImage
	owners map[string]*snapshot // nil value: a capture is under way
	// spare is a snapshot captured ahead for the next owner never seen
	// before (nil: none yet); sparing says a capture of one is under way.
	spare   *snapshot
	sparing bool
	// bg ends the spare's capture at close, which waits for it (wg).
	bg      context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	refused error // set once a capture is refused: no more tries
	closed  bool
}

// snapshot is one owner's captured state.
type snapshot struct {
	size    uint64    // memory bytes
	globals []uint64  // values of plan.Globals
	ref     *memImage // the reference memory (snapshots.ref)
	runs    []pageRun // the pages that differ from ref
	image   *memImage // the sealed memfd holding those pages at their offsets
	users   sync.WaitGroup
}

// pageRun is a run of host pages [off, off+n).
type pageRun struct{ off, n uint64 }

// capturing is what a capturing initialisation's context carries under
// callKey instead of a *hostfn.Call: callFrom refuses it.
type capturing struct{ call *hostfn.Call }

// errInitReach is the refusal of a host function called by a capturing
// initialisation.
var errInitReach = errors.New("the initialisation calls a host function family")

// capturingWriter marks a capture whose initialisation writes output.
type capturingWriter struct {
	mu      sync.Mutex
	wrote   bool
	forward interface{ Write([]byte) (int, error) }
}

func (w *capturingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	return w.forward.Write(p)
}

// newSnapshots reads the module's plan; nil when it is not snapshotted.
func newSnapshots(wasm []byte, img *memImage, instrumented bool) (*snapshots, error) {
	if !instrumented {
		return nil, errors.New("the module is not instrumented (interpreter, or the rewriter refused it)")
	}
	if !img.mapped() {
		return nil, errors.New("the module has no data image in a memfd")
	}
	plan, err := wasmsnap.Read(wasm)
	if err != nil {
		return nil, err
	}
	if plan.Refused != "" {
		return nil, errors.New(plan.Refused)
	}
	bg, cancel := context.WithCancel(context.Background())
	return &snapshots{plan: plan, owners: map[string]*snapshot{}, bg: bg, cancel: cancel}, nil
}

var _ runtime.Owned = (*compiled)(nil)

// InstantiateFor implements runtime.Owned.
func (c *compiled) InstantiateFor(ctx context.Context, owner string) (runtime.Instance, error) {
	s := c.snaps
	if s == nil {
		return c.Instantiate(ctx)
	}
	s.mu.Lock()
	snap, seen := s.owners[owner]
	if s.refused != nil || s.closed {
		s.mu.Unlock()
		return c.Instantiate(ctx)
	}
	if snap != nil {
		snap.users.Add(1)
		s.mu.Unlock()
		defer snap.users.Done()
		return c.restore(ctx, snap)
	}
	if seen { // another instantiation is capturing: start as before
		s.mu.Unlock()
		return c.Instantiate(ctx)
	}
	if snap = s.spare; snap != nil { // taken by this owner alone
		s.spare = nil
		s.owners[owner] = snap
		snap.users.Add(1)
		s.mu.Unlock()
		defer snap.users.Done()
		c.spareAhead()
		return c.restore(ctx, snap)
	}
	s.owners[owner] = nil
	s.mu.Unlock()
	defer c.spareAhead()
	inst, snap, err := c.capture(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && inst == nil:
		delete(s.owners, owner) // the instantiation failed: the next one tries again
	case err != nil:
		s.refused = err
		delete(s.owners, owner)
		if c.refusedLog != nil {
			c.refusedLog(fmt.Sprintf("instances start without a snapshot: %v", err))
		}
	case s.closed:
		snap.close()
		delete(s.owners, owner)
	default:
		s.owners[owner] = snap
		// The captured instance holds every page its initialisation
		// touched as its own; one from the snapshot shares them.
		snap.users.Add(1)
		defer snap.users.Done()
		if r, rerr := c.restore(ctx, snap); rerr == nil {
			inst.Close(context.WithoutCancel(ctx))
			return r, nil
		}
	}
	if inst == nil {
		return nil, err
	}
	return inst, nil
}

// spareAhead captures a spare snapshot in the background, unless there is
// one, one is being captured, or captures are refused.
func (c *compiled) spareAhead() {
	s := c.snaps
	s.mu.Lock()
	if s.spare != nil || s.sparing || s.refused != nil || s.closed || s.ref == nil {
		s.mu.Unlock()
		return
	}
	s.sparing = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		// Bounded as an instantiation is by its caller: a guest whose
		// initialisation does not end is stopped.
		ctx, cancel := context.WithTimeout(s.bg, spareTimeout)
		defer cancel()
		inst, snap, err := c.capture(ctx)
		if inst != nil {
			inst.Close(context.Background())
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sparing = false
		if err != nil || snap == nil {
			return
		}
		if s.closed || s.spare != nil {
			snap.close()
			return
		}
		s.spare = snap
	}()
}

// spareTimeout bounds a spare's capture.
const spareTimeout = 30 * time.Second

// capture instantiates from scratch, capturing the initialised state. It
// returns the instance (nil if the instantiation failed, with the error)
// and the snapshot, or the instance and why no snapshot was taken.
func (c *compiled) capture(ctx context.Context) (runtime.Instance, *snapshot, error) {
	w := &capturingWriter{forward: c.stderr}
	inst, err := c.instantiate(ctx, w)
	if errors.Is(err, errInitReach) {
		// Refused, not failed: start as before (the reason is recorded).
		inst, err := c.Instantiate(ctx)
		if err != nil {
			return nil, nil, err
		}
		return inst, nil, errInitReach
	}
	if err != nil {
		return nil, nil, err
	}
	if w.wrote {
		return inst, nil, errors.New("the initialisation writes to stdout or stderr")
	}
	snap, err := c.take(inst)
	if err != nil {
		return inst, nil, fmt.Errorf("capture: %w", err)
	}
	return inst, snap, nil
}

// take captures an initialised instance's memory and globals.
func (c *compiled) take(i *instance) (*snapshot, error) {
	mem := i.m.Memory()
	size := uint64(mem.Size())
	cur, ok := mem.Read(0, uint32(size))
	if !ok {
		return nil, errors.New("memory unreadable")
	}
	snap := &snapshot{size: size}
	for _, g := range c.snaps.plan.Globals {
		eg := i.m.ExportedGlobal(g.Name)
		if eg == nil {
			return nil, fmt.Errorf("global %s missing", g.Name)
		}
		snap.globals = append(snap.globals, eg.Get())
	}
	c.snaps.mu.Lock()
	if c.snaps.ref == nil {
		ref, err := newSparseImage(cur, dirtyRuns(nil, cur, 1<<30))
		if err != nil {
			c.snaps.mu.Unlock()
			return nil, err
		}
		c.snaps.ref = ref
	}
	snap.ref = c.snaps.ref
	c.snaps.mu.Unlock()
	snap.runs = dirtyRuns(snap.ref.data[:min(uint64(snap.ref.size), size)], cur, maxRuns)
	img, err := newSparseImage(cur, snap.runs)
	if err != nil {
		return nil, err
	}
	snap.image = img
	return snap, nil
}

// restore starts an instance from snap.
func (c *compiled) restore(ctx context.Context, snap *snapshot) (runtime.Instance, error) {
	call := &hostfn.Call{Plugin: c.name}
	ictx, mem := withMemory(context.WithValue(ctx, callKey{}, call))
	y := newYielder()
	m, err := c.r.InstantiateModule(ictx, c.cm, c.moduleConfig().WithOsyield(y.yield).WithStartFunctions())
	var inst *instance
	if err == nil {
		inst = &instance{m: m, mem: mem, pages: c.pages, fns: map[string]api.Function{}, yield: y}
		err = mem.applySnapshot(snap, m.Memory())
		for k, g := range c.snaps.plan.Globals {
			if err != nil {
				break
			}
			mg, ok := m.ExportedGlobal(g.Name).(api.MutableGlobal)
			if !ok {
				err = fmt.Errorf("global %s missing", g.Name)
				break
			}
			mg.Set(snap.globals[k])
		}
		if err == nil {
			err = inst.arm(true)
		}
		if err != nil {
			m.Close(context.WithoutCancel(ctx))
		}
	}
	mem.instantiated(err != nil)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiate from snapshot: %w", c.name, classify(ctx, err, nil, c.pages))
	}
	return inst, nil
}

func (snap *snapshot) close() {
	snap.users.Wait()
	snap.image.close()
}

// close releases every owner's snapshot (compiled.Close).
func (s *snapshots) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	owners := s.owners
	s.owners = map[string]*snapshot{}
	s.mu.Unlock()
	for _, snap := range owners {
		if snap != nil {
			snap.close()
		}
	}
	s.mu.Lock()
	ref, spare := s.ref, s.spare
	s.spare = nil
	s.mu.Unlock()
	if spare != nil {
		spare.close()
	}
	ref.close() // instances keep their mappings
}

// Forget implements runtime.Owned: owner's snapshot is released (its
// instances keep their mappings).
func (c *compiled) Forget(owner string) {
	s := c.snaps
	if s == nil {
		return
	}
	s.mu.Lock()
	snap := s.owners[owner]
	if snap != nil {
		delete(s.owners, owner)
	}
	s.mu.Unlock()
	if snap != nil {
		snap.close()
	}
}
