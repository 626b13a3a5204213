package footprint_test

import (
	"os"
	"testing"

	"github.com/aiodhq/aiod/host/internal/footprint"
)

// TestDropExecutablePages: the running binary's read-only file-backed
// pages (its rodata, resident since the program reads it) are dropped,
// and the program goes on reading them (they fault back in).
func TestDropExecutablePages(t *testing.T) {
	// the test binary was just linked: its pages in the page cache are
	// dirty (not yet written back), which the drop leaves alone
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := footprint.DropExecutablePages(); n <= 0 {
		t.Fatalf("dropped %d bytes of the binary's read-only mappings, want some", n)
	}
	footprint.ReleaseRested()
	if n := footprint.DropExecutablePages(); n < 0 {
		t.Fatalf("dropped %d bytes", n)
	}
}
