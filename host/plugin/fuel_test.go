package plugin_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
)

// syncBuffer is a log sink safe for the registry's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFuelLimit: a plugin's limits.fuel reaches the engine. Where the
// engine meters fuel, a loop ends with the fuel error long before its
// deadline; elsewhere the deadline stops it and the load says, once, that
// fuel is not metered. Either way the pool serves the next call.
func TestFuelLimit(t *testing.T) {
	onEngines(t, func(t *testing.T, eng runtime.Engine) {
		dir := t.TempDir()
		testplugins.Package(t, dir, "host/plugin/testdata/hostile", nil, editManifest(func(m map[string]any) {
			keepTools(m, "ok", "loop")
			m["limits"] = map[string]any{"timeout_ms": 3000, "fuel": 50_000_000, "max_instances": 2}
		}))
		logs := &syncBuffer{}
		ctx := context.Background()
		reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Close(ctx)
		meters := runtime.MetersFuel(eng)
		if n := strings.Count(logs.String(), "fuel not metered"); (n == 1) == meters || n > 1 {
			t.Fatalf("engine meters fuel: %v, yet the load logged %d notes:\n%s", meters, n, logs)
		}
		start := time.Now()
		r := call(t, reg, "loop", `{}`)
		took := time.Since(start)
		want, within := "exceeded its time limit (timeout 3s)", 10*time.Second
		if meters {
			want, within = "exceeded its fuel limit (fuel=50000000) and was stopped", time.Second
		}
		if !r.IsError || !strings.Contains(text(r), want) || took > within {
			t.Fatalf("loop: %+v after %s, want %q within %s", r, took, want, within)
		}
		for i := 0; i < 3; i++ {
			if r := call(t, reg, "ok", `{}`); r.IsError || text(r) != "fine" {
				t.Fatalf("after the loop: ok returned %+v", r)
			}
		}
	})
}
