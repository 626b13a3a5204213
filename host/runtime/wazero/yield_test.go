package wazero_test

import (
	"context"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/host/runtime/wazero"
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
