package hooks_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hooks"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/sdk/abi"
)

// guardRegistry is a registry with the echo example, the test guard (in
// Go; its policy config makes it a no-op: allow, then keep) and the
// example guards in C and Rust (no-ops without config).
func guardRegistry(tb testing.TB) *plugin.Registry {
	tb.Helper()
	dir := tb.TempDir()
	testplugins.Package(tb, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(tb, dir, "host/hooks/testdata/testguard", nil, nil)
	testplugins.Package(tb, dir, "plugins/examples/guard-c", nil, nil)
	testplugins.Package(tb, dir, "plugins/examples/guard-rust", nil, nil)
	ctx := context.Background()
	eng := benchEngine(tb)
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { reg.Close(ctx) })
	return reg
}

// benchEngine is the engine AIO_ENGINE names (make conformance's
// variable; the default engine when unset), shared by the test binary.
func benchEngine(tb testing.TB) runtime.Engine {
	tb.Helper()
	name := os.Getenv("AIO_ENGINE")
	if name == "" {
		name = runtimetest.Default
	}
	for _, e := range runtimetest.Engines() {
		if e.Name == name {
			return e.Shared(tb)
		}
	}
	tb.Fatalf("AIO_ENGINE=%s: not an engine of this test binary (wasmtime needs cgo)", name)
	return nil
}

// cpuTime is the CPU time the process has used (user and system, every
// thread: the garbage collector's share of a call included). On a shared
// machine a call's CPU time moves far less with the others' load than its
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// noopGuards is a chain of n no-op guard entries of guard plugin name,
// each asked before and after the call (the Go test guard told to allow
// and keep; the C and Rust example guards as they are).
func noopGuards(name string, n int) []caps.Hook {
	var hs []caps.Hook
	for i := 0; i < n; i++ {
		h := caps.Hook{Plugin: name}
		if name == "testguard" {
			h.Config = map[string]string{"before": "allow", "after": "keep"}
		}
		hs = append(hs, h)
	}
	return hs
}

// chainCases are the chains measured: none (the cost every call pays),
// and one and three no-op guards in Go and in C, three in Rust.
var chainCases = []struct {
	name  string
	hooks []caps.Hook
}{
	{"none", nil},
	{"go=1", noopGuards("testguard", 1)},
	{"go=3", noopGuards("testguard", 3)},
	{"c=1", noopGuards("guard-c", 1)},
	{"c=3", noopGuards("guard-c", 3)},
	{"rust=3", noopGuards("guard-rust", 3)},
}

// BenchmarkChain measures a call of echo through the hook chain with each
// of chainCases. The difference to "none" is what the guards add.
func BenchmarkChain(b *testing.B) {
	reg := guardRegistry(b)
	for _, bc := range chainCases {
		b.Run(bc.name, func(b *testing.B) {
			c := hooks.New(reg, hooks.Options{Guards: reg})
			c.SetHooks(bc.hooks)
			ctx := context.Background()
			req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := c.CallTool(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestChainOverhead reports the median and p99 of a call of echo through
// the chain with each of chainCases (go test -v -run ChainOverhead),
// measured in rounds that alternate the chains (so that the load of a
// shared machine hits them alike); it checks that the no-op chains answer
// as the tool does.
func TestChainOverhead(t *testing.T) {
	rounds, per := 20, 500
	if testing.Short() {
		rounds, per = 2, 100 // the check, not the figures
	}
	reg := guardRegistry(t)
	ctx := context.Background()
	req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)}
	chains := make([]*hooks.Chain, len(chainCases))
	samples := make([][]time.Duration, len(chainCases))
	var plain string
	for i, cc := range chainCases {
		chains[i] = hooks.New(reg, hooks.Options{Guards: reg})
		chains[i].SetHooks(cc.hooks)
		for j := 0; j < 200; j++ { // warm the instances
			b, err := chains[i].CallTool(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				plain = string(b)
			} else if string(b) != plain {
				t.Fatalf("%s: a no-op chain changed the result: %s vs %s", cc.name, b, plain)
			}
		}
	}
	cpu := make([]time.Duration, len(chainCases)) // the process's CPU time in each chain's rounds
	for r := 0; r < rounds; r++ {
		for i, c := range chains {
			c0 := cpuTime()
			for j := 0; j < per; j++ {
				st := time.Now()
				_, err := c.CallTool(ctx, req)
				samples[i] = append(samples[i], time.Since(st))
				if err != nil {
					t.Fatal(err)
				}
			}
			cpu[i] += cpuTime() - c0
		}
	}
	var n50, n99, ncpu time.Duration
	for i, ds := range samples {
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		p50, p99 := ds[len(ds)/2], ds[len(ds)*99/100]
		perCall := cpu[i] / time.Duration(len(ds))
		if i == 0 {
			n50, n99, ncpu = p50, p99, perCall
			t.Logf("%-6s median %8s p99 %8s cpu/call %8s", chainCases[i].name, p50, p99, perCall)
			continue
		}
		t.Logf("%-6s median %8s (+%s) p99 %8s (%.2fx) cpu/call %8s (+%s)", chainCases[i].name, p50, p50-n50, p99,
			float64(p99)/float64(n99), perCall, perCall-ncpu)
	}
}

// BenchmarkGuardOp measures one hook op of a no-op guard alone, through
// the registry (Registry.CallGuard: the instance, the deadline, the call
// into wasm and the guest's answer), without the chain around it: the
// floor of what each guard adds in each phase.
func BenchmarkGuardOp(b *testing.B) {
	reg := guardRegistry(b)
	ev, err := hooks.GuardEvent(nil, &hooks.Event{Tenant: "default", Tool: "echo", Input: []byte(`{"text":"hi"}`)})
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range []string{"testguard", "guard-c", "guard-rust"} {
		b.Run(g, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				out, err := reg.CallGuard(ctx, g, abi.OpHookBefore, "", "echo", ev)
				if err != nil || string(out) != `{"action":"allow"}` {
					b.Fatalf("%s %v", out, err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestGuardOpAllocs: a no-op C guard's op allocates once on the host (the
// call's deadline context), and the chain of three around echo adds one
// allocation per hook op and one for the call's event: the cuts of the
// call path (no context value, no variadic slice, no answer buffer, no
// second clock) stay made.
func TestGuardOpAllocs(t *testing.T) {
	if raceEnabled {
		t.Log("under the race detector allocations are not counted")
		return
	}
	reg := guardRegistry(t)
	ctx := context.Background()
	ev, err := hooks.GuardEvent(nil, &hooks.Event{Tenant: "default", Tool: "echo", Input: []byte(`{"text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	op := testing.AllocsPerRun(200, func() {
		if out, err := reg.CallGuard(ctx, "guard-c", abi.OpHookBefore, "", "echo", ev); err != nil || string(out) != `{"action":"allow"}` {
			t.Fatalf("%s %v", out, err)
		}
	})
	if op > 1 {
		t.Errorf("a no-op guard op allocates %.1f times, want 1", op)
	}
	req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)}
	chain := func(hs []caps.Hook) float64 {
		c := hooks.New(reg, hooks.Options{Guards: reg})
		c.SetHooks(hs)
		return testing.AllocsPerRun(200, func() {
			if _, err := c.CallTool(ctx, req); err != nil {
				t.Fatal(err)
			}
		})
	}
	none, three := chain(nil), chain(noopGuards("guard-c", 3))
	if three-none > 6+1 {
		t.Errorf("three no-op guards add %.1f allocations to a call (%.1f -> %.1f), want at most 7 (one per hook op, one for the event)", three-none, none, three)
	}
	t.Logf("allocations: a guard op %.1f; echo %.1f, behind three guards %.1f", op, none, three)
}
