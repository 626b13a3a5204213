package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The command's effect, a test binary finding the modules warm, is tested
// where the tests' engines run (host/internal/testplugins,
// TestWarmCommandKeysLikeATestBinary): this package's test binary is of a
// main package, which carries module versions in its build info.

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(nil, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: aiodtestcache -cache-dir DIR") {
		t.Fatalf("no -cache-dir: code %d, stderr %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-cache-dir", t.TempDir(), filepath.Join(t.TempDir(), "missing.wasm")}, &stderr); code != 1 || !strings.Contains(stderr.String(), "missing.wasm") {
		t.Fatalf("missing module: code %d, stderr %s", code, stderr.String())
	}
}
