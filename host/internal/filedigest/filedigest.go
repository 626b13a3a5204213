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
package filedigest

import (
	"io/fs"
	"sync"
	"time"
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
	m  map[key]string
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
	c.m[k] = digest
}
