//go:build cgo

package wasmtime_test

import (
	"context"
	"os"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wasmtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// The engines side by side (BENCHMARKS.md, "Two engines"):
//
//	go test -run '^$' -bench . -benchtime 20x ./host/runtime/wasmtime/
//
// "wasmtime+fuel" is wasmtime with the modules metered (Config.Fuel, a
// budget no call reaches): the cost of metering.
var benchEngines = []struct {
	name string
	new  func(cacheDir string) (runtime.Engine, error)
	fuel uint64
}{
	{"wazero", func(d string) (runtime.Engine, error) { return wazero.New(wazero.Options{CacheDir: d}) }, 0},
	{"wasmtime", func(d string) (runtime.Engine, error) { return wasmtime.New(wasmtime.Options{CacheDir: d}) }, 0},
	{"wasmtime+fuel", func(d string) (runtime.Engine, error) { return wasmtime.New(wasmtime.Options{CacheDir: d}) }, 1 << 50},
}

func compileOn(b *testing.B, eng runtime.Engine, wasm []byte, fuel uint64) runtime.Compiled {
	b.Helper()
	c, err := eng.Compile(context.Background(), wasm, runtime.Config{Name: "b", Families: []hostfn.Family{core.New()}, MemoryPages: 16 * 1024, Fuel: fuel})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCompile is a cold compile (empty cache dir each time) and a warm
// load from the disk cache (a fresh engine on a filled dir each time) of
// the echo module.
func BenchmarkCompile(b *testing.B) {
	wasm := testplugins.Wasm(b, "plugins/examples/echo")
	for _, be := range benchEngines {
		b.Run(be.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				eng, err := be.new(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				compileOn(b, eng, wasm, be.fuel).Close(context.Background())
				b.StopTimer()
				eng.Close(context.Background())
				os.RemoveAll(dir)
				b.StartTimer()
			}
		})
		b.Run(be.name+"/warm", func(b *testing.B) {
			dir := b.TempDir()
			eng, err := be.new(dir)
			if err != nil {
				b.Fatal(err)
			}
			compileOn(b, eng, wasm, be.fuel).Close(context.Background())
			eng.Close(context.Background())
			for b.Loop() {
				b.StopTimer()
				eng, err := be.new(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				compileOn(b, eng, wasm, be.fuel).Close(context.Background())
				b.StopTimer()
				eng.Close(context.Background())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRun measures instantiating the echo plugin (Go runtime init
// included), one echo call on a warm instance, and hashing 64 MiB in the
// hash plugin.
func BenchmarkRun(b *testing.B) {
	echo := testplugins.Wasm(b, "plugins/examples/echo")
	hash := testplugins.Wasm(b, "plugins/examples/hash")
	testplugins.Warm(b, echo)
	testplugins.Warm(b, hash)
	ctx := context.Background()
	for _, be := range benchEngines {
		eng, err := be.new(testplugins.CacheDir())
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close(ctx)
		ce := compileOn(b, eng, echo, be.fuel)
		defer ce.Close(ctx)
		ch := compileOn(b, eng, hash, be.fuel)
		defer ch.Close(ctx)
		b.Run(be.name+"/instantiate", func(b *testing.B) {
			for b.Loop() {
				inst, err := ce.Instantiate(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				inst.Close(ctx)
				b.StartTimer()
			}
		})
		b.Run(be.name+"/call-echo", func(b *testing.B) {
			inst, err := ce.Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close(ctx)
			tool, args := "echo", `{"text":"hello"}`
			for b.Loop() {
				c := &hostfn.Call{Plugin: "b", Input: []byte(tool + args), MaxOutput: 1 << 20}
				if ret, err := inst.Call(ctx, c, "aiod_call", 1, uint64(len(tool)), uint64(len(args))); err != nil || ret != 0 {
					b.Fatal(ret, err)
				}
			}
		})
		b.Run(be.name+"/hash-64MiB", func(b *testing.B) {
			inst, err := ch.Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close(ctx)
			tool, args := "hash", `{"mib":64}`
			b.SetBytes(64 << 20)
			for b.Loop() {
				c := &hostfn.Call{Plugin: "b", Input: []byte(tool + args), MaxOutput: 1 << 20}
				if ret, err := inst.Call(ctx, c, "aiod_call", 1, uint64(len(tool)), uint64(len(args))); err != nil || ret != 0 {
					b.Fatal(ret, err, string(c.Output))
				}
			}
		})
	}
}
