package wazero_test

import (
	"context"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	rt "github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// BenchmarkCompileWarm: compiling the echo plugin with its machine code
// already in the cache directory (a wake, a start with a warm cache).
//
//	go test ./host/runtime/wazero -run '^$' -bench CompileWarm -benchtime 20x
func BenchmarkCompileWarm(b *testing.B) {
	wasm := testplugins.Wasm(b, "plugins/examples/echo")
	testplugins.Warm(b, wasm)
	e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		c, err := e.Compile(ctx, wasm, rt.Config{Name: "t", Families: []hostfn.Family{core.New()}})
		if err != nil {
			b.Fatal(err)
		}
		c.Close(ctx)
	}
}

// BenchmarkRewrite: what a cold compile does to the echo plugin before
// wazero sees it (no prepared-module cache): the interrupt rewrite, the
// data merge and the data image split.
//
//	go test ./host/runtime/wazero -run '^$' -bench Rewrite -benchtime 20x
func BenchmarkRewrite(b *testing.B) {
	wasm := testplugins.Wasm(b, "plugins/examples/echo")
	e, err := wazero.New(wazero.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, _, err := wazero.SplitImage(wazero.Rewrite(e, wasm)); err != nil {
			b.Fatal(err)
		}
	}
}
