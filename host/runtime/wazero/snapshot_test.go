package wazero_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

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
// ready (it is captured in the background after each new tenant, once the
// module has served two).
//
//	go test ./host/runtime/wazero -run '^$' -bench SnapshotNewTenant -benchtime 100x
func BenchmarkSnapshotNewTenant(b *testing.B) {
	c := compileWith(b, "plugins/examples/echo", 64*16, wazero.Options{Snapshots: true})
	ctx := context.Background()
	for _, owner := range []string{"warm", "warm2"} { // spares come once two owners have
		warm, err := runtime.InstantiateFor(ctx, c, owner)
		if err != nil {
			b.Fatal(err)
		}
		defer warm.Close(ctx)
	}
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

// TestSnapshotSparePool: with Options.Spares the module keeps that many
// spare snapshots once two owners have come, and no more; new owners that
// come at once each get an initialisation of their own (the guest's seed,
// drawn in its initialisation, differs between every two owners, and an
// owner's later instance sees its own), and the pool is refilled.
func TestSnapshotSparePool(t *testing.T) {
	const spares = 3
	e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir(), Snapshots: true, Spares: spares})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	wasm := testwasm.Wasm(t, "host/runtime/runtimetest/testdata/snapguest")
	testwasm.Warm(t, wasm)
	ctx := context.Background()
	c, err := e.Compile(ctx, wasm, runtime.Config{Name: "t", Families: []hostfn.Family{core.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	seed := func(owner string) string {
		inst, err := runtime.InstantiateFor(ctx, c, owner)
		if err != nil {
			t.Error(err)
			return ""
		}
		defer inst.Close(ctx)
		out, err := call(ctx, inst, "seed", "{}")
		if err != nil {
			t.Error(err)
		}
		return out
	}
	full := func() {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); wazero.Spares(c) < spares; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d spares, want %d", wazero.Spares(c), spares)
			}
		}
		time.Sleep(100 * time.Millisecond)
		if n := wazero.Spares(c); n != spares {
			t.Fatalf("%d spares, want %d", n, spares)
		}
	}
	seeds := map[string]string{"a": seed("a"), "b": seed("b")}
	full()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 2 * spares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("new%d", i)
			s := seed(owner)
			mu.Lock()
			seeds[owner] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	byseed := map[string]string{}
	for owner, s := range seeds {
		if s == "" {
			t.Fatalf("%s: no seed", owner)
		}
		if other, dup := byseed[s]; dup {
			t.Fatalf("owners %s and %s share an initialisation (seed %s)", owner, other, s)
		}
		byseed[s] = owner
		if again := seed(owner); again != s {
			t.Fatalf("%s's later instance saw seed %s, its first %s", owner, again, s)
		}
	}
	full()
}

// BenchmarkGoRuntimeFloor: an instance from scratch (its initialisation
// run, no snapshot) of a Go module with nothing but the Go runtime
// (testdata/barego), beside the Go echo plugin. The first is the least a
// tenant that finds no spare snapshot waits for a Go plugin: the isolation
// rule gives it an initialisation of its own (BENCHMARKS.md, "Instances
// from snapshots").
//
//	go test ./host/runtime/wazero -run '^$' -bench GoRuntimeFloor -benchtime 300x
func BenchmarkGoRuntimeFloor(b *testing.B) {
	for _, m := range []struct{ name, pkg string }{
		{"runtime-only", "host/runtime/wazero/testdata/barego"},
		{"echo", "plugins/examples/echo"},
	} {
		b.Run(m.name, func(b *testing.B) {
			c := compileWith(b, m.pkg, 64*16, wazero.Options{})
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				inst, err := runtime.InstantiateFor(ctx, c, strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				inst.Close(ctx)
				b.StartTimer()
			}
		})
	}
}
