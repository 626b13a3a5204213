package wazero

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/aiodhq/aiod/host/runtime/wazero/interrupt"
)

// The prepared-module cache: prepare's output (the interrupt rewrite and
// the merged data segments) kept on disk beside wazero's compiled code.
//
// Why: with the machine code already in wazero's cache, a compile (every
// wake of a dormant module, every start with a warm cache) still rewrote
// the module first, and that was a third of it (the echo plugin, 4.9 MB:
// 57 of 168 ms, BenchmarkCompileWarm). wazero needs the rewritten bytes
// themselves (it decodes and validates them before it looks in its cache),
// so what is cached is the bytes.
//
// A file is <CacheDir>/aiod-prepared/<key>.wasm, key the sha256 of the
// module and of the code that rewrote it (prepareDigest: this file, the
// merge, the rewriter's source), so a changed rewriter never reads an
// older one's output. The file is a header (preparedMagic and the sha256
// of the rest) and the rewritten module; a file that does not match is
// ignored and written again. Only instrumented modules are kept: a module
// the rewriter refuses is cheap to refuse again and runs unchanged.

//go:embed prepared.go
var preparedSource []byte

//go:embed datamerge.go
var mergeSource []byte

// prepareDigest identifies the code whose output the cache holds.
var prepareDigest = func() [32]byte {
	h := sha256.New()
	h.Write(preparedSource)
	h.Write(mergeSource)
	h.Write(interrupt.SourceDigest[:])
	var d [32]byte
	h.Sum(d[:0])
	return d
}()

const preparedMagic = "aiodprep1\n"

// preparedPath is where wasm's prepared form is cached ("" when e has no
// cache directory, or a test switched a step off).
func (e *engine) preparedPath(wasm []byte) string {
	if e.opts.CacheDir == "" || !mergeSegments || !useInterrupt {
		return ""
	}
	h := sha256.New()
	h.Write(prepareDigest[:])
	h.Write(wasm)
	return filepath.Join(e.opts.CacheDir, "aiod-prepared", hex.EncodeToString(h.Sum(nil))+".wasm")
}

var errStale = errors.New("prepared module does not match its digest")

// loadPrepared reads a cached prepared module.
func loadPrepared(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	head := len(preparedMagic) + sha256.Size
	if len(b) < head || string(b[:len(preparedMagic)]) != preparedMagic {
		return nil, errStale
	}
	body := b[head:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[len(preparedMagic):head]) {
		return nil, errStale
	}
	return body, nil
}

// storePrepared writes a prepared module atomically (a temporary file
// renamed into place). Failures only cost the next compile the rewrite.
func storePrepared(path string, wasm []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".prep-*")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(wasm)
	_, err = f.Write(append([]byte(preparedMagic), sum[:]...))
	if err == nil {
		_, err = f.Write(wasm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
