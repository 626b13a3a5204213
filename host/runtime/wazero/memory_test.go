//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	rt "github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

func mappings(t testing.TB) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// reservations counts the process's PROT_NONE mappings.
func reservations(t testing.TB) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte(" ---p "))
}

func rssKiB(t testing.TB) float64 { return procKiB(t, "/proc/self/status", "VmRSS:") }

// pssKiB is the process's proportional set size (pages shared with other
// processes, or mapped from a shared file, counted in part).
func pssKiB(t testing.TB) float64 { return procKiB(t, "/proc/self/smaps_rollup", "Pss:") }

func procKiB(t testing.TB, file, key string) float64 {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb
		}
	}
	t.Fatalf("no %s in %s", key, file)
	return 0
}

func compileTest(t testing.TB, pkg string, pages uint32) rt.Compiled {
	t.Helper()
	return compileWith(t, pkg, pages, wazero.Options{})
}

// compileWith is compileTest on an engine with opts (and the tests' cache).
func compileWith(t testing.TB, pkg string, pages uint32, opts wazero.Options) rt.Compiled {
	t.Helper()
	wasm := testplugins.Wasm(t, pkg)
	testplugins.Warm(t, wasm)
	opts.CacheDir = testplugins.CacheDir()
	e, err := wazero.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	c, err := e.Compile(context.Background(), wasm, rt.Config{Name: "t", Families: []hostfn.Family{core.New()}, MemoryPages: pages})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func call(ctx context.Context, inst rt.Instance, tool, args string) (string, error) {
	c := &hostfn.Call{Plugin: "t", Input: []byte(tool + args), MaxOutput: 1 << 20}
	_, err := inst.Call(ctx, c, "aiod_call", 1, uint64(len(tool)), uint64(len(args)))
	return string(c.Output), err
}

// TestMemoryNoLeak instantiates and closes many instances, well-behaved
// and memory bombs (grow to the limit, then trap), and checks that the
// process's mappings stay flat: every reservation is unmapped.
func TestMemoryNoLeak(t *testing.T) {
	echo := compileTest(t, "plugins/examples/echo", 64*16)
	bomb := compileTest(t, "host/plugin/testdata/hostile", 32*16)
	ctx := context.Background()
	run := func() {
		inst, err := echo.Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := call(ctx, inst, "echo", `{"text":"hi"}`); err != nil || !strings.Contains(out, "hi") {
			t.Fatalf("echo: %q %v", out, err)
		}
		inst.Close(ctx)
		inst.Close(ctx)
		b, err := bomb.Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = call(cctx, b, "grow", "{}")
		cancel()
		if !errors.Is(err, rt.ErrMemory) {
			t.Fatalf("bomb: %v", err)
		}
		b.Close(ctx)
	}
	run() // warm up lazily made runtime mappings
	runtime.GC()
	start := mappings(t)
	for range 20 {
		run()
	}
	runtime.GC()
	if n := mappings(t); n > start+4 {
		t.Fatalf("mappings grew from %d to %d over 20 rounds", start, n)
	}
	// and a compiled module closed with its instances still open. The
	// baseline is taken after the compile: a second engine and its code
	// are mappings of their own (released by the test's cleanup), and
	// what is checked here is that the instances' memories go.
	c := compileTest(t, "plugins/examples/echo", 64*16)
	runtime.GC()
	start = mappings(t)
	for range 10 {
		if _, err := c.Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ctx)
	runtime.GC()
	if n := mappings(t); n > start+4 {
		t.Fatalf("mappings grew from %d to %d after closing a compiled module with open instances", start, n)
	}
}

// TestMemoryDeadlineDuringCall: a deadline closes the module from the
// guest's own goroutine while it runs; the memory must stay mapped until
// the call has returned, then go.
func TestMemoryDeadlineDuringCall(t *testing.T) {
	c := compileTest(t, "host/plugin/testdata/hostile", 32*16)
	// A live or leaked memory keeps its reservation: the part it has not
	// grown to is a PROT_NONE mapping. Those are counted, not all mappings:
	// under -race the race runtime maps read-write memory for itself as the
	// test goes (78 to 91 mappings over these rounds in a full -race run,
	// the new ones read-write, none a reservation; flat without -race).
	start := -1
	for i := range 10 {
		inst, err := c.Instantiate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err = call(ctx, inst, "loop", "{}")
		cancel()
		if err == nil {
			t.Fatal("loop returned")
		}
		inst.Close(context.Background())
		runtime.GC()
		if i == 0 {
			start = reservations(t)
		} else if n := reservations(t); n > start+2 {
			t.Fatalf("PROT_NONE mappings %d, then %d", start, n)
		}
	}
}

// BenchmarkInstantiate: the first-call cost of an echo instance and its
// RSS: wazero's defaults (before), then each step added (the reserved
// mapping, merged data segments, zero-page release, the data image, an
// owner's snapshot: these instances are its later ones).
//
//	go test ./host/runtime/wazero -run '^$' -bench Instantiate -benchtime 100x
func BenchmarkInstantiate(b *testing.B) {
	for _, m := range []struct {
		name                           string
		mmap, merge, drop, image, snap bool
	}{
		{"default", false, false, false, false, false},
		{"mapping", true, false, false, false, false},
		{"mapping+merge", true, true, false, false, false},
		{"mapping+merge+dropzero", true, true, true, false, false},
		{"mapping+merge+dropzero+image", true, true, true, true, false},
		{"snapshot", true, true, true, true, true},
	} {
		b.Run(m.name, func(b *testing.B) {
			defer wazero.SetMemoryMode(m.mmap, m.drop)()
			restore, restoreImage := wazero.SetMergeSegments(m.merge), wazero.SetImage(m.image)
			c := compileWith(b, "plugins/examples/echo", 64*16, wazero.Options{Snapshots: m.snap})
			restore()
			restoreImage()
			ctx := context.Background()
			insts := make([]rt.Instance, 0, b.N+1)
			if m.snap { // the owner's first instance takes the snapshot
				first, err := rt.InstantiateFor(ctx, c, "o")
				if err != nil {
					b.Fatal(err)
				}
				insts = append(insts, first)
			}
			runtime.GC()
			debug.FreeOSMemory()
			start, startPss := rssKiB(b), pssKiB(b)
			b.ResetTimer()
			for range b.N {
				inst, err := rt.InstantiateFor(ctx, c, "o")
				if err != nil {
					b.Fatal(err)
				}
				insts = append(insts, inst)
			}
			b.StopTimer()
			if _, err := call(ctx, insts[0], "echo", `{"text":"hi"}`); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			debug.FreeOSMemory()
			b.ReportMetric((rssKiB(b)-start)/float64(b.N), "RSS-KiB/instance")
			b.ReportMetric((pssKiB(b)-startPss)/float64(b.N), "PSS-KiB/instance")
			for _, i := range insts {
				i.Close(ctx)
			}
		})
	}
}
