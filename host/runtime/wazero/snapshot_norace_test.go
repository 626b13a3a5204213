//go:build !race

package wazero_test

// Built only without -race (make test-go's non-race pass, NORACE_RUN):
// 10,000 instantiate/close cycles of one owner, one after another, take
// tens of seconds under the race detector, which has nothing to find in
// them; the snapshot machinery's concurrency is tested under -race in the
// conformance table (TestCompilerSnapshots) and host/internal/wasmsnap.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/internal/wasmbin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// TestSnapshotCycles: an owner's snapshot keeps at most 16 runs of pages,
// and instantiating from it and closing leaves the process's file
// descriptors and mappings flat. (The engine-neutral snapshot cases are in
// the conformance table, runtimetest.)
func TestSnapshotCycles(t *testing.T) {
	c, notices := snapCompile(t, "host/runtime/runtimetest/testdata/snapguest")
	instFor(t, c, "o")
	ok, size, pages, runs := wazero.Snapshot(c, "o")
	if !ok || runs > 16 { // maxRuns: each run is a mapping of every instance
		t.Fatalf("snapshot %v with %d runs (at most 16); notices %q", ok, runs, *notices)
	}
	t.Logf("snapshot: %d bytes of memory, %d pages changed by the initialisation in %d runs", size, pages, runs)
	count := func() (fds, maps int) {
		ents, _ := os.ReadDir("/proc/self/fd")
		b, _ := os.ReadFile("/proc/self/maps")
		return len(ents), strings.Count(string(b), "\n")
	}
	cycle := func() {
		inst, err := runtime.InstantiateFor(context.Background(), c, "o")
		if err != nil {
			t.Fatal(err)
		}
		inst.Close(context.Background())
	}
	for range 100 {
		cycle()
	}
	fds0, maps0 := count()
	const n = 10000
	for range n {
		cycle()
	}
	fds1, maps1 := count()
	if fds1 > fds0+2 || maps1 > maps0+20 {
		t.Fatalf("after %d cycles: fds %d -> %d, mappings %d -> %d", n, fds0, fds1, maps0, maps1)
	}
}

// TestLazyTableEcho: the Go echo's prepared form fills its table on first
// use (host/internal/lazytable: its element segment is declarative), and
// an instance from its owner's snapshot that answers an echo allocates a
// small part of what the eager table took (wazero allocated a function
// reference for each of its ~2,800 entries: 8,622 allocations per
// instance). Answers through the lazy table are in the conformance table.
func TestLazyTableEcho(t *testing.T) {
	e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	prepared := wazero.Prepare(e, testwasm.Wasm(t, "plugins/examples/echo"))
	secs, err := wasmbin.Sections(prepared)
	if err != nil {
		t.Fatal(err)
	}
	form := -1
	for _, s := range secs {
		if s.ID == wasmbin.SecElement {
			form = int(s.Payload(prepared)[1])
		}
	}
	if form != 3 {
		t.Fatalf("the echo's element segment is of form %d, not declarative (3)", form)
	}
	c, _ := snapCompile(t, "plugins/examples/echo")
	instFor(t, c, "o")
	n := 0
	allocs := testing.AllocsPerRun(20, func() {
		inst, err := runtime.InstantiateFor(context.Background(), c, "o")
		if err != nil {
			t.Fatal(err)
		}
		n++
		text := fmt.Sprintf("hi %d", n)
		if out, err := call(context.Background(), inst, "echo", `{"text":"`+text+`"}`); err != nil || !strings.Contains(out, text) {
			t.Fatalf("echo: %q %v", out, err)
		}
		inst.Close(context.Background())
	})
	t.Logf("an instance from the snapshot and its first echo: %.0f allocations", allocs)
	if allocs > 500 {
		t.Fatalf("%.0f allocations for an instance and its first echo", allocs)
	}
}
