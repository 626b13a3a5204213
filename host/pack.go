package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
)

// PackOptions configure Pack and Precompile.
type PackOptions struct {
	// CacheDir also compiles the module into this compilation cache (the
	// one `aiod start --cache-dir` reads); empty compiles in memory only.
	CacheDir string
	// Engine names the engine ("" is DefaultEngine).
	Engine string
}

// Package is a plugin package: the module and the manifest it describes.
type Package struct {
	Name     string // the plugin's name (the package's directory name)
	Module   string // the module's file name inside the package
	Wasm     []byte
	Manifest []byte // manifest.json, with the module's sha256 pinned
}

// Pack asks a plugin module built with the SDK to describe itself (every
// host function family stubbed, none runs) and returns the plugin package
// with the generated manifest.
func Pack(ctx context.Context, wasm []byte, o PackOptions) (*Package, error) {
	eng, err := newEngine(o.Engine, EngineOptions{CacheDir: o.CacheDir})
	if err != nil {
		return nil, err
	}
	defer eng.Close(ctx)
	m, manifest, err := plugin.Describe(ctx, eng, wasm, AllFamilies())
	if err != nil {
		return nil, err
	}
	return &Package{Name: m.Name, Module: m.Module, Wasm: wasm, Manifest: manifest}, nil
}

// WriteDir writes the package into dir (created): the module and
// manifest.json.
func (p *Package) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, p.Module), p.Wasm, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), p.Manifest, 0o644)
}

// Precompile compiles wasm into the compilation cache o.CacheDir (required)
// without linking it, so that the next host on that cache starts warm. The
// engine must implement runtime.Precompiler.
func Precompile(ctx context.Context, wasm []byte, o PackOptions) error {
	if o.CacheDir == "" {
		return fmt.Errorf("precompile: no cache directory")
	}
	// the form aiod start compiles: with snapshots on by default, wasmtime
	// compiles (and caches) the module prepared for them
	eng, err := newEngine(o.Engine, EngineOptions{CacheDir: o.CacheDir, Snapshots: DefaultSnapshots})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	pc, ok := eng.(runtime.Precompiler)
	if !ok {
		return fmt.Errorf("precompile: engine %q cannot compile ahead of time", engineName(o.Engine))
	}
	return pc.Precompile(ctx, wasm)
}
