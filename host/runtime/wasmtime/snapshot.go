//go:build cgo

package wasmtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/wasmsnap"
	"github.com/aiodhq/aiod/host/runtime"
)

// Instances from snapshots (RATIONALE.md, "Instances from snapshots"), as
// on wazero (host/runtime/wazero, snapshot.go), through the same
// engine-neutral parts (host/internal/wasmsnap: the owners' table, the runs
// of changed pages, the capture's refusals).
//
// With Options.Snapshots, Compile compiles the module prepared by
// wasmsnap.Prepare (its mutable globals exported, its answer recorded; the
// disk cache keys on the bytes compiled, so the prepared form is cached
// apart from the original and a changed Prepare never reads an old one).
// The first instance of an owner (a tenant) runs _initialize as always,
// with every host function family refusing (hostFunc traps with
// errInitReach) and its stdout and stderr watched (a
// wasmsnap.CapturingWriter); right after, its memory
// and mutable globals are captured into that owner's snapshot, and it goes
// on to serve. Every later instance of the owner is instantiated through
// the InstancePre without running _initialize: the memory is grown to the
// snapshot's size, the pages the initialisation changed (against the
// module's freshly instantiated memory) are mapped copy-on-write from the
// owner's sealed memfd (MAP_FIXED|MAP_PRIVATE over the memory's own pages;
// copied where there are no memfds), and the globals set. Nothing runs in
// the guest, so there is nothing to meter or interrupt.
//
// Mapping, not copying (BenchmarkSnapshot, the echo plugin: 0.9 MB of its
// 4.7 MB changed by the initialisation, in 16 runs): 0.11 ms an
// instantiation against 0.32 ms, and 0.27 ms against 0.40 ms with the
// instance's first call, as a copy faults in every changed page at once and
// a mapping only the pages the instance touches; from scratch it is 1.3 ms.
//
// A snapshot is never shared between owners: each owner's comes from its
// own initialisation, so what the guest derived there from randomness and
// the clock (the Go runtime's hash seeds) is its own. A module whose
// initialisation calls a family or writes output is not snapshotted (the
// reason goes once to Config.Notice) and starts as before.
//
// Snapshots are refused under the pooling tuning: a pooled slot is reset
// with madvise, which would bring back the contents of a file mapped over
// it (memfdImage.mapOver). The on-demand allocator unmaps a memory whole
// when its store is dropped, the snapshot's mappings with it.

// snapshots are one compiled module's owners' snapshots (nil: the module
// is not snapshotted): the table (wasmsnap.Owners: capture under way,
// refused once, Forget, close) and the reference memory.
type snapshots struct {
	*wasmsnap.Owners[*snapshot]
	plan wasmsnap.Plan
	mmap bool // restore by mapping (memfdImage.mapOver), not by copying

	mu sync.Mutex
	// base is the memory of a freshly instantiated instance (the module's
	// data image), the reference the snapshots' pages are told apart from:
	// each restored instance starts with it.
	base []byte
}

// snapshot is one owner's captured state.
type snapshot struct {
	size    uint64         // memory bytes
	globals []wasmtime.Val // values of plan.Globals
	runs    []pageRun      // the pages that differ from base
	data    []byte         // the runs' bytes, one after another (copying)
	image   *memfdImage    // the runs at their offsets in a sealed memfd (mapping)
}

// pageRun is a run of host pages [Off, Off+N) (bytes).
type pageRun = wasmsnap.PageRun

// errInitReach is the refusal of a host function called by a capturing
// initialisation (hostFunc traps with it).
var errInitReach = wasmsnap.ErrInitReach

// snapshotForm returns what Compile compiles for wasm with snapshots on:
// the prepared form and its plan, or wasm itself and why it is not
// snapshotted.
func (e *engine) snapshotForm(wasm []byte) ([]byte, wasmsnap.Plan, error) {
	if e.opts.tune.pooling != nil {
		return wasm, wasmsnap.Plan{}, errors.New("the pooling allocator resets memories under a snapshot's mappings")
	}
	_, info, err := interrupt.InstrumentInfo(wasm)
	if err != nil {
		return wasm, wasmsnap.Plan{}, err
	}
	p, err := wasmsnap.Prepare(wasm, wasmsnap.Code{MutatesTables: info.MutatesTables, BulkData: info.BulkData})
	if err != nil {
		return wasm, wasmsnap.Plan{}, err
	}
	plan, err := wasmsnap.Read(p)
	if err != nil {
		return wasm, wasmsnap.Plan{}, err
	}
	if plan.Refused != "" {
		return wasm, wasmsnap.Plan{}, errors.New(plan.Refused)
	}
	return p, plan, nil
}

// newSnapshots makes a module's table, with spares snapshots kept ready
// for owners never seen before (wasmsnap.Options.Spares), each captured
// once no new owner has come for spareDelay and bounded by spareTimeout.
func newSnapshots(plan wasmsnap.Plan, mmap bool, spares int) *snapshots {
	owners := wasmsnap.NewOwners(wasmsnap.Options[*snapshot]{
		Release:    (*snapshot).release,
		Spare:      spareTimeout,
		Spares:     spares,
		SpareDelay: spareDelay,
	})
	return &snapshots{Owners: owners, plan: plan, mmap: mmap && canMap}
}

// spareTimeout bounds a spare's capture; spareDelay is how long the
// refill waits after the last new owner (wasmsnap.Options.SpareDelay), as
// on wazero.
const (
	spareTimeout = 30 * time.Second
	spareDelay   = 2 * time.Millisecond
)

var _ runtime.Owned = (*compiled)(nil)

// InstantiateFor implements runtime.Owned.
func (c *compiled) InstantiateFor(ctx context.Context, owner string) (runtime.Instance, error) {
	if c.snaps == nil {
		return c.Instantiate(ctx)
	}
	return c.snaps.Instantiate(ctx, owner, c, c.notice)
}

// Capture implements wasmsnap.Engine: it instantiates from scratch,
// capturing the initialised state. It returns the instance (nil if the
// instantiation failed, with the error) and the snapshot, or the instance
// and why no snapshot was taken.
func (c *compiled) Capture(ctx context.Context) (runtime.Instance, *snapshot, error) {
	w := &wasmsnap.CapturingWriter{Forward: c.stderr}
	s, st, flag, err := c.newStoreOut(nil, w, w)
	if err != nil {
		return nil, nil, fmt.Errorf("plugin %s: instantiate: %w", c.name, err)
	}
	inst := &instance{s: s, st: st, flag: flag, pages: c.pages, fuel: c.fuel, fns: map[string]*wasmtime.Func{}}
	st.ctx, st.call, st.capturing = ctx, &hostfn.Call{Plugin: c.name}, true
	disarm := watch(ctx, s, flag)
	if c.fuel > 0 {
		err = s.SetFuel(math.MaxUint64) // as Instantiate: not a call
	}
	if err == nil {
		err = c.instantiateSeen(inst, func(fresh []byte) {
			c.snaps.mu.Lock()
			if c.snaps.base == nil {
				c.snaps.base = bytes.Clone(fresh)
			}
			c.snaps.mu.Unlock()
		})
	}
	disarm()
	st.ctx, st.call, st.capturing = nil, nil, false
	if err != nil {
		e := classify(ctx, err, inst)
		inst.Close(ctx)
		err = fmt.Errorf("plugin %s: instantiate: %w", c.name, e)
		if errors.Is(st.panicked, errInitReach) {
			err = errInitReach // refused (EndCapture), not failed
		}
	}
	return wasmsnap.EndCapture(ctx, c, inst, err, w, func() (*snapshot, error) { return c.take(inst) })
}

// take captures an initialised instance's memory and globals.
func (c *compiled) take(i *instance) (*snapshot, error) {
	if i.st.mem == nil {
		return nil, errors.New("no exported memory")
	}
	cur := i.st.mem.UnsafeData(i.s)
	snap := &snapshot{size: uint64(len(cur))}
	for _, g := range c.snaps.plan.Globals {
		ex := i.wi.GetExport(i.s, g.Name)
		if ex == nil || ex.Global() == nil {
			return nil, fmt.Errorf("global %s missing", g.Name)
		}
		snap.globals = append(snap.globals, ex.Global().Get(i.s))
	}
	c.snaps.mu.Lock()
	base := c.snaps.base
	c.snaps.mu.Unlock()
	snap.runs = wasmsnap.Runs(base, cur, os.Getpagesize(), wasmsnap.MaxRuns)
	if c.snaps.mmap {
		img, err := newMemfdImage(cur, snap.runs)
		if err != nil {
			return nil, err
		}
		snap.image = img
		return snap, nil
	}
	var n uint64
	for _, r := range snap.runs {
		n += r.N
	}
	snap.data = make([]byte, 0, n)
	for _, r := range snap.runs {
		snap.data = append(snap.data, cur[r.Off:r.Off+r.N]...)
	}
	return snap, nil
}

// Restore implements wasmsnap.Engine: it starts an instance from snap: instantiated, nothing run, the
// memory grown and its changed pages and the globals restored.
func (c *compiled) Restore(ctx context.Context, snap *snapshot) (runtime.Instance, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("plugin %s: instantiate from snapshot: %w: %w", c.name, runtime.ErrTimeout, ctx.Err())
	}
	s, st, flag, err := c.newStore(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiate from snapshot: %w", c.name, err)
	}
	inst := &instance{s: s, st: st, flag: flag, pages: c.pages, fuel: c.fuel, fns: map[string]*wasmtime.Func{}}
	if err := c.restoreInto(inst, snap); err != nil {
		e := classify(ctx, err, inst)
		inst.Close(ctx)
		return nil, fmt.Errorf("plugin %s: instantiate from snapshot: %w", c.name, e)
	}
	return inst, nil
}

func (c *compiled) restoreInto(inst *instance, snap *snapshot) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if err := c.link(inst); err != nil {
		return err
	}
	mem := inst.st.mem
	if mem == nil {
		return errors.New("no exported memory")
	}
	if have, want := mem.Size(inst.s), snap.size/65536; want > have {
		if _, err := mem.Grow(inst.s, want-have); err != nil {
			return fmt.Errorf("grow to the snapshot's %d pages: %w", want, err)
		}
	}
	data := mem.UnsafeData(inst.s)
	if uint64(len(data)) != snap.size {
		return fmt.Errorf("memory is %d bytes, the snapshot's %d", len(data), snap.size)
	}
	if snap.image != nil {
		if err := snap.image.mapOver(data, snap.runs); err != nil {
			return err
		}
	} else {
		var k uint64
		for _, r := range snap.runs {
			copy(data[r.Off:r.Off+r.N], snap.data[k:k+r.N])
			k += r.N
		}
	}
	for k, g := range c.snaps.plan.Globals {
		ex := inst.wi.GetExport(inst.s, g.Name)
		if ex == nil || ex.Global() == nil {
			return fmt.Errorf("global %s missing", g.Name)
		}
		if err := ex.Global().Set(inst.s, snap.globals[k]); err != nil {
			return fmt.Errorf("global %s: %w", g.Name, err)
		}
	}
	return nil
}

// release frees the snapshot's memfd (wasmsnap.Options.Release).
func (snap *snapshot) release() {
	if snap.image != nil {
		snap.image.close()
	}
}

// close releases every owner's snapshot (compiled.Close).
func (s *snapshots) close() {
	if s == nil {
		return
	}
	s.Owners.Close()
	s.mu.Lock()
	s.base = nil
	s.mu.Unlock()
}

// Forget implements runtime.Owned: owner's snapshot is released (its
// instances keep their memories).
func (c *compiled) Forget(owner string) {
	if c.snaps != nil {
		c.snaps.Forget(owner)
	}
}
