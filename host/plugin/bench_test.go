package plugin_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
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

var (
	engOnce sync.Once
	eng     runtime.Engine
)

// engine is shared by the package's tests: its compilation cache makes
// loading the same module again cheap.
func engine(t testing.TB) runtime.Engine {
	engOnce.Do(func() {
		eng = testplugins.Engine(t)
	})
	return eng
}

// BenchmarkCallEcho measures the in-process call path: catalogue lookup,
// pooled instance, argument passing, the SDK's decode and encode in the
// guest, result validation.
func BenchmarkCallEcho(b *testing.B) {
	dir := b.TempDir()
	testplugins.Package(b, dir, "plugins/examples/echo", nil, nil)
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
