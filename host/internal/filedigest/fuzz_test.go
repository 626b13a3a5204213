package filedigest

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: a saved cache's file is read back without a panic, whatever
// its bytes, and yields only entries whose digest is 64 hex digits.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`[{"dev":1,"ino":2,"size":3,"mtime":4,"ctime":5,"sha256":"` + hex.EncodeToString(make([]byte, 32)) + `"}]`))
	f.Add([]byte(`[{"sha256":"zz"},null,{}]`))
	f.Add([]byte(`{"dev":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "d")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		var c Cache
		if c.Load(p) != nil && len(c.prior) != 0 {
			t.Fatal("entries from a file that did not load")
		}
		if len(c.prior) > maxEntries {
			t.Fatalf("%d entries", len(c.prior))
		}
		for k, d := range c.prior {
			if raw, err := hex.DecodeString(d); err != nil || len(raw) != 32 || k.size < 0 {
				t.Fatalf("entry %+v %q", k, d)
			}
		}
	})
}
