// Command aiodtestcache compiles modules into the compile cache the tests'
// in-process wazero engines read (make test-go runs it before the tests):
//
//	go run ./cmd/aiodtestcache -cache-dir build/cache/wazero a.wasm b.wasm
//
// The test binary of a library package carries no module versions in its
// build info, so wazero keys its cache "dev" there (a "wazero-dev-…" directory, entries tagged
// "dev"), while bin/aiodpack and bin/aiod key it by wazero's release: what
// `make build` compiled is not a hit for the tests. This command keys the
// cache as a test binary does, and compiles without the race detector, so
// that no -race test compiles a built-in under it (minutes on two cores).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	_ "unsafe" // go:linkname

	"github.com/aiodhq/aiod/host"
)

// wazeroVersion is the version wazero keys its compile cache by, found in
// the build info when empty; "dev" is what a test binary gets.
//
//go:linkname wazeroVersion github.com/tetratelabs/wazero/internal/version.version
var wazeroVersion string

// testKey is wazero's name for a build without module versions
// (internal/version.Default).
const testKey = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("aiodtestcache", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cacheDir := fs.String("cache-dir", "", "the tests' compile cache (build/cache/wazero)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aiodtestcache -cache-dir DIR module.wasm...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cacheDir == "" {
		fs.Usage()
		return 2
	}
	if err := warm(context.Background(), *cacheDir, fs.Args()); err != nil {
		fmt.Fprintln(stderr, "aiodtestcache:", err)
		return 1
	}
	return 0
}

func warm(ctx context.Context, cacheDir string, modules []string) error {
	wazeroVersion = testKey
	for _, p := range modules {
		wasm, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := host.Precompile(ctx, wasm, host.PackOptions{CacheDir: cacheDir}); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}
