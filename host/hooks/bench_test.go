package hooks_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hooks"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// guardRegistry is a registry with the echo example and the test guard
// (whose policy config makes it a no-op: allow, then keep).
func guardRegistry(tb testing.TB) *plugin.Registry {
	tb.Helper()
	dir := tb.TempDir()
	testplugins.Package(tb, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(tb, dir, "host/hooks/testdata/testguard", nil, nil)
	ctx := context.Background()
	eng := testplugins.Engine(tb)
	tb.Cleanup(func() { eng.Close(ctx) })
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { reg.Close(ctx) })
	return reg
}

// noopGuards is a chain of n no-op guard entries (the test guard, each
// asked before and after the call).
func noopGuards(n int) []caps.Hook {
	var hs []caps.Hook
	for i := 0; i < n; i++ {
		hs = append(hs, caps.Hook{Plugin: "testguard", Config: map[string]string{"before": "allow", "after": "keep"}})
	}
	return hs
}

// BenchmarkChain measures a call of echo through the hook chain: with no
// hooks (the cost every call pays), and with one and three no-op guard
// plugins (each a call into its wasm instance before the call and one
// after). The difference to "none" is what the guards add.
func BenchmarkChain(b *testing.B) {
	reg := guardRegistry(b)
	for _, bc := range []struct {
		name  string
		hooks []caps.Hook
	}{{"none", nil}, {"guards=1", noopGuards(1)}, {"guards=3", noopGuards(3)}} {
		b.Run(bc.name, func(b *testing.B) {
			c := hooks.New(reg, hooks.Options{Guards: reg})
			c.SetHooks(bc.hooks)
			ctx := context.Background()
			req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.CallTool(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestChainOverhead reports the median and p99 of a call through the chain
// with none and with three no-op guards (go test -v -run ChainOverhead);
// it checks only that the guards run (a no-op chain answers as the tool).
func TestChainOverhead(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300 // the check, not the figures
	}
	reg := guardRegistry(t)
	ctx := context.Background()
	req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)}
	measure := func(hs []caps.Hook) (p50, p99 time.Duration, res string) {
		c := hooks.New(reg, hooks.Options{Guards: reg})
		c.SetHooks(hs)
		for i := 0; i < 200; i++ { // warm the instances
			c.CallTool(ctx, req)
		}
		ds := make([]time.Duration, n)
		for i := range ds {
			st := time.Now()
			b, err := c.CallTool(ctx, req)
			ds[i] = time.Since(st)
			if err != nil {
				t.Fatal(err)
			}
			res = string(b)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[n/2], ds[n*99/100], res
	}
	n50, n99, plain := measure(nil)
	g50, g99, guarded := measure(noopGuards(3))
	if plain != guarded {
		t.Fatalf("a no-op chain changed the result: %s vs %s", guarded, plain)
	}
	t.Logf("echo: median %s p99 %s; with three no-op guards: median %s (+%s) p99 %s (%.2fx)", n50, n99, g50, g50-n50, g99, float64(g99)/float64(n99))
}
