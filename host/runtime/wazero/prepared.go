package wazero

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/lazytable"
	"github.com/aiodhq/aiod/host/internal/wasmsnap"
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
// A file is <CacheDir>/aiod-prepared/<key>.wasm, key the sha256 of
// prepareVersion and the module. prepareVersion names the rewrite's output
// (the interrupt rewriter's and the merge's, preparedForm): it is bumped
// whenever that output changes, so a changed rewriter never reads an older
// one's output, and TestPrepareVersion fails when the output of a fixed
// module (testdata/prepare.wat) changes and the version did not. The file
// is a header (preparedMagic and the CRC-32C of the rest, big-endian) and
// the rewritten module; a file that does not match is ignored and written
// again. The checksum finds a damaged or cut file; it is not a defence
// against someone who can write the cache directory, who could as well
// write wazero's compiled code beside it. A CRC-32C of the echo plugin's
// 3.6 MB takes 0.3 ms where its sha256 took 4 ms, on every wake. Only
// instrumented modules are kept: a module the rewriter refuses is cheap to
// refuse again and runs unchanged.

// prepareVersion is the version of preparedForm's output. Bump it with any
// change to package interrupt, package lazytable, mergeData or
// preparedForm that changes the bytes they produce for some module, and
// record the new digest in TestPrepareVersion (prepared_internal_test.go).
const prepareVersion = 3

// preparedForm is what the cache holds for a module: rewrite's output with
// the interrupt and the merge on, for a module the rewriter instruments,
// prepared for snapshots (host/internal/wasmsnap: its mutable globals
// exported and its answer recorded).
func preparedForm(wasm []byte) ([]byte, error) {
	iw, info, err := lazyInstrument(wasm)
	if err != nil {
		return nil, err
	}
	return wasmsnap.Prepare(mergeData(iw), wasmsnap.Code{MutatesTables: info.MutatesTables, BulkData: info.BulkData})
}

// lazyInstrument is the interrupt rewrite, with the module's table filled
// on first use (host/internal/lazytable) when useLazyTable is on and the
// module allows it: an instance then costs no Go allocation per table
// entry (RATIONALE.md, "Instances from snapshots").
func lazyInstrument(wasm []byte) ([]byte, interrupt.Info, error) {
	if useLazyTable {
		if plan, err := lazytable.Read(wasm); err == nil && plan.Refused == "" {
			iw, info, err := interrupt.InstrumentBefore(wasm, plan.CallEnsure())
			if err == nil && !info.TableOps {
				if lw, err := lazytable.Apply(iw, plan); err == nil {
					return lw, info, nil
				}
			}
		}
	}
	return interrupt.InstrumentInfo(wasm)
}

const preparedMagic = "aiodprep2\n"

// preparedCRC is the checksum of a prepared file's body.
var preparedCRC = crc32.MakeTable(crc32.Castagnoli)

// preparedPath is where wasm's prepared form is cached ("" when e has no
// cache directory, or a test switched a step off).
func (e *engine) preparedPath(wasm []byte) string {
	if e.opts.CacheDir == "" || !mergeSegments || !useInterrupt || !useLazyTable {
		return ""
	}
	return filepath.Join(e.opts.CacheDir, "aiod-prepared", preparedKey(prepareVersion, wasm)+".wasm")
}

// preparedKey is the name of the cache file for wasm prepared by version.
func preparedKey(version int, wasm []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "aiod prepared v%d\n", version)
	h.Write(wasm)
	return hex.EncodeToString(h.Sum(nil))
}

var errStale = errors.New("prepared module does not match its checksum")

// loadPrepared reads a cached prepared module.
func loadPrepared(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	head := len(preparedMagic) + 4
	if len(b) < head || string(b[:len(preparedMagic)]) != preparedMagic {
		return nil, errStale
	}
	body := b[head:]
	if binary.BigEndian.Uint32(b[len(preparedMagic):head]) != crc32.Checksum(body, preparedCRC) {
		return nil, errStale
	}
	return body, nil
}

// storePrepared writes a prepared module atomically (renameio: a
// temporary file synced and renamed into place). Failures only cost the
// next compile the rewrite.
func storePrepared(path string, wasm []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	head := binary.BigEndian.AppendUint32([]byte(preparedMagic), crc32.Checksum(wasm, preparedCRC))
	return renameio.WriteFile(path, append(head, wasm...), 0o644)
}
