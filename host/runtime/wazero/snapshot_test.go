package wazero_test

import (
	"context"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// snapCompile compiles pkg on an engine with snapshots on, collecting the
// engine's notices.
func snapCompile(t *testing.T, pkg string) (runtime.Compiled, *[]string) {
	t.Helper()
	e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir(), Snapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	wasm := testwasm.Wasm(t, pkg)
	testwasm.Warm(t, wasm)
	var mu sync.Mutex
	notices := &[]string{}
	c, err := e.Compile(context.Background(), wasm, runtime.Config{Name: "t", Families: []hostfn.Family{core.New()},
		Notice: func(s string) { mu.Lock(); *notices = append(*notices, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, notices
}

func instFor(t *testing.T, c runtime.Compiled, owner string) runtime.Instance {
	t.Helper()
	inst, err := runtime.InstantiateFor(context.Background(), c, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

// TestSnapshotCycles: an owner's snapshot keeps at most 16 runs of pages,
// and instantiating from it and closing leaves the process's file
// descriptors and mappings flat. (The engine-neutral snapshot cases are in
// the conformance table, runtimetest.)
func TestSnapshotCycles(t *testing.T) {
	c, notices := snapCompile(t, "host/runtime/runtimetest/testdata/snapguest")
	instFor(t, c, "o")
	ok, size, pages, runs := wazero.Snapshot(c, "o")
	if !ok || runs > 16 { // maxRuns: each run is a mapping of every instance
		t.Fatalf("snapshot %v with %d runs (at most 16); notices %q", ok, runs, *notices)
	}
	t.Logf("snapshot: %d bytes of memory, %d pages changed by the initialisation in %d runs", size, pages, runs)
	count := func() (fds, maps int) {
		ents, _ := os.ReadDir("/proc/self/fd")
		b, _ := os.ReadFile("/proc/self/maps")
		return len(ents), strings.Count(string(b), "\n")
	}
	cycle := func() {
		inst, err := runtime.InstantiateFor(context.Background(), c, "o")
		if err != nil {
			t.Fatal(err)
		}
		inst.Close(context.Background())
	}
	for range 100 {
		cycle()
	}
	fds0, maps0 := count()
	const n = 10000
	for range n {
		cycle()
	}
	fds1, maps1 := count()
	if fds1 > fds0+2 || maps1 > maps0+20 {
		t.Fatalf("after %d cycles: fds %d -> %d, mappings %d -> %d", n, fds0, fds1, maps0, maps1)
	}
}

// BenchmarkSnapshotTenants: the memory each tenant (owner) with one warm
// echo instance adds, with snapshots on and off.
//
//	go test ./host/runtime/wazero -run '^$' -bench SnapshotTenants -benchtime 200x
func BenchmarkSnapshotTenants(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "scratch", true: "snapshots"}[on], func(b *testing.B) {
			c := compileWith(b, "plugins/examples/echo", 64*16, wazero.Options{Snapshots: on})
			ctx := context.Background()
			warm, err := runtime.InstantiateFor(ctx, c, "warm") // the module's first capture
			if err != nil {
				b.Fatal(err)
			}
			defer warm.Close(ctx)
			insts := make([]runtime.Instance, 0, b.N)
			goruntime.GC()
			debug.FreeOSMemory()
			start := pssKiB(b)
			b.ResetTimer()
			for i := range b.N {
				inst, err := runtime.InstantiateFor(ctx, c, strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := call(ctx, inst, "echo", `{"text":"hi"}`); err != nil {
					b.Fatal(err)
				}
				insts = append(insts, inst)
			}
			b.StopTimer()
			goruntime.GC()
			debug.FreeOSMemory()
			per := (pssKiB(b) - start) / float64(b.N)
			b.ReportMetric(per, "PSS-KiB/tenant")
			b.ReportMetric(1<<20/per, "tenants/GiB")
			for _, i := range insts {
				i.Close(ctx)
			}
		})
	}
}

// BenchmarkSnapshotNewTenant: the first instance of a tenant never seen
// before, and its first echo call, when the module's spare snapshot is
// ready (it is captured in the background after each new tenant).
//
//	go test ./host/runtime/wazero -run '^$' -bench SnapshotNewTenant -benchtime 100x
func BenchmarkSnapshotNewTenant(b *testing.B) {
	c := compileWith(b, "plugins/examples/echo", 64*16, wazero.Options{Snapshots: true})
	ctx := context.Background()
	warm, err := runtime.InstantiateFor(ctx, c, "warm")
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close(ctx)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if !wazero.WaitSpare(c) {
			b.Fatal("no spare snapshot")
		}
		b.StartTimer()
		inst, err := runtime.InstantiateFor(ctx, c, strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := call(ctx, inst, "echo", `{"text":"hi"}`); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		inst.Close(ctx)
		b.StartTimer()
	}
}
