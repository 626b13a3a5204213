//go:build cgo

package wasmtime

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
)

// BenchmarkInstantiate splits an instantiation of the echo plugin into its
// phases (store and WASI context; instantiation; the guest's _initialize,
// with the page faults it takes; Close) on the engine as configured and on
// the variants measured against it (BENCHMARKS.md, "Where an instantiation
// goes"):
//
//	go test -run '^$' -bench BenchmarkInstantiate -benchtime 300x ./host/runtime/wasmtime/
//
// The pooling variants use a temporary cache directory (their first
// iteration compiles).
func BenchmarkInstantiate(b *testing.B) {
	pool := func(keep uint64) *pooling {
		return &pooling{total: 1000, maxMemory: 4 << 30, keepResident: keep, tableElements: 100_000}
	}
	for _, v := range []struct {
		name string
		tune tuning
		temp bool
	}{
		{"default", tuning{}, false},
		{"linker", tuning{linker: true}, false},
		{"no-cow", tuning{noCOW: true}, false},
		{"pooling", tuning{pooling: pool(0)}, true},
		{"pooling-keep-4MiB", tuning{pooling: pool(4 << 20)}, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			dir := testplugins.CacheDir()
			if v.temp {
				dir = b.TempDir()
			}
			instantiatePhases(b, Options{CacheDir: dir, tune: v.tune})
		})
	}
}

func instantiatePhases(b *testing.B, opts Options) {
	e, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	ci, err := e.Compile(context.Background(), testplugins.Wasm(b, "plugins/examples/echo"), runtime.Config{Name: "echo", Families: []hostfn.Family{core.New()}, MemoryPages: 16 * 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer ci.Close(context.Background())
	c := ci.(*compiled)
	var store, link, init, closing time.Duration
	var faults int64
	for b.Loop() {
		t0 := time.Now()
		s, st, flag, err := c.newStore(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		inst := &instance{s: s, st: st, flag: flag, pages: c.pages, fns: map[string]*wasmtime.Func{}}
		disarm := watch(context.Background(), s, flag)
		t1 := time.Now()
		wi, err := c.newInstance(s)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		st.ctx, st.call = context.Background(), &hostfn.Call{Plugin: "echo"}
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		if _, err := wi.GetFunc(s, "_initialize").Call(s); err != nil {
			b.Fatal(err)
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		t3 := time.Now()
		disarm()
		inst.Close(context.Background())
		t4 := time.Now()
		faults += ru1.Minflt - ru0.Minflt
		store += t1.Sub(t0)
		link += t2.Sub(t1)
		init += t3.Sub(t2)
		closing += t4.Sub(t3)
	}
	n := float64(b.N)
	b.ReportMetric(float64(store.Microseconds())/n, "store-µs/op")
	b.ReportMetric(float64(link.Microseconds())/n, "instantiate-µs/op")
	b.ReportMetric(float64(init.Microseconds())/n, "initialize-µs/op")
	b.ReportMetric(float64(faults)/n, "initialize-faults/op")
	b.ReportMetric(float64(closing.Microseconds())/n, "close-µs/op")
}
