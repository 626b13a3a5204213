package interrupt_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/aiodhq/aiod/host/internal/interrupt"
)

// countModule exports count(n): a loop of n iterations, and spin: for {}.
var countModule = module(
	sec(1, vec([]byte{0x60, 0x01, 0x7F, 0x00}, []byte{0x60, 0x00, 0x00})),
	sec(3, vec([]byte{0x00}, []byte{0x01})),
	memOne,
	sec(7, vec(cat(str("count"), []byte{0x00, 0x00}), cat(str("spin"), []byte{0x00, 0x01}))),
	sec(10, vec(
		body(0x00, 0x03, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00, 0x0B, 0x0B),
		body(0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B))))

// countYieldModule is countModule importing sched_yield (function 0): its
// trips call it.
var countYieldModule = module(
	sec(1, vec([]byte{0x60, 0x01, 0x7F, 0x00}, []byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7F})),
	sec(2, vec(cat(str(interrupt.YieldModule), str(interrupt.YieldName), []byte{0x00, 0x02}))),
	sec(3, vec([]byte{0x00}, []byte{0x01})),
	memOne,
	sec(7, vec(cat(str("count"), []byte{0x00, 0x01}), cat(str("spin"), []byte{0x00, 0x02}))),
	sec(10, vec(
		body(0x00, 0x03, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00, 0x0B, 0x0B),
		body(0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B))))

var periods = []uint32{100, 1000, 10000, 100000}

func countVariants(tb testing.TB) []struct {
	name        string
	wasm        []byte
	closeOnDone bool
} {
	v := []struct {
		name        string
		wasm        []byte
		closeOnDone bool
	}{
		{"close-on-context-done", countModule, true},
		{"unprotected", countModule, false},
	}
	for _, p := range periods {
		w, err := interrupt.InstrumentPeriod(countModule, p)
		if err != nil {
			tb.Fatal(err)
		}
		v = append(v, struct {
			name        string
			wasm        []byte
			closeOnDone bool
		}{fmt.Sprintf("period=%d", p), w, false})
	}
	w, err := interrupt.Instrument(countYieldModule)
	if err != nil {
		tb.Fatal(err)
	}
	return append(v, struct {
		name        string
		wasm        []byte
		closeOnDone bool
	}{fmt.Sprintf("period=%d,sched_yield", interrupt.Period), w, false})
}

// instantiate instantiates wasm in a runtime of its own, beside a
// sched_yield that counts its calls in yields (if not nil) and does no more.
func instantiate(tb testing.TB, wasm []byte, closeOnDone bool) api.Module {
	return instantiateYield(tb, wasm, closeOnDone, nil)
}

func instantiateYield(tb testing.TB, wasm []byte, closeOnDone bool, yields *atomic.Int64) api.Module {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(closeOnDone))
	tb.Cleanup(func() { r.Close(ctx) })
	_, err := r.NewHostModuleBuilder(interrupt.YieldModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			if yields != nil {
				yields.Add(1)
			}
			stack[0] = 0
		}), nil, []api.ValueType{api.ValueTypeI32}).
		Export(interrupt.YieldName).Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := r.Instantiate(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// TestYieldTrips: a module importing sched_yield calls it once every
// Period loop headers, exactly, and its spin still stops at the flag.
func TestYieldTrips(t *testing.T) {
	var yields atomic.Int64
	m := instantiateYield(t, instrument(t, countYieldModule), false, &yields)
	ctx := context.Background()
	for _, n := range []uint64{1, interrupt.Period - 1, interrupt.Period, 10*interrupt.Period + 7} {
		yields.Store(0)
		if _, err := m.ExportedFunction("count").Call(ctx, n); err != nil {
			t.Fatal(err)
		}
		// the countdown carries over from the call before: one trip more
		if got, want := yields.Load(), int64(n/interrupt.Period); got > want+1 || got < want {
			t.Errorf("count(%d): %d sched_yield calls, want %d (or one more, from the carried countdown)", n, got, want)
		}
	}
	yields.Store(0)
	if _, err := m.ExportedFunction("count").Call(ctx, 100*interrupt.Period); err != nil {
		t.Fatal(err)
	}
	if got := yields.Load(); got < 99 || got > 101 {
		t.Errorf("count(%d): %d sched_yield calls, want 100", 100*interrupt.Period, got)
	}

	g := m.ExportedGlobal(interrupt.GlobalName).(api.MutableGlobal)
	done := make(chan error, 1)
	yields.Store(0)
	go func() {
		_, err := m.ExportedFunction("spin").Call(ctx)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	g.Set(1)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("spin: got %v, want an unreachable trap", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("spin still running 5 s after the interrupt")
	}
	if yields.Load() == 0 {
		t.Error("the spin never called sched_yield")
	}
}

// BenchmarkLoopIteration: the cost of one loop iteration (a decrement and
// a branch) under each termination mechanism.
func BenchmarkLoopIteration(b *testing.B) {
	const n = 1 << 20
	for _, v := range countVariants(b) {
		b.Run(v.name, func(b *testing.B) {
			fn := instantiate(b, v.wasm, v.closeOnDone).ExportedFunction("count")
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				if _, err := fn.Call(ctx, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iter")
		})
	}
}

// BenchmarkGCWhileSpinning: how long a stop-the-world pause waits for a
// guest spinning in for {} ("/sched/pauses/stopping/gc:seconds", the time
// from the stop request to all goroutines stopped) for each period.
func BenchmarkGCWhileSpinning(b *testing.B) {
	for _, v := range countVariants(b) {
		if v.name == "unprotected" {
			continue // blocks the collector forever
		}
		b.Run(v.name, func(b *testing.B) {
			m := instantiate(b, v.wasm, v.closeOnDone)
			g, _ := m.ExportedGlobal(interrupt.GlobalName).(api.MutableGlobal)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.ExportedFunction("spin").Call(ctx) //nolint:errcheck // stopped below
			}()
			time.Sleep(10 * time.Millisecond)
			before := stopping()
			for b.Loop() {
				goruntime.GC()
			}
			after := stopping()
			if g != nil {
				g.Set(1)
			}
			cancel()
			wg.Wait()
			p50, p99, mx := quantiles(before, after)
			b.ReportMetric(p50.Seconds()*1e6, "stop-p50-µs")
			b.ReportMetric(p99.Seconds()*1e6, "stop-p99-µs")
			b.ReportMetric(mx.Seconds()*1e6, "stop-max-µs")
		})
	}
}

func stopping() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

// quantiles of the histogram difference after-before (bucket upper bounds).
func quantiles(before, after *metrics.Float64Histogram) (p50, p99, mx time.Duration) {
	counts := slices.Clone(after.Counts)
	var total uint64
	for i := range counts {
		counts[i] -= before.Counts[i]
		total += counts[i]
	}
	at := func(q float64) time.Duration {
		want := uint64(q * float64(total))
		var seen uint64
		for i, c := range counts {
			seen += c
			if c > 0 && seen >= want {
				return time.Duration(after.Buckets[i+1] * 1e9)
			}
		}
		return 0
	}
	return at(0.5), at(0.99), at(1)
}
