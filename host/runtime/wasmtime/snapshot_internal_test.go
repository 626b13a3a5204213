//go:build cgo

package wasmtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/wasmsnap"
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
	wasm := testplugins.Wasm(tb, pkg) // wasmtime compiles into its own cache: no wazero warm
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
			c := snapCompiled(t, "host/runtime/runtimetest/testdata/snapguest", m.tune)
			ctx := context.Background()
			cycle := func(owner string) {
				inst, err := c.InstantiateFor(ctx, owner)
				if err != nil {
					t.Fatal(err)
				}
				inst.Close(ctx)
			}
			cycle("o")
			snap, ok := c.snaps.Lookup("o")
			if !ok {
				t.Fatal("no snapshot after the owner's first instance")
			}
			var dirty uint64
			for _, r := range snap.runs {
				dirty += r.N
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
// mapping them (the default) and by copying them; alone, and with the
// instance's first echo call (where a mapped page the call touches
// faults). The instance is closed untimed.
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 2000x ./host/runtime/wasmtime/
func BenchmarkSnapshot(b *testing.B) {
	ctx := context.Background()
	for _, m := range append([]struct {
		name string
		tune tuning
		n    int
	}{{"scratch", tuning{}, 0}}, restoreModes...) {
		for _, withCall := range []bool{false, true} {
			name := m.name
			if m.name != "scratch" {
				name = "snapshot-" + m.name
			}
			if withCall {
				name += "+call"
			}
			b.Run(name, func(b *testing.B) {
				c := snapCompiled(b, "plugins/examples/echo", m.tune)
				owner := "o"
				if m.name == "scratch" {
					c.snaps = nil // InstantiateFor instantiates from scratch
				} else if first, err := c.InstantiateFor(ctx, owner); err != nil {
					b.Fatal(err)
				} else {
					first.Close(ctx)
				}
				for b.Loop() {
					inst, err := c.InstantiateFor(ctx, owner)
					if err != nil {
						b.Fatal(err)
					}
					if withCall {
						tool, args := "echo", `{"text":"hi"}`
						call := &hostfn.Call{Plugin: "b", Input: []byte(tool + args), MaxOutput: 1 << 20}
						if ret, err := inst.Call(ctx, call, "aiod_call", 1, uint64(len(tool)), uint64(len(args))); err != nil || ret != 0 {
							b.Fatal(ret, err)
						}
					}
					b.StopTimer()
					inst.Close(ctx)
					b.StartTimer()
				}
			})
		}
	}
}

// tinyReactor is (module (memory 1) (global (mut i32) (i32.const 0))
// (func (export "_initialize")) (export "memory" (memory 0))).
var tinyReactor = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
	0x03, 0x02, 0x01, 0x00, // func 0
	0x05, 0x03, 0x01, 0x00, 0x01, // memory 1
	0x06, 0x06, 0x01, 0x7f, 0x01, 0x41, 0x00, 0x0b, // global (mut i32)
	0x07, 0x18, 0x02, 0x0b, '_', 'i', 'n', 'i', 't', 'i', 'a', 'l', 'i', 'z', 'e', 0x00, 0x00,
	0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00,
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code
}

// TestSnapshotCacheKey: with snapshots on, the disk cache holds the
// prepared form under its own digest (a changed Prepare is a new key),
// apart from the original's.
func TestSnapshotCacheKey(t *testing.T) {
	dir := t.TempDir()
	prepared, err := wasmsnap.Prepare(tinyReactor, wasmsnap.Code{})
	if err != nil {
		t.Fatal(err)
	}
	files := func() []string {
		ents, _ := os.ReadDir(filepath.Join(dir, Version()))
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	name := func(wasm []byte) string {
		sum := sha256.Sum256(wasm)
		return hex.EncodeToString(sum[:]) + ".cwasm"
	}
	for _, on := range []bool{true, false} {
		e, err := New(Options{CacheDir: dir, Snapshots: on})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Compile(context.Background(), tinyReactor, runtime.Config{Name: "tiny"})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.(*compiled).snaps != nil; got != on {
			t.Fatalf("snapshots %v: the compiled module snapshots: %v", on, got)
		}
		for range 2 {
			inst, err := runtime.InstantiateFor(context.Background(), c, "o")
			if err != nil {
				t.Fatal(err)
			}
			inst.Close(context.Background())
		}
		c.Close(context.Background())
		e.Close(context.Background())
		if on && !slices.Equal(files(), []string{name(prepared)}) {
			t.Fatalf("cache %q, want the prepared form's %s", files(), name(prepared))
		}
	}
	if want := []string{name(prepared), name(tinyReactor)}; !slices.Equal(files(), want) && !slices.Equal(files(), []string{want[1], want[0]}) {
		t.Fatalf("cache %q, want %q", files(), want)
	}
}

// TestSnapshotPoolingRefused: under the pooling tuning (its slots are reset
// with madvise, under which a mapped snapshot's pages would come back) a
// module is not snapshotted, says why, and works.
func TestSnapshotPoolingRefused(t *testing.T) {
	e, err := New(Options{Snapshots: true, tune: tuning{pooling: &pooling{total: 4, maxMemory: 1 << 20, tableElements: 16}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	var notices []string
	c, err := e.Compile(context.Background(), tinyReactor, runtime.Config{Name: "tiny", Notice: func(s string) { notices = append(notices, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if c.(*compiled).snaps != nil || len(notices) != 1 || !strings.Contains(notices[0], "pooling") {
		t.Fatalf("snapshots %v, notices %q", c.(*compiled).snaps != nil, notices)
	}
	inst, err := runtime.InstantiateFor(context.Background(), c, "o")
	if err != nil {
		t.Fatal(err)
	}
	inst.Close(context.Background())
}
