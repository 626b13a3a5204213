package wazero

import (
	goruntime "runtime"
	"time"
)

// yieldQuantum is how long a guest runs before its goroutine gives the
// processor up (runtime.Gosched) at its next trip into the host. The Go
// scheduler preempts a goroutine only after 10 ms, and compiled wasm cannot
// be preempted but at calls into Go: a guest that ran that long (a
// standard-Go guest's _initialize takes 4-9 ms; a long tool call more)
// held its processor, and every goroutine queued on it (the HTTP handlers
// of other calls) waited for it. A short call (tens of microseconds)
// never reaches the quantum and never yields.
var yieldQuantum = 500 * time.Microsecond

// yielder is an instance's WASI sched_yield (wazero.ModuleConfig
// WithOsyield). An instrumented module whose guest imports sched_yield
// calls it every interrupt.Period loop headers (package interrupt), and
// the guest's own sched_yield calls land here too. Calls on an instance
// are serial, so it needs no lock.
//
// The quantum is the guest's own time: a host function's time moves since
// on by as much (goFunc). A call that waited 0.5 ms in a host function (a
// process's start) yielded at its next trip, right after the wait, and
// queued behind every runnable goroutine (a Machine Mode call's steps each
// came back to a yield: ~0.1 ms of its 2 ms on a loaded machine).
type yielder struct {
	// since is the run's first yield point or its last yield, moved on
	// by the time spent in host functions since; zero at the start of a
	// run (a short run then reads no clock for it).
	since time.Time
	// yields counts the times the processor was given up (tests).
	yields int
}

func newYielder() *yielder { return &yielder{} }

// yield gives the processor up once the run has held it a quantum.
func (y *yielder) yield() {
	if y.since.IsZero() {
		y.since = time.Now()
		return
	}
	if time.Since(y.since) < yieldQuantum {
		return
	}
	goruntime.Gosched()
	y.yields++
	y.since = time.Now()
}
