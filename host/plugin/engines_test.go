package plugin_test

import (
	"context"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
)

// testEngine is one engine the engine-sensitive tests run on. Engines are
// shared by a test binary (compiled modules are cached on disk).
type testEngine struct {
	name string
	new  func(t testing.TB) runtime.Engine
}

// testEngines is wazero's compiler, plus wasmtime in cgo builds
// (engines_wasmtime_test.go).
var testEngines = []testEngine{{"wazero", engine}}

// onEngines runs f as a subtest on every engine.
func onEngines(t *testing.T, f func(t *testing.T, eng runtime.Engine)) {
	for _, e := range testEngines {
		t.Run(e.name, func(t *testing.T) { f(t, e.new(t)) })
	}
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
func TestHostileContained(t *testing.T) { onEngines(t, testHostileContained) }
func TestLoadRefused(t *testing.T)      { onEngines(t, testLoadRefused) }
