package testwasm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ExtismDir is the module of the Extism test plugins: its own go.mod, so
// that the main module does not depend on the Extism Go PDK, and the PDK
// vendored (BSD-3, 100 KB), so that building them needs no network.
func ExtismDir() string { return filepath.Join(Root(), "host", "plugin", "testdata", "extism") }

// Extism compiles the Extism test plugin pkg ("v1", "v2", "hostile": a
// directory of ExtismDir) with the Extism Go PDK, as a wasip1 reactor, and
// returns its bytes. Results are memoized per test binary.
func Extism(t testing.TB, pkg string) []byte {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := "extism/" + pkg
	if b, ok := built[key]; ok {
		return b
	}
	dir, err := os.MkdirTemp("", "aiod-extism-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "plugin.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s", "-o", out, "./"+pkg)
	cmd.Dir = ExtismDir()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=vendor")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build extism plugin %s: %v\n%s", pkg, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	built[key] = b
	return b
}
