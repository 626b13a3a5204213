// Package testwasm builds plugin modules from source for tests: the real
// module, compiled by the real Go toolchain for wasip1, and warms the
// compiled-module cache with it. It stands below the engines (their
// conformance table uses it); testplugins adds what needs the registry.
package testwasm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	_ "unsafe" // go:linkname

	_ "github.com/tetratelabs/wazero" // links the version CacheKey reads
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Wasm compiles the main package at pkg (relative to the repository root,
// e.g. "plugins/examples/echo") to a wasip1 reactor and returns its bytes.
// A directory with a main.c or a main.rs instead (the C and Rust SDKs'
// examples) is compiled by clang or Debian's rustc, as `aiod plugin build`
// does (spec/abi/languages.md). Results are memoized per test binary.
func Wasm(t testing.TB, pkg string) []byte {
	return build(t, pkg, "c-shared")
}

// Command compiles the main package at pkg to a wasip1 command (_start).
func Command(t testing.TB, pkg string) []byte {
	return build(t, pkg, "exe")
}

func build(t testing.TB, pkg, mode string) []byte {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[pkg+"/"+mode]; ok {
		return b
	}
	dir, err := os.MkdirTemp("", "aiod-testplugin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "plugin.wasm")
	src := filepath.Join(Root(), pkg)
	var cmd *exec.Cmd
	switch {
	case mode == "c-shared" && exists(filepath.Join(src, "main.c")):
		needTool(t, "clang", "clang, lld, wasi-libc and libclang-rt-14-dev-wasm32", pkg)
		cmd = exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-Werror", "-Wl,--strip-all", "-o", out, "main.c")
		cmd.Dir = src
	case mode == "c-shared" && exists(filepath.Join(src, "main.rs")):
		needTool(t, "/usr/bin/rustc", "rustc and libstd-rust-dev-wasm32", pkg)
		cmd = exec.Command("/usr/bin/rustc", "--edition", "2021", "--target", "wasm32-wasi", "--crate-type", "cdylib",
			"-C", "opt-level=s", "-C", "strip=symbols", "-o", out, "main.rs")
		cmd.Dir = src
	default:
		cmd = exec.Command("go", "build", "-buildmode="+mode, "-trimpath", "-ldflags=-s", "-o", out, "./"+pkg)
		cmd.Dir = Root()
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	built[pkg+"/"+mode] = b
	return b
}

// needTool fails the test when the compiler of pkg's language is not
// installed, naming the Debian packages; under -short it skips it instead
// (the short tests need nothing but Go).
func needTool(t testing.TB, tool, debian, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err == nil {
		return
	}
	if testing.Short() {
		t.Skipf("%s needs %s (Debian packages %s)", pkg, tool, debian)
	}
	t.Fatalf("%s needs %s: install the Debian packages %s", pkg, tool, debian)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// CacheDir is the compiled-module cache shared by `make` (aiodpack) and the
// tests, so that a module is compiled once per machine, not once per test
// binary (compiling a 4 MB module under -race takes tens of seconds).
func CacheDir() string {
	d := filepath.Join(Root(), "build", "cache", "wazero")
	os.MkdirAll(d, 0o755)
	return d
}

// Warm compiles wasm into CacheDir with cmd/aiodtestcache (a separate,
// non-race process that keys the cache as test binaries do), so that the
// tests' in-process engines get a cache hit.
func Warm(t testing.TB, wasm []byte) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := fmt.Sprintf("%x", sha256.Sum256(wasm))
	if warmed[key] {
		return
	}
	dir, err := os.MkdirTemp("", "aiod-warm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	// Not bin/aiodpack: see cmd/aiodtestcache.
	cmd := exec.Command("go", "run", "./cmd/aiodtestcache", "-cache-dir", CacheDir(), "-key", CacheKey(), in)
	cmd.Dir = Root()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("warm cache: %v\n%s", err, stderr.String())
	}
	warmed[key] = true
}

var warmed = map[string]bool{}

// CacheKey is the version wazero keys this binary's compile cache by:
// wazero's release where the link stamped it (make test's TESTFLAGS), else
// "dev", as in a plain `go test` binary (no module versions in its build
// info).
func CacheKey() string {
	if wazeroVersion != "" {
		return wazeroVersion
	}
	return "dev"
}

// wazeroVersion is what -X stamps (wazero's internal/version.version).
//
//go:linkname wazeroVersion github.com/tetratelabs/wazero/internal/version.version
var wazeroVersion string
