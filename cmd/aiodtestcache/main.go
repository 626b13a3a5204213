// Command aiodtestcache compiles modules into the compile cache the tests'
// in-process wazero engines read, keyed as a test binary keys it:
//
//	go run ./cmd/aiodtestcache -cache-dir build/cache/wazero [-key K] a.wasm b.wasm
//
// wazero keys its compile cache by its own version, read from the build
// info. A test binary of a library package carries no module versions
// there, so it keys the cache "dev" (a "wazero-dev-…" directory, entries
// tagged "dev"), while bin/aiodpack and bin/aiod key it by wazero's
// release. `make test` links its test binaries with wazero's release
// stamped in (-X, TESTFLAGS), so what `make build` compiled is theirs and
// nothing needs this command; a plain `go test` gets "dev", and this
// command (make test-cache) warms that key. The tests' own helper
// (testwasm.Warm) runs it with the key of the test binary that asks. It
// compiles without the race detector, so that no -race test compiles a
// module under it (tens of seconds for a built-in on two cores).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	_ "unsafe" // go:linkname

	"github.com/aiodhq/aiod/host"
)

// wazeroVersion is the version wazero keys its compile cache by, found in
// the build info when empty; "dev" is what a test binary gets unless its
// link stamps one.
//
//go:linkname wazeroVersion github.com/tetratelabs/wazero/internal/version.version
var wazeroVersion string

// devKey is wazero's name for a build without module versions
// (internal/version.Default): a test binary's, unless its link stamps one.
const devKey = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("aiodtestcache", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cacheDir := fs.String("cache-dir", "", "the tests' compile cache (build/cache/wazero)")
	key := fs.String("key", devKey, "the wazero version the test binaries key the cache by")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aiodtestcache -cache-dir DIR [-key K] module.wasm...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cacheDir == "" || *key == "" {
		fs.Usage()
		return 2
	}
	if err := warm(context.Background(), *cacheDir, *key, fs.Args()); err != nil {
		fmt.Fprintln(stderr, "aiodtestcache:", err)
		return 1
	}
	return 0
}

// warm compiles the modules one per processor at a time: wazero compiles a
// module on one goroutine, and the built-ins are a dozen modules.
func warm(ctx context.Context, cacheDir, key string, modules []string) error {
	wazeroVersion = key
	next := make(chan int)
	errs := make([]error, len(modules))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(modules)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := modules[i]
				wasm, err := os.ReadFile(p)
				if err == nil {
					err = host.Precompile(ctx, wasm, host.PackOptions{CacheDir: cacheDir})
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", p, err)
				}
			}
		}()
	}
	for i := range modules {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
