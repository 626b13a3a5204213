package wazero_test

import (
	"context"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/host/runtime/wazero"
	"github.com/aiodhq/aiod/sdk/abi"
)

// yieldSpinModule imports sched_yield (function 0, [] -> [i32]) and exports
// "spin" (function 1): for {}.
var yieldSpinModule = cat(
	[]byte{0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00},
	sec(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7F})),
	sec(2, vec(cat(str(interrupt.YieldModule), str(interrupt.YieldName), []byte{0x00, 0x01}))),
	sec(3, vec([]byte{0x00})),
	sec(5, vec([]byte{0x00, 0x01})),
	sec(7, vec(cat(str("spin"), []byte{0x00, 0x01}))),
	sec(10, vec(body(0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B))))

// TestLongRunYields: a guest that runs long gives its processor up every
// quantum, so that a goroutine queued behind it waits that long and not the
// 10 ms after which the Go scheduler would preempt it. With one processor
// (GOMAXPROCS 1) the test's own goroutine sleeps 1 ms over and over while
// the guest spins, and its wake-ups come late by the time the guest holds
// the processor. With the quantum set out of reach (the control) they come
// late by ~10 ms: the test can tell the two apart.
func TestLongRunYields(t *testing.T) {
	eng, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) }) // after instrumented's
	spin := instrumented(t, eng, yieldSpinModule, "spin")
	hostile := instrumented(t, eng, testplugins.Wasm(t, "host/plugin/testdata/hostile"), "hostile")
	guests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"a hand-built for {}", func(ctx context.Context) error {
			_, err := spin.Call(ctx, &hostfn.Call{}, "spin")
			return err
		}},
		{"a Go plugin's for {}", func(ctx context.Context) error {
			c := &hostfn.Call{Plugin: "hostile", Input: []byte("loop{}"), MaxOutput: 1 << 20}
			_, err := hostile.Call(ctx, c, "aiod_call", 1, 4, 2)
			return err
		}},
	}
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			on := runtimetest.WakeLateness(t, g.call)
			restore := wazero.SetYieldQuantum(time.Hour)
			off := runtimetest.WakeLateness(t, g.call)
			restore()
			t.Logf("median wake-up lateness beside the spinning guest: %v yielding, %v not", on, off)
			if on > 3*time.Millisecond {
				t.Errorf("a goroutine beside the spinning guest wakes %v late (median), want under 3 ms", on)
			}
			if off < 5*time.Millisecond {
				t.Errorf("control: without yielding the goroutine wakes only %v late; the test cannot tell", off)
			}
		})
	}
}

// blockFamily is one host function, aiodtest.block, that waits 2 ms (as a
// process's start waits for its fork) and counts its calls.
type blockFamily struct{ calls *int }

func (blockFamily) Name() abi.Family { return "aiodtest" }

func (f blockFamily) Defs() []hostfn.Def {
	return []hostfn.Def{{Module: "aiodtest", Name: "block", Fn: func(context.Context, *hostfn.Call, hostfn.Memory, []uint64) {
		*f.calls++
		time.Sleep(2 * time.Millisecond)
	}}}
}

// blockSpinModule imports sched_yield (function 0) and aiodtest.block
// (function 1) and exports "run" (function 2): a loop of 3,000 iterations
// (three trips into sched_yield, the first of which starts the quantum),
// block, and the same loop again.
var blockSpinModule = func() []byte {
	loop := []byte{
		0x41, 0xB8, 0x17, 0x21, 0x00, // local.set 0 (i32.const 3000)
		0x03, 0x40, // loop
		0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00, // br_if 0 (local.tee 0 (local.get 0 - 1))
		0x0B,
	}
	code := cat([]byte{0x01, 0x01, 0x7F}, loop, []byte{0x10, 0x01}, loop, []byte{0x0B})
	return cat(
		[]byte{0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00},
		sec(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7F})),
		sec(2, vec(cat(str(interrupt.YieldModule), str(interrupt.YieldName), []byte{0x00, 0x01}),
			cat(str("aiodtest"), str("block"), []byte{0x00, 0x00}))),
		sec(3, vec([]byte{0x00})),
		sec(5, vec([]byte{0x00, 0x01})),
		sec(7, vec(cat(str("run"), []byte{0x00, 0x02}))),
		sec(10, vec(body(code...))))
}()

// TestHostTimeIsNotTheGuests: the quantum counts the guest's own time. A
// run that spins for microseconds on either side of a host function that
// waits 2 ms (past the quantum) does not give its processor up: it held
// it for microseconds. Counting the wait made every Machine Mode call
// yield right after its start, its reads and its wait, and queue behind
// every runnable goroutine of a busy host.
func TestHostTimeIsNotTheGuests(t *testing.T) {
	eng, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	calls := 0
	c, err := eng.Compile(context.Background(), blockSpinModule, runtime.Config{Name: "blockspin",
		Families: []hostfn.Family{core.New(), blockFamily{&calls}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if err := wazero.InterruptErr(c); err != nil {
		t.Fatalf("not instrumented: %v", err)
	}
	inst, err := c.Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	restore := wazero.SetYieldQuantum(time.Millisecond)
	defer restore()
	for range 5 {
		if _, err := inst.Call(context.Background(), &hostfn.Call{}, "run"); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 5 {
		t.Fatalf("block ran %d times, want 5", calls)
	}
	if n := wazero.Yields(inst); n != 0 {
		t.Errorf("the guest gave its processor up %d times in 5 runs of microseconds of its own around a 2 ms host function, want 0", n)
	}
	// the control: the same runs with the quantum under the guest's own
	// time yield (the trips do reach the yielder)
	wazero.SetYieldQuantum(time.Nanosecond)
	if _, err := inst.Call(context.Background(), &hostfn.Call{}, "run"); err != nil {
		t.Fatal(err)
	}
	if wazero.Yields(inst) == 0 {
		t.Error("control: with a quantum of 1 ns the run never yielded; the test cannot tell")
	}
}
