package plugin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

func newRegistry(t testing.TB, dir string) *plugin.Registry {
	t.Helper()
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	return reg
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// engine is the default engine, shared by the package's tests: its
// compilation cache makes loading the same module again cheap.
func engine(t testing.TB) runtime.Engine { return runtimetest.Engines()[0].Shared(t) }

// BenchmarkCallEcho measures the in-process call path: catalogue lookup,
// pooled instance, argument passing, the SDK's decode and encode in the
// guest, result validation.
func BenchmarkCallEcho(b *testing.B) { benchCallEcho(b, "plugins/examples/echo") }

// benchCallEcho calls the tool echo of the plugin built from pkg.
func benchCallEcho(b *testing.B, pkg string) {
	dir := b.TempDir()
	testplugins.Package(b, dir, pkg, nil, nil)
	reg := newRegistry(b, dir)
	ctx := context.Background()
	req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := reg.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallEchoTraced is BenchmarkCallEcho with tracing on: the plugin
// call, instance and run spans made and batched to an exporter that drops
// them (what tracing on costs a call, without the network).
func BenchmarkCallEchoTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	tracing.Enable(tp)
	defer func() { tracing.Disable(); tp.Shutdown(context.Background()) }()
	BenchmarkCallEcho(b)
}

// BenchmarkReloadChanged measures one reload of a changed plugin, as a
// deploy swaps versions: the package is a link relinked between two
// versions, each reload loading the other (both were compiled before, so
// this is a reload from a warm cache), with no instances to prewarm.
func BenchmarkReloadChanged(b *testing.B) {
	work := b.TempDir()
	v1, v2 := swapVersions(b, work)
	dir := filepath.Join(work, "plugins")
	os.MkdirAll(dir, 0o755)
	link := filepath.Join(dir, "swap")
	relink(b, v1, link)
	reg := newRegistry(b, dir)
	ctx := context.Background()
	targets := []string{v2, v1}
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		relink(b, targets[i%2], link)
		if err := reg.Reload(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// the process's CPU time is what a loaded machine does not inflate
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReloadPrewarm: what a hot swap spends on its prewarm. As
// BenchmarkReloadChanged (both versions compiled before), with the version
// swapped out having had two calls at once before each reload, so that its
// successor is prewarmed with two instances ("prewarm": on an engine with
// snapshots, as aiod runs; "prewarm-scratch": snapshots off, every
// instance running the guest's initialisation), against the same reload
// with no instance to prewarm ("none"). cpu-ms/op is the process's CPU
// during the reloads alone; the prewarm's is the difference from "none".
// prewarm-ms is the median wall time the registry logs for the prewarm.
//
//	go test ./host/plugin -run '^$' -bench ReloadPrewarm -benchtime 40x
func BenchmarkReloadPrewarm(b *testing.B) {
	for _, c := range []struct {
		name      string
		calls     int
		snapshots bool
	}{{"none", 0, true}, {"prewarm", 2, true}, {"prewarm-scratch", 2, false}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := wazero.New(wazero.Options{CacheDir: testwasm.CacheDir(), Snapshots: c.snapshots})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(context.Background())
			work := b.TempDir()
			v1, v2 := swapVersions(b, work)
			dir := filepath.Join(work, "plugins")
			os.MkdirAll(dir, 0o755)
			link := filepath.Join(dir, "swap")
			relink(b, v1, link)
			logs := &prewarmLog{}
			ctx := context.Background()
			reg, err := plugin.New(ctx, plugin.Options{Engine: e, Policy: &caps.Policy{}, Dir: dir, Logger: slog.New(logs)})
			if err != nil {
				b.Fatal(err)
			}
			defer reg.Close(ctx)
			targets := []string{v2, v1}
			burst := func() {
				var wg sync.WaitGroup
				for range c.calls {
					wg.Add(1)
					go func() { defer wg.Done(); call(b, reg, "which", `{"text":"z","sleep_ms":30}`) }()
				}
				wg.Wait()
			}
			// both versions compiled, checked, and with their snapshots
			for i := range 2 {
				burst()
				relink(b, targets[i%2], link)
				if err := reg.Reload(ctx); err != nil {
					b.Fatal(err)
				}
			}
			logs.reset()
			var cpu time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				burst()
				relink(b, targets[i%2], link)
				b.StartTimer()
				cpu0 := cpuTime(b)
				if err := reg.Reload(ctx); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - cpu0
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			ms, warmed := logs.median()
			b.ReportMetric(ms, "prewarm-ms")
			if c.calls > 0 && warmed < float64(c.calls) {
				b.Fatalf("prewarmed %v instances, want %d", warmed, c.calls)
			}
		})
	}
}

// prewarmLog keeps the prewarm_ms and prewarmed the registry logs for each
// plugin it loads.
type prewarmLog struct {
	mu     sync.Mutex
	ms     []float64
	warmed []float64
}

func (l *prewarmLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *prewarmLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *prewarmLog) WithGroup(string) slog.Handler            { return l }
func (l *prewarmLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "plugin loaded" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "prewarm_ms":
			l.ms = append(l.ms, a.Value.Float64())
		case "prewarmed":
			l.warmed = append(l.warmed, float64(a.Value.Int64()))
		}
		return true
	})
	return nil
}

func (l *prewarmLog) reset() {
	l.mu.Lock()
	l.ms, l.warmed = nil, nil
	l.mu.Unlock()
}

// median is the median prewarm_ms and prewarmed logged since reset.
func (l *prewarmLog) median() (ms, warmed float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ms) == 0 {
		return 0, 0
	}
	slices.Sort(l.ms)
	slices.Sort(l.warmed)
	return l.ms[len(l.ms)/2], l.warmed[len(l.warmed)/2]
}
