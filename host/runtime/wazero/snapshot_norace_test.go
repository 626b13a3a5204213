//go:build !race

package wazero_test

// Built only without -race (make test-go's non-race pass, NORACE_RUN):
// 10,000 instantiate/close cycles of one owner, one after another, take
// tens of seconds under the race detector, which has nothing to find in
// them; the snapshot machinery's concurrency is tested under -race in the
// conformance table (TestCompilerSnapshots) and host/internal/wasmsnap.

import (
	"context"
	"os"
	"strings"
	"testing"

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
