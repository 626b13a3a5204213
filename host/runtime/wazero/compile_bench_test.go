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
