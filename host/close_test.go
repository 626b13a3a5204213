package host_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/plugins/builtin"
)

// janitors counts the goroutines running the MCP session janitor (the
// only goroutine the session table starts).
func janitors() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "created by github.com/aiodhq/aiod/host/mcp.newSessions")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCloseStopsProtocolLayer: Host.Close closes the protocol layer, so
// its session janitor does not outlive the host.
func TestCloseStopsProtocolLayer(t *testing.T) {
	before := janitors()
	cfg := host.Config{PluginsDir: t.TempDir(), CacheDir: testplugins.CacheDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := janitors(); got != before+1 {
		t.Fatalf("%d session janitors after New, want %d", got, before+1)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Close waits for the janitor; allow the scheduler a moment anyway.
	for i := 0; janitors() != before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := janitors(); got != before {
		t.Fatalf("%d session janitors after Close, want %d: the protocol layer outlived the host", got, before)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestNewFailureTearsDown: a New that fails after the engine, the
// browser, the families and the registry (loading the built-ins in the
// background) were built tears every one of them down: no goroutine of
// the host outlives the error.
func TestNewFailureTearsDown(t *testing.T) {
	base := runtime.NumGoroutine()
	cfg := host.Config{PluginsDir: t.TempDir(), CacheDir: testplugins.CacheDir(), Builtins: builtin.FS(),
		PolicyFile: tenancyPolicy(t), AdminKey: aliceKey, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h, err := host.New(context.Background(), cfg)
	if err == nil || h != nil || !strings.Contains(err.Error(), "the admin key is also a tenant's key") {
		t.Fatalf("New = %v, %v; want the admin key refused", h, err)
	}
	n := runtime.NumGoroutine()
	for i := 0; n > base && i < 200; i++ {
		time.Sleep(25 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the failed New, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}
