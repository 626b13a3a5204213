package runtimetest

import (
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// Engine is one engine built into this test binary: the one engine table
// every package that runs something on every engine iterates (OnEngines).
type Engine struct {
	// Name is the engine's name for host.Config.Engine, --engine and
	// AIO_ENGINE.
	Name string
	// open makes an engine on a cache directory.
	open func(cacheDir string) (runtime.Engine, error)

	once   *sync.Once
	shared runtime.Engine
	err    error
}

// New returns a new engine on cacheDir (the test closes it).
func (e *Engine) New(cacheDir string) (runtime.Engine, error) { return e.open(cacheDir) }

// Shared returns one engine per test binary on the tests' compile cache
// (testwasm.CacheDir), never closed: compiled modules are shared by the
// package's tests.
func (e *Engine) Shared(t testing.TB) runtime.Engine {
	t.Helper()
	e.once.Do(func() { e.shared, e.err = e.open(testwasm.CacheDir()) })
	if e.err != nil {
		t.Fatalf("engine %s: %v", e.Name, e.err)
	}
	return e.shared
}

// Default is the engine a test whose subject is not the engine runs on
// (host.DefaultEngine).
const Default = "wazero"

// engines: wazero's compiler, and wasmtime in cgo builds (engines_cgo.go).
// wazero's interpreter is not a host engine: host/runtime/wazero runs the
// conformance table on it (TestInterpreter).
var engines = []*Engine{{Name: "wazero", open: func(dir string) (runtime.Engine, error) {
	return wazero.New(wazero.Options{CacheDir: dir})
}, once: new(sync.Once)}}

// Engines lists the engines built into this test binary, the default first.
func Engines() []*Engine { return append([]*Engine(nil), engines...) }

// OnEngines runs f as a subtest per engine, named by the engine.
func OnEngines(t *testing.T, f func(t *testing.T, e *Engine)) {
	t.Helper()
	for _, e := range engines {
		t.Run(e.Name, func(t *testing.T) { f(t, e) })
	}
}

// DefaultOnly marks a test of a package that iterates the engine table
// whose subject is not the engine: it runs on the default engine only, for
// the reason given (logged).
func DefaultOnly(t testing.TB, reason string) {
	t.Helper()
	if reason == "" {
		t.Fatal("runtimetest.DefaultOnly: give the reason")
	}
	t.Logf("default engine only (%s): %s", Default, reason)
}
