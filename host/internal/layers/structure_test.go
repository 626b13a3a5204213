package layers

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rootFiles are the composition root's files (README, "Layout"): the
// configuration, New's provision steps, Run, the engine and family tables,
// Pack, the tenancy wiring. A part with a job of its own lives in a package
// below it.
var rootFiles = []string{"config.go", "engine.go", "families.go", "host.go", "pack.go", "run.go", "tenancy.go"}

// TestRootOnlyWires: the root package holds the composition files and no
// others (tests aside).
func TestRootOnlyWires(t *testing.T) {
	got := goFiles(t, filepath.Join(root(), "host"))
	if !slices.Equal(got, rootFiles) {
		t.Errorf("host/ holds %v, want only %v: a part with a job of its own goes to a package below it", got, rootFiles)
	}
}

// maxLines bounds a hand-written file of the packages that grew past it once.
const maxLines = 700

// TestFileSizes: no hand-written Go file of host/plugin, host/mcp or
// host/proc is over maxLines lines (split it at its seams).
func TestFileSizes(t *testing.T) {
	for _, pkg := range []string{"host/plugin", "host/mcp", "host/proc"} {
		dir := filepath.Join(root(), pkg)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			n++
			if bytes.Contains(b[:min(len(b), 512)], []byte("// Code generated")) {
				continue
			}
			if lines := bytes.Count(b, []byte("\n")); lines > maxLines {
				t.Errorf("%s/%s has %d lines, over %d", pkg, e.Name(), lines, maxLines)
			}
		}
		if n == 0 {
			t.Errorf("%s: no Go files read", pkg)
		}
	}
}

// goFiles are the non-test Go files of dir, sorted.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
