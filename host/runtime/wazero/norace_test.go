//go:build !race

package wazero_test

// Tests with no concurrency of their own whose engine work is too slow
// under the race detector (the interpreter runs wasm in instrumented Go;
// the merge check compiles a 5 MB Go module twice without a cache): they
// are built only without -race, and make test-go runs them in its
// non-race pass (NORACE_RUN). The engine wrapper they exercise runs under
// -race in TestCompiler.

import (
	"bytes"
	"context"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	rt "github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

func TestInterpreter(t *testing.T) {
	if testing.Short() {
		t.Skip("the interpreter runs the table's loops slowly (tens of seconds): make test runs it, make test-short does not")
	}
	runtimetest.RunAll(t, core.New(), func(t *testing.T) rt.Engine {
		e, err := wazero.New(wazero.Options{Interpreter: true})
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}

// TestMergeDataSameMemory: the merged module's linear memory, right after
// the data segments are applied, is byte for byte the original's.
func TestMergeDataSameMemory(t *testing.T) {
	wasm := testplugins.Wasm(t, "plugins/examples/echo")
	ctx := context.Background()
	before := wazero.Segments(wasm)
	merged, err := wazero.MergeData(wasm)
	if err != nil {
		t.Fatalf("echo's data section not merged: %v", err)
	}
	if after := wazero.Segments(merged); after <= 0 || after > before/100 {
		t.Fatalf("%d segments merged into %d", before, after)
	}
	var images [2][]byte
	for i, on := range []bool{false, true} {
		restore := wazero.SetMergeSegments(on)
		e, err := wazero.New(wazero.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Compile(ctx, wasm, rt.Config{Name: "t", Families: []hostfn.Family{core.New()}})
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if images[i], err = wazero.MemoryAtStart(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Close(ctx)
		e.Close(ctx)
	}
	if !bytes.Equal(images[0], images[1]) {
		t.Fatal("memory differs after merging data segments")
	}
	t.Logf("%d segments merged into %d; memory at start %d KiB", before, wazero.Segments(merged), len(images[0])>>10)
}
