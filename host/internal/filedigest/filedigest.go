// Package filedigest remembers the sha256 of files by their identity, so
// that a reload does not read and hash again a module that has not changed
// since it was last hashed.
//
// A file's identity is its device, inode, size, modification and change
// times. Any write changes the modification time and any metadata change
// (a chmod, a rename, utimes) the change time, except within one tick of
// the kernel's coarse clock: so a digest is remembered only for a file
// that has not changed for Settle (as git does for its index), and only
// when the file's identity was the same before and after it was read.
//
// A Cache can be saved to a file and loaded by the next process (Save,
// Load), so that a start does not hash again the modules the last one
// hashed. The file is as trusted as the directory it lives in: whoever can
// write it could as well write the compiled machine code beside it.
package filedigest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/google/renameio/v2"
)

// Settle is how long a file must have been unchanged for its digest to be
// remembered.
var Settle = time.Second

// maxEntries bounds a Cache; when full it starts again empty.
const maxEntries = 4096

type key struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// Cache maps file identities to digests. The zero value is ready; it is
// safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	m  map[key]string // the files this process hashed (Lookup)
	// prior: the digests an earlier process saved (Load); Unchanged
	// consults them, Lookup does not: a file known by them has still to
	// be read (its bytes are not held anywhere in this process).
	prior map[key]string
	gen   uint64 // counts changes to what Save writes
	saved uint64 // gen when last saved or loaded
}

// Lookup returns the digest remembered for the file fi describes.
func (c *Cache) Lookup(fi fs.FileInfo) (string, bool) {
	k, ok := keyOf(fi)
	if !ok {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[k]
	return d, ok
}

// Remember records digest for a file read between the stats before and
// after, if both describe the same unchanged file and it has settled.
func (c *Cache) Remember(before, after fs.FileInfo, digest string) {
	k, ok := keyOf(before)
	if k2, ok2 := keyOf(after); !ok || !ok2 || k != k2 {
		return
	}
	if time.Since(time.Unix(0, max(k.mtime, k.ctime))) < Settle {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxEntries {
		c.m = map[key]string{}
	}
	if c.m[k] != digest {
		if c.prior[k] != digest {
			c.gen++
		}
		c.m[k] = digest
	}
}

// Unchanged returns the digest remembered for a file read between the
// stats before and after, if both describe the same file and it is known:
// the bytes read are then those the digest names, without hashing them.
// A nil Cache knows nothing.
func (c *Cache) Unchanged(before, after fs.FileInfo) (string, bool) {
	if c == nil {
		return "", false
	}
	k, ok := keyOf(before)
	if k2, ok2 := keyOf(after); !ok || !ok2 || k != k2 {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.m[k]; ok {
		return d, true
	}
	d, ok := c.prior[k]
	return d, ok
}

// entry is one saved digest.
type entry struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtime"`
	Ctime  int64  `json:"ctime"`
	SHA256 string `json:"sha256"`
}

// maxFileBytes bounds a saved cache's file (4,096 entries of ~170 bytes).
const maxFileBytes = 1 << 20

// Load adds the digests Save wrote to path. A missing file adds nothing;
// a file that does not parse adds nothing and is reported; an entry whose
// digest is not 64 hex digits is skipped.
func (c *Cache) Load(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	var es []entry
	if err := json.NewDecoder(&limited{f, maxFileBytes}).Decode(&es); err != nil {
		return err
	}
	prior := map[key]string{}
	for _, e := range es {
		if len(prior) >= maxEntries {
			break
		}
		if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != 32 || e.Size < 0 {
			continue
		}
		prior[key{e.Dev, e.Ino, e.Size, e.Mtime, e.Ctime}] = e.SHA256
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prior = prior
	c.saved = c.gen
	return nil
}

// Save writes the digests (this process's and those loaded) to path
// atomically (renameio), unless nothing changed since the
// last Save or Load.
func (c *Cache) Save(path string) error {
	c.mu.Lock()
	if c.gen == c.saved {
		c.mu.Unlock()
		return nil
	}
	all := make(map[key]string, len(c.m)+len(c.prior))
	for k, d := range c.prior {
		all[k] = d
	}
	for k, d := range c.m {
		all[k] = d
	}
	es := make([]entry, 0, min(len(all), maxEntries))
	for k, d := range all {
		if len(es) == maxEntries {
			break
		}
		es = append(es, entry{k.dev, k.ino, k.size, k.mtime, k.ctime, d})
	}
	gen := c.gen
	c.mu.Unlock()
	b, err := json.Marshal(es)
	if err != nil {
		return err
	}
	if err := renameio.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	c.mu.Lock()
	c.saved = max(c.saved, gen)
	c.mu.Unlock()
	return nil
}

// limited reads at most n bytes, then fails (a file past the bound is
// refused, not cut to a prefix that might parse).
type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("digest cache file over its size bound")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}
