package plugin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
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
