// Package gcfloor keeps the Go collector's heap goal at or above a floor
// while the live heap is small: the collector then runs when the heap has
// grown to the floor, not when it has doubled a heap of a few megabytes.
//
// An aiod serving the C echo has a live heap of 2-3 MiB, so with GOGC's
// default of 100 the collector ran every 2 MiB allocated: every ~1,400
// echo calls over HTTP, each cycle's fixed cost (marking the roots, the
// stacks and the live heap, the stop-the-world phases, waking the
// workers) coming to ~2 µs of CPU per call, more than any one layer of
// the call path. Above the floor
// the goal is GOGC's own (twice the live heap at 100), so a large heap is
// collected as it was; GOMEMLIMIT, when set, still bounds the heap.
//
// After each collection (a finalizer re-armed every cycle) it reads the
// live heap and sets the GC percentage that puts the next goal at the
// floor, or the process's own percentage once that gives more. A process
// that turned the collector off (GOGC=off) is left alone.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// maxPercent bounds the percentage set for a very small live heap.
const maxPercent = 10000

// Floor is a running floor (Start).
type Floor struct {
	floor   uint64
	base    int // the GC percentage in force at Start
	stopped atomic.Bool
	mu      sync.Mutex
	cur     int
	sample  []metrics.Sample
}

// sentinel is what each cycle's finalizer hangs on (16 bytes and no
// pointers: not a tiny allocation, which would share its block).
type sentinel [16]byte

// Start keeps the heap goal at least floor bytes until Stop. A floor of 0,
// or a process with the collector off, does nothing (Stop still works).
func Start(floor uint64) *Floor {
	f := &Floor{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	f.base = debug.SetGCPercent(100)
	debug.SetGCPercent(f.base)
	f.cur = f.base
	if floor == 0 || f.base < 0 {
		f.stopped.Store(true)
		return f
	}
	f.tune()
	f.arm()
	return f
}

// Stop gives the process its own GC percentage back.
func (f *Floor) Stop() {
	if f.stopped.Swap(true) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	debug.SetGCPercent(f.base)
	f.cur = f.base
}

// arm sets this cycle's sentinel: its finalizer runs after the next
// collection, tunes, and arms the next.
func (f *Floor) arm() {
	s := new(sentinel)
	runtime.SetFinalizer(s, func(*sentinel) {
		if f.stopped.Load() {
			return
		}
		f.tune()
		f.arm()
	})
}

// tune sets the percentage for the live heap now.
func (f *Floor) tune() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped.Load() {
		return
	}
	metrics.Read(f.sample)
	p := Percent(f.sample[0].Value.Uint64(), f.floor, f.base)
	if p != f.cur {
		debug.SetGCPercent(p)
		f.cur = p
	}
}

// Percent is the GC percentage that puts the heap goal of a live heap of
// live bytes at floor, or base when base's goal is higher already (the
// goal being live × (1 + percent/100)); at most maxPercent.
func Percent(live, floor uint64, base int) int {
	if base < 0 || live == 0 {
		return base
	}
	if live+live*uint64(base)/100 >= floor {
		return base
	}
	if live*(1+maxPercent/100) < floor {
		return maxPercent
	}
	return int((floor-live)*100/live) + 1 // rounded up
}
