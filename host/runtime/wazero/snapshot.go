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
// is logged once, through Config.Notice) and starts as before.
//
// What both engines share is in host/internal/wasmsnap: the owners' table
// (wasmsnap.Owners), the runs of changed pages (wasmsnap.Runs, at most
// wasmsnap.MaxRuns) and the capture's refusals (wasmsnap.EndCapture); this
// file gives the table wazero's capture and restore.

// snapshots are one compiled module's owners' snapshots (nil: the module
// is not snapshotted): the table (wasmsnap.Owners: capture under way,
// refused once, Forget, close), with each new owner's first instance
// exchanged for one restored from its snapshot (Options.Reshare) and a
// spare snapshot captured in the background for the next owner never seen
// before (Options.Spare).
type snapshots struct {
	*wasmsnap.Owners[*snapshot]
	plan wasmsnap.Plan

	mu sync.Mutex
	// ref is the memory the first capture left (every non-zero page, in a
	// sealed memfd): each snapshot keeps only the pages where its own
	// initialisation left something else.
	ref *memImage
}

// snapshot is one owner's captured state.
type snapshot struct {
	size    uint64    // memory bytes
	globals []uint64  // values of plan.Globals
	ref     *memImage // the reference memory (snapshots.ref)
	runs    []pageRun // the pages that differ from ref
	image   *memImage // the sealed memfd holding those pages at their offsets
}

// pageRun is a run of host pages [Off, Off+N).
type pageRun = wasmsnap.PageRun

// capturing is what a capturing initialisation's context carries under
// callKey instead of a *hostfn.Call: callFrom refuses it (panics with
// errInitReach).
type capturing struct{ call *hostfn.Call }

// errInitReach is the refusal of a host function called by a capturing
// initialisation (instantiate returns it when callFrom panicked with it).
var errInitReach = wasmsnap.ErrInitReach

// capturingWriter marks a capture whose initialisation writes output.
type capturingWriter = wasmsnap.CapturingWriter

// newSnapshots reads the module's plan; nil when it is not snapshotted.
func newSnapshots(wasm []byte, img *memImage, instrumented bool, spares int) (*snapshots, error) {
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
	owners := wasmsnap.NewOwners(wasmsnap.Options[*snapshot]{
		Release: func(snap *snapshot) { snap.image.close() },
		Reshare: true,
		Spare:   spareTimeout,
		Spares:  spares,
		// The new owner's first calls come first.
		SpareDelay: spareDelay,
	})
	return &snapshots{Owners: owners, plan: plan}, nil
}

var _ runtime.Owned = (*compiled)(nil)

// InstantiateFor implements runtime.Owned.
func (c *compiled) InstantiateFor(ctx context.Context, owner string) (runtime.Instance, error) {
	if c.snaps == nil {
		return c.Instantiate(ctx)
	}
	return c.snaps.Instantiate(ctx, owner, c, c.refusedLog)
}

// spareTimeout bounds a spare's capture.
const spareTimeout = 30 * time.Second

// spareDelay is how long the spares' refill waits after the last new
// owner (wasmsnap.Options.SpareDelay), so that its first call does not run
// beside a capture: an instance and its first echo take ~0.2 ms in-process
// (BenchmarkSnapshotNewTenant: the same with 2, 5 or 20 ms; 2.1-2.3 ms with
// none). Over HTTP (BenchmarkNewTenantHTTP) 2 ms keeps a paced tenant's
// first call where 5 ms did (0.87-1.13 against 0.92-0.96 ms) and lets the
// refill keep up with part of a burst (2.3-2.6 against 4.1 ms); with none
// a paced tenant's first call doubled.
const spareDelay = 2 * time.Millisecond

// Capture implements wasmsnap.Engine: it instantiates from scratch,
// capturing the initialised state. It returns the instance (nil if the
// instantiation failed, with the error) and the snapshot, or the instance
// and why no snapshot was taken.
func (c *compiled) Capture(ctx context.Context) (runtime.Instance, *snapshot, error) {
	w := &capturingWriter{Forward: c.stderr}
	inst, err := c.instantiate(ctx, w)
	return wasmsnap.EndCapture(ctx, c, inst, err, w, func() (*snapshot, error) { return c.take(inst) })
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
		ref, err := newSparseImage(cur, wasmsnap.Runs(nil, cur, pageSize, 1<<30))
		if err != nil {
			c.snaps.mu.Unlock()
			return nil, err
		}
		c.snaps.ref = ref
	}
	snap.ref = c.snaps.ref
	c.snaps.mu.Unlock()
	snap.runs = wasmsnap.Runs(snap.ref.data[:min(uint64(snap.ref.size), size)], cur, pageSize, wasmsnap.MaxRuns)
	img, err := newSparseImage(cur, snap.runs)
	if err != nil {
		return nil, err
	}
	snap.image = img
	return snap, nil
}

// Restore implements wasmsnap.Engine: it starts an instance from snap.
func (c *compiled) Restore(ctx context.Context, snap *snapshot) (runtime.Instance, error) {
	call := &hostfn.Call{Plugin: c.name}
	ictx, mem := withMemory(context.WithValue(ctx, callKey{}, call))
	y := newYielder()
	m, err := c.r.InstantiateModule(ictx, c.cm, c.moduleConfig().WithOsyield(y.yield).WithStartFunctions())
	var inst *instance
	if err == nil {
		inst = &instance{m: m, mem: mem, pages: c.pages, fns: map[string]export{}, yield: y}
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

// close releases every owner's snapshot and the reference memory
// (compiled.Close).
func (s *snapshots) close() {
	if s == nil {
		return
	}
	s.Owners.Close()
	s.mu.Lock()
	ref := s.ref
	s.mu.Unlock()
	ref.close() // instances keep their mappings
}

// Forget implements runtime.Owned: owner's snapshot is released (its
// instances keep their mappings).
func (c *compiled) Forget(owner string) {
	if c.snaps != nil {
		c.snaps.Forget(owner)
	}
}
