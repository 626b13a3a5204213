// Package testplugins builds plugin packages from source for tests: the
// real module, compiled by the real Go toolchain for wasip1 (testwasm),
// packed with the manifest the module describes.
package testplugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/plugin"
	runtimex "github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// Root is the repository root.
func Root() string { return testwasm.Root() }

// Wasm compiles the main package at pkg (relative to the repository root,
// e.g. "plugins/examples/echo") to a wasip1 reactor and returns its bytes.
// Results are memoized per test binary.
func Wasm(t testing.TB, pkg string) []byte { t.Helper(); return testwasm.Wasm(t, pkg) }

// Command compiles the main package at pkg to a wasip1 command (_start).
func Command(t testing.TB, pkg string) []byte { t.Helper(); return testwasm.Command(t, pkg) }

// CacheDir is the compiled-module cache shared by `make` (aiodpack) and the
// tests (testwasm.CacheDir).
func CacheDir() string { return testwasm.CacheDir() }

// Warm compiles wasm into CacheDir in a separate, non-race process that
// keys the cache as test binaries do (testwasm.Warm).
func Warm(t testing.TB, wasm []byte) { t.Helper(); testwasm.Warm(t, wasm) }

// ExtismDir is the module of the Extism test plugins (testwasm.ExtismDir).
func ExtismDir() string { return testwasm.ExtismDir() }

// Extism compiles the Extism test plugin pkg (testwasm.Extism).
func Extism(t testing.TB, pkg string) []byte { t.Helper(); return testwasm.Extism(t, pkg) }

// Engine returns a wazero engine on CacheDir.
func Engine(t testing.TB) runtimex.Engine {
	t.Helper()
	eng, err := wazero.New(wazero.Options{CacheDir: CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// Package builds pkg and writes a plugin package (plugin.wasm and the
// described manifest.json, optionally edited) into parent/<name>. It
// returns the directory.
func Package(t testing.TB, parent, pkg string, stubs []hostfn.Family, edit func(manifest []byte) []byte) string {
	t.Helper()
	wasm := Wasm(t, pkg)
	Warm(t, wasm)
	ctx := context.Background()
	eng := Engine(t)
	defer eng.Close(ctx)
	m, manifest, err := plugin.Describe(ctx, eng, wasm, stubs)
	if err != nil {
		t.Fatalf("describe %s: %v", pkg, err)
	}
	if edit != nil {
		manifest = edit(manifest)
	}
	dir := filepath.Join(parent, m.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Must panics on error (for examples).
func Must(err error) {
	if err != nil {
		panic(fmt.Sprint(err))
	}
}
