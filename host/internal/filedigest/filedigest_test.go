//go:build linux

package filedigest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestSaveLoad: a saved cache is what the next process loads (a file whose
// identity has not changed is known without hashing); a changed file is
// not; a damaged, oversized or hostile file loads nothing it should not;
// Save writes nothing when nothing changed.
func TestSaveLoad(t *testing.T) {
	defer func(s time.Duration) { Settle = s }(Settle)
	Settle = 0
	dir := t.TempDir()
	mod, other := filepath.Join(dir, "m.wasm"), filepath.Join(dir, "o.wasm")
	for _, p := range []string{mod, other} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat := func(p string) os.FileInfo {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	d1, d2 := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	var c Cache
	c.Remember(stat(mod), stat(mod), d1)
	c.Remember(stat(other), stat(other), d2)
	saved := filepath.Join(dir, "digests.json")
	if err := c.Save(saved); err != nil {
		t.Fatal(err)
	}
	first := stat(saved)

	var next Cache
	if err := next.Load(saved); err != nil {
		t.Fatal(err)
	}
	if d, ok := next.Unchanged(stat(mod), stat(mod)); !ok || d != d1 {
		t.Fatalf("loaded cache: %q %v", d, ok)
	}
	if _, ok := next.Lookup(stat(mod)); ok {
		t.Fatal("a loaded digest taken for a module this process holds")
	}
	next.Remember(stat(mod), stat(mod), d1) // read again: nothing new to save
	if _, ok := next.Unchanged(stat(mod), stat(other)); ok {
		t.Fatal("two different files taken for one")
	}
	if err := next.Save(saved); err != nil || !stat(saved).ModTime().Equal(first.ModTime()) || !os.SameFile(stat(saved), first) {
		t.Fatalf("an unchanged cache was written again (%v)", err)
	}
	if err := os.WriteFile(other, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := next.Unchanged(stat(other), stat(other)); ok {
		t.Fatal("a changed file kept its digest")
	}

	for _, bad := range []struct{ name, body string }{
		{"not json", "{{{"},
		{"cut short", `[{"dev":1,"ino":2,"size":3,"mtime":4,"ctime":5,"sha256":"` + d1},
		{"over the bound", `[` + strings.Repeat(" ", maxFileBytes) + `]`},
	} {
		t.Run(bad.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "d.json")
			os.WriteFile(p, []byte(bad.body), 0o644)
			var c Cache
			if err := c.Load(p); err == nil {
				t.Fatal("loaded")
			}
			if len(c.m)+len(c.prior) != 0 {
				t.Fatalf("entries from a bad file: %v %v", c.m, c.prior)
			}
		})
	}
	// entries that are not digests are skipped; a missing file is no error
	fi := stat(mod)
	k, _ := keyOf(fi)
	hostile := fmt.Sprintf(`[{"dev":%d,"ino":%d,"size":%d,"mtime":%d,"ctime":%d,"sha256":"../../etc"},{"dev":1,"ino":1,"size":-1,"mtime":0,"ctime":0,"sha256":"%s"}]`,
		k.dev, k.ino, k.size, k.mtime, k.ctime, d1)
	p := filepath.Join(t.TempDir(), "d.json")
	os.WriteFile(p, []byte(hostile), 0o644)
	var h Cache
	if err := h.Load(p); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Unchanged(fi, fi); ok || len(h.prior) != 0 {
		t.Fatalf("a hostile entry was loaded: %v", h.prior)
	}
	if err := h.Load(filepath.Join(t.TempDir(), "none.json")); err != nil {
		t.Fatalf("a missing file: %v", err)
	}
}
