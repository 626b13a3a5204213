//go:build cgo

package wasmtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// version keys cached modules: the wasmtime-go release this package is
// written against (TestVersionMatchesGoMod keeps it equal to go.mod's). A
// stale key is still safe: wasmtime refuses to deserialize code compiled by
// another version or configuration, and such a file is recompiled.
const version = "wasmtime-go-v39.0.1"

// Version returns the engine version that keys cached modules.
func Version() string { return version }

// magic starts every cache file this engine writes.
const magic = "aiod-wasmtime-cache-1\n"

// diskCache keeps serialized modules in dir/<key>/<digest>.cwasm, key
// being Version(), or Version()+"+fuel" for the metered flavor. A file is
//
//	magic | sha256(wasm) | len(key) byte | key | sha256(blob) | blob
//
// and is deserialized only if every field matches: a file this engine did
// not write, or a torn or corrupted one, is recompiled and rewritten, never
// handed to wasmtime's deserializer (which trusts its input).
type diskCache struct {
	dir, key string
}

func newDiskCache(root, key string) (*diskCache, error) {
	dir := filepath.Join(root, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &diskCache{dir: dir, key: key}, nil
}

func (c *diskCache) path(digest [32]byte) string {
	return filepath.Join(c.dir, hex.EncodeToString(digest[:])+".cwasm")
}

func (c *diskCache) header(digest [32]byte, blobSum [32]byte) []byte {
	v := c.key
	h := make([]byte, 0, len(magic)+32+1+len(v)+32)
	h = append(h, magic...)
	h = append(h, digest[:]...)
	h = append(h, byte(len(v)))
	h = append(h, v...)
	return append(h, blobSum[:]...)
}

// load returns the cached module for wasm, or nil.
func (c *diskCache) load(eng *wasmtime.Engine, wasm []byte) *wasmtime.Module {
	digest := sha256.Sum256(wasm)
	b, err := os.ReadFile(c.path(digest))
	if err != nil {
		return nil
	}
	blob, ok := c.verify(b, digest)
	if !ok {
		return nil
	}
	m, err := wasmtime.NewModuleDeserialize(eng, blob)
	if err != nil {
		return nil
	}
	return m
}

// verify checks a cache file's header against digest and its blob's
// checksum, returning the blob.
func (c *diskCache) verify(b []byte, digest [32]byte) ([]byte, bool) {
	n := len(magic) + 32 + 1 + len(c.key) + 32
	if len(b) < n {
		return nil, false
	}
	blob := b[n:]
	if !bytes.Equal(b[:n], c.header(digest, sha256.Sum256(blob))) {
		return nil, false
	}
	return blob, true
}

// store writes m's serialization atomically (temp file, then rename).
func (c *diskCache) store(m *wasmtime.Module, wasm []byte) error {
	blob, err := m.Serialize()
	if err != nil {
		return fmt.Errorf("serialize: %w", err)
	}
	digest := sha256.Sum256(wasm)
	f, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(append(c.header(digest, sha256.Sum256(blob)), blob...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), c.path(digest))
}
