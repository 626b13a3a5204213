//go:build linux

package filedigest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCache: a settled file read between two equal stats is remembered;
// a write, a metadata change, a replacement by rename, or a file that has
// not settled is not.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.wasm")
	old := time.Now().Add(-time.Hour)
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat := func() os.FileInfo {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	defer func(s time.Duration) { Settle = s }(Settle)
	Settle = 0

	for _, c := range []struct {
		name   string
		change func() // after remembering, before looking up
		hit    bool
	}{
		{"unchanged", func() {}, true},
		{"rewritten, same size", func() { write("v2") }, false},
		{"times restored after a write", func() {
			fi := stat()
			write("v3")
			os.Chtimes(path, fi.ModTime(), fi.ModTime()) // the change time moves on
		}, false},
		{"chmod", func() { os.Chmod(path, 0o600) }, false},
		{"replaced by a rename", func() {
			os.WriteFile(path+".new", []byte("v1"), 0o644)
			os.Rename(path+".new", path)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			write("v1")
			var cache Cache
			fi := stat()
			cache.Remember(fi, stat(), "d1")
			if d, ok := cache.Lookup(stat()); !ok || d != "d1" {
				t.Fatalf("not remembered: %q %v", d, ok)
			}
			c.change()
			if _, ok := cache.Lookup(stat()); ok != c.hit {
				t.Fatalf("hit %v, want %v", ok, c.hit)
			}
		})
	}

	t.Run("changed while read", func(t *testing.T) {
		write("v1")
		var cache Cache
		before := stat()
		write("v2!")
		cache.Remember(before, stat(), "d1")
		if _, ok := cache.Lookup(before); ok {
			t.Fatal("remembered a file that changed while it was read")
		}
	})

	t.Run("not settled", func(t *testing.T) {
		Settle = time.Hour
		defer func() { Settle = 0 }()
		write("v1")
		var cache Cache
		cache.Remember(stat(), stat(), "d1")
		if _, ok := cache.Lookup(stat()); ok {
			t.Fatal("remembered a file written just now")
		}
		os.Chtimes(path, old, old) // the change time is still now
		cache.Remember(stat(), stat(), "d1")
		if _, ok := cache.Lookup(stat()); ok {
			t.Fatal("remembered a file whose change time is now")
		}
	})

	t.Run("bounded", func(t *testing.T) {
		write("v1")
		var cache Cache
		for i := range maxEntries + 10 {
			p := filepath.Join(dir, "f")
			os.WriteFile(p, []byte{byte(i)}, 0o644)
			fi, _ := os.Stat(p)
			cache.Remember(fi, fi, "x")
			os.Remove(p)
		}
		if n := len(cache.m); n > maxEntries {
			t.Fatalf("%d entries, bound %d", n, maxEntries)
		}
	})
}
