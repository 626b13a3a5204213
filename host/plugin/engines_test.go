package plugin_test

import (
	"context"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
)

// onEngines runs f as a subtest on every engine of the engine table
// (runtimetest.Engines), on the engine the package's tests share.
func onEngines(t *testing.T, f func(t *testing.T, eng runtime.Engine)) {
	runtimetest.OnEngines(t, func(t *testing.T, e *runtimetest.Engine) { f(t, e.Shared(t)) })
}

func newRegistryOn(t testing.TB, eng runtime.Engine, dir string) *plugin.Registry {
	t.Helper()
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	return reg
}

// The hostile plugins are contained the same way, with the same error
// texts, on every engine.
func TestHostileContained(t *testing.T) {
	t.Parallel()
	onEngines(t, testHostileContained)
}
func TestLoadRefused(t *testing.T) {
	t.Parallel()
	onEngines(t, testLoadRefused)
}
