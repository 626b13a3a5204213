package wasmsnap

import (
	"runtime/metrics"
	"sync"
)

// SchedIdle reports whether the Go scheduler has a processor to spare
// beyond the calling goroutine: fewer goroutines are running, runnable or
// in a system or C call (a wasmtime guest runs in one) than GOMAXPROCS,
// the caller included. An engine gives it to its Owners (Options.Idle) so
// that spares are captured on a core no call is using.
func SchedIdle() bool {
	s := schedSamples.Get().(*[]metrics.Sample)
	defer schedSamples.Put(s)
	metrics.Read(*s)
	var busy uint64
	for _, m := range (*s)[1:] {
		if m.Value.Kind() == metrics.KindUint64 {
			busy += m.Value.Uint64()
		}
	}
	procs := (*s)[0]
	if procs.Value.Kind() != metrics.KindUint64 {
		return true
	}
	return busy < procs.Value.Uint64()
}

var schedSamples = sync.Pool{New: func() any {
	s := []metrics.Sample{
		{Name: "/sched/gomaxprocs:threads"},
		{Name: "/sched/goroutines/running:goroutines"},
		{Name: "/sched/goroutines/runnable:goroutines"},
		{Name: "/sched/goroutines/not-in-go:goroutines"},
	}
	return &s
}}
