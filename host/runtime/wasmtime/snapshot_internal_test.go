//go:build cgo

package wasmtime

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
)

// snapCompiled compiles pkg with snapshots on, under tune.
func snapCompiled(tb testing.TB, pkg string, tune tuning) *compiled {
	tb.Helper()
	e, err := New(Options{CacheDir: testplugins.CacheDir(), Snapshots: true, tune: tune})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close(context.Background()) })
	wasm := testplugins.Wasm(tb, pkg)
	testplugins.Warm(tb, wasm)
	var notices []string
	c, err := e.Compile(context.Background(), wasm, runtime.Config{Name: "t", Families: []hostfn.Family{core.New()}, MemoryPages: 16 * 1024,
		Notice: func(s string) { notices = append(notices, s) }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	if len(notices) != 0 {
		tb.Fatalf("notices %q", notices)
	}
	return c.(*compiled)
}

// restoreModes are the two ways a snapshot's pages are restored.
var restoreModes = []struct {
	name string
	tune tuning
	n    int // TestSnapshotCycles' cycles
}{{"map", tuning{}, 10000}, {"copy", tuning{copyRestore: true}, 500}}

// TestSnapshotCycles: instantiating from a snapshot and closing leaves the
// process's file descriptors and mappings flat, restoring either way (by
// copying fewer cycles: each takes most of a millisecond, the copied pages' faults
// and their release), and Forget and Close release the snapshot's memfd.
func TestSnapshotCycles(t *testing.T) {
	count := func() (fds, maps int) {
		ents, _ := os.ReadDir("/proc/self/fd")
		b, _ := os.ReadFile("/proc/self/maps")
		return len(ents), strings.Count(string(b), "\n")
	}
	for _, m := range restoreModes {
		t.Run(m.name, func(t *testing.T) {
			c := snapCompiled(t, "host/runtime/wazero/testdata/snapguest", m.tune)
			ctx := context.Background()
			cycle := func(owner string) {
				inst, err := c.InstantiateFor(ctx, owner)
				if err != nil {
					t.Fatal(err)
				}
				inst.Close(ctx)
			}
			cycle("o")
			c.snaps.mu.Lock()
			snap := c.snaps.owners["o"]
			c.snaps.mu.Unlock()
			if snap == nil {
				t.Fatal("no snapshot after the owner's first instance")
			}
			var dirty uint64
			for _, r := range snap.runs {
				dirty += r.n
			}
			t.Logf("snapshot: %d bytes of memory, %d of them restored in %d runs", snap.size, dirty, len(snap.runs))
			for range 100 {
				cycle("o")
			}
			fds0, maps0 := count()
			n := m.n
			for range n {
				cycle("o")
			}
			fds1, maps1 := count()
			if fds1 > fds0+2 || maps1 > maps0+20 {
				t.Fatalf("after %d cycles: fds %d -> %d, mappings %d -> %d", n, fds0, fds1, maps0, maps1)
			}
			// A snapshot restored by mapping holds one memfd: Forget and
			// Close release it.
			held := 0
			if snap.image != nil {
				held = 1
			}
			c.Forget("o")
			c.Forget("o") // idempotent
			if fds2, _ := count(); fds2 > fds1-held {
				t.Fatalf("after Forget: fds %d, %d before", fds2, fds1)
			}
			cycle("p")
			c.Close(ctx)
			c.Close(ctx)
			if fds3, _ := count(); fds3 > fds1-held {
				t.Fatalf("after Close: fds %d, %d before Forget", fds3, fds1)
			}
		})
	}
}

// BenchmarkSnapshot: an instantiation of the echo plugin from scratch
// (_initialize run) and from its owner's snapshot, restoring the pages by
// copying and by mapping them (the instance closed untimed):
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 2000x ./host/runtime/wasmtime/
func BenchmarkSnapshot(b *testing.B) {
	ctx := context.Background()
	b.Run("scratch", func(b *testing.B) {
		c := snapCompiled(b, "plugins/examples/echo", tuning{})
		for b.Loop() {
			inst, err := c.Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			inst.Close(ctx)
			b.StartTimer()
		}
	})
	for _, m := range restoreModes {
		b.Run("snapshot-"+m.name, func(b *testing.B) {
			c := snapCompiled(b, "plugins/examples/echo", m.tune)
			first, err := c.InstantiateFor(ctx, "o")
			if err != nil {
				b.Fatal(err)
			}
			first.Close(ctx)
			for b.Loop() {
				inst, err := c.InstantiateFor(ctx, "o")
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				inst.Close(ctx)
				b.StartTimer()
			}
		})
	}
}
