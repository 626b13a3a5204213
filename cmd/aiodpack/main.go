// Command aiodpack turns a plugin module built with the aiod SDK into a
// plugin package: DIR/plugin.wasm and DIR/manifest.json, the manifest
// generated from the module's own declarations (so a tool's description is
// written once, in Go) with the module's sha256 pinned.
//
//	aiodpack -o build/plugins/echo echo.wasm
//	aiodpack -into build/plugins echo.wasm
//	aiodpack -warm -cache-dir build/cache/wazero echo.wasm
//	aiodpack -warm -engine wasmtime -cache-dir build/cache/wazero echo.wasm
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aiodhq/aiod/host"
	_ "github.com/aiodhq/aiod/host/runtime/wasmtime/register" // -engine wasmtime (cgo builds): make warms both engines' caches
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("aiodpack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output plugin directory (created)")
	into := fs.String("into", "", "write the package to DIR/<plugin name> instead of -o")
	cacheDir := fs.String("cache-dir", "", "also compile into this compilation cache (shared with aiod start --cache-dir)")
	warm := fs.Bool("warm", false, "only compile the module into -cache-dir; write no package")
	engine := fs.String("engine", host.DefaultEngine, fmt.Sprintf("WebAssembly engine (built in: %v)", host.Engines()))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aiodpack (-o DIR | -into PARENT) module.wasm\n       aiodpack -warm -cache-dir DIR module.wasm")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || (!*warm && (*out == "") == (*into == "")) {
		fs.Usage()
		return 2
	}
	module := fs.Arg(0)
	opts := host.PackOptions{CacheDir: *cacheDir, Engine: *engine}
	if err := pack(context.Background(), module, *out, *into, *warm, opts); err != nil {
		fmt.Fprintln(stderr, "aiodpack:", err)
		return 1
	}
	return 0
}

func pack(ctx context.Context, module, out, into string, warm bool, opts host.PackOptions) error {
	wasm, err := os.ReadFile(module)
	if err != nil {
		return err
	}
	if warm {
		if opts.CacheDir == "" {
			return fmt.Errorf("-warm needs -cache-dir")
		}
		return host.Precompile(ctx, wasm, opts)
	}
	p, err := host.Pack(ctx, wasm, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", module, err)
	}
	if into != "" {
		out = filepath.Join(into, p.Name)
	}
	return p.WriteDir(out)
}
