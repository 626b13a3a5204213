//go:build cgo

package wasmtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
)

// TestFuelFlavor checks that metering costs nothing when unused: an
// unmetered module is compiled by the default (fuel-less) engine and no
// metered engine exists until a module asks for fuel; a metered one is
// compiled by that second engine and cached under its own key.
func TestFuelFlavor(t *testing.T) {
	dir := t.TempDir()
	e, err := New(Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	en := e.(*engine)
	cfg := runtime.Config{Name: "empty", Families: []hostfn.Family{core.New()}}
	plain, err := e.Compile(context.Background(), emptyModule, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	if en.metered.Load() != nil || plain.(*compiled).eng != en.plain.eng {
		t.Fatal("an unmetered compile made or used the metered engine")
	}
	cfg.Fuel = 1000
	metered, err := e.Compile(context.Background(), emptyModule, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer metered.Close(context.Background())
	m := en.metered.Load()
	if m == nil || metered.(*compiled).eng != m.eng || m.eng == en.plain.eng {
		t.Fatal("a metered compile did not use the metered engine")
	}
	for _, key := range []string{Version(), Version() + "+fuel"} {
		ents, err := os.ReadDir(filepath.Join(dir, key))
		if err != nil || len(ents) != 1 {
			t.Fatalf("cache %s: %d entries, err %v", key, len(ents), err)
		}
	}
	if !runtime.MetersFuel(e) {
		t.Fatal("MetersFuel false")
	}
}

// TestFuelIsPerCall reads the store's fuel: instantiation is not metered
// against the budget, and each call starts with the whole budget.
func TestFuelIsPerCall(t *testing.T) {
	e, err := New(Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	const fuel = 1_000_000
	c, err := e.Compile(context.Background(), testplugins.Wasm(t, "plugins/examples/echo"), runtime.Config{Name: "echo", Families: []hostfn.Family{core.New()}, Fuel: fuel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	inst, err := c.Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	s := inst.(*instance).s
	var used []uint64
	for i := 0; i < 3; i++ {
		tool, args := "echo", `{"text":"hi"}`
		cl := &hostfn.Call{Plugin: "echo", Input: []byte(tool + args), MaxOutput: 1 << 20}
		if _, err := inst.Call(context.Background(), cl, "aiod_call", 1, uint64(len(tool)), uint64(len(args))); err != nil {
			t.Fatal(err)
		}
		left, err := s.GetFuel()
		if err != nil {
			t.Fatal(err)
		}
		used = append(used, fuel-left)
	}
	for i, u := range used {
		if u == 0 || u >= fuel/2 || u > 2*used[0] {
			t.Fatalf("call %d used %d fuel (all: %v), want each call metered from a full budget", i, u, used)
		}
	}
}
