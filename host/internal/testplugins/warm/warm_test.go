// Package warm compiles modules into a compiled-module cache from a Go test
// binary. testplugins.Warm runs it (without -race, so the compiler runs at
// full speed) because a test binary carries no module versions in its build
// info: wazero then names its cache "wazero-dev-…" and tags entries "dev",
// so only a cache written by a test binary is a hit for the tests' in-process
// engines (one written by bin/aiodpack is keyed by wazero's release).
package warm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host"
)

// Environment of a warming run: the module files (os.PathListSeparator
// separated) and the cache directory.
const (
	envModules = "AIOD_WARM_MODULES"
	envCache   = "AIOD_WARM_CACHE"
)

func TestMain(m *testing.M) {
	if mods := os.Getenv(envModules); mods != "" {
		if err := warm(filepath.SplitList(mods), os.Getenv(envCache)); err != nil {
			fmt.Fprintln(os.Stderr, "warm:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func warm(mods []string, cacheDir string) error {
	for _, p := range mods {
		wasm, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := host.Precompile(context.Background(), wasm, host.PackOptions{CacheDir: cacheDir}); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// minimal is the smallest module with a function, so that it has code to
// compile and cache.
var minimal = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
	0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code section: empty body
}

// TestWarmWritesTheTestBinaryCache checks what testplugins.Warm relies on:
// a test binary's wazero writes under the "dev" name, and a second
// precompile of the same module finds the entry instead of adding one.
func TestWarmWritesTheTestBinaryCache(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(p, minimal, 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	if err := warm([]string{p}, cache); err != nil {
		t.Fatal(err)
	}
	entries := func() []string {
		var files []string
		filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		return files
	}
	first := entries()
	if len(first) == 0 {
		t.Fatal("no cache entry written")
	}
	for _, f := range first {
		rel, _ := filepath.Rel(cache, f)
		if !strings.HasPrefix(rel, "wazero-dev-") {
			t.Errorf("cache entry %s: want it under wazero-dev-* (the name test binaries read)", rel)
		}
	}
	before, _ := os.ReadFile(first[0])
	if err := warm([]string{p}, cache); err != nil {
		t.Fatal(err)
	}
	if after := entries(); len(after) != len(first) {
		t.Errorf("second precompile: %d entries, want %d", len(after), len(first))
	}
	if again, _ := os.ReadFile(first[0]); !bytes.Equal(before, again) {
		t.Error("second precompile rewrote the entry instead of hitting it")
	}
}
