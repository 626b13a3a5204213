// Command aiodpack turns a plugin module built with the aiod SDK into a
// plugin package: DIR/plugin.wasm and DIR/manifest.json, the manifest
// generated from the module's own declarations (so a tool's description is
// written once, in Go) with the module's sha256 pinned.
//
//	aiodpack -o build/plugins/echo echo.wasm
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

func main() {
	out := flag.String("o", "", "output plugin directory (created)")
	into := flag.String("into", "", "write the package to DIR/<plugin name> instead of -o")
	cacheDir := flag.String("cache-dir", "", "also compile into this compilation cache (shared with aiod start --cache-dir)")
	warm := flag.Bool("warm", false, "only compile the module into -cache-dir; write no package")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: aiodpack (-o DIR | -into PARENT) module.wasm")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *warm {
		if err := warmCache(*cacheDir, flag.Arg(0)); err != nil {
			fmt.Fprintln(os.Stderr, "aiodpack:", err)
			os.Exit(1)
		}
		return
	}
	if (*out == "") == (*into == "") || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *into, *cacheDir, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "aiodpack:", err)
		os.Exit(1)
	}
}

// warmCache compiles module into the cache dir.
func warmCache(cacheDir, module string) error {
	if cacheDir == "" {
		return fmt.Errorf("-warm needs -cache-dir")
	}
	wasm, err := os.ReadFile(module)
	if err != nil {
		return err
	}
	ctx := context.Background()
	eng, err := wazero.New(wazero.Options{CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	return wazero.Precompile(ctx, eng, wasm)
}

func run(dir, into, cacheDir, module string) error {
	wasm, err := os.ReadFile(module)
	if err != nil {
		return err
	}
	ctx := context.Background()
	eng, err := wazero.New(wazero.Options{CacheDir: cacheDir})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	m, manifest, err := plugin.Describe(ctx, eng, wasm, host.AllFamilies())
	if err != nil {
		return fmt.Errorf("%s: %w", module, err)
	}
	if into != "" {
		dir = filepath.Join(into, m.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644)
}
