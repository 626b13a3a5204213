package wazero_test

import (
	"testing"

	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

func TestCompiler(t *testing.T) {
	runtimetest.RunAll(t, core.New(), func(t *testing.T) runtime.Engine {
		e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}, runtimetest.ShortHolds())
}

// TestCompilerSnapshots is the table with snapshots on: its instances are
// made for an owner, from its snapshot after the first.
func TestCompilerSnapshots(t *testing.T) {
	runtimetest.RunAll(t, core.New(), func(t *testing.T) runtime.Engine {
		e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir(), Snapshots: true, Spares: 2})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}, runtimetest.ShortHolds(), runtimetest.Snapshots())
}
