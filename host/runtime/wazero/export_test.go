package wazero

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
	"github.com/aiodhq/aiod/host/runtime"
)

// SetMergeSegments switches mergeData and returns the function restoring it.
func SetMergeSegments(on bool) (restore func()) {
	m := mergeSegments
	mergeSegments = on
	return func() { mergeSegments = m }
}

// Segments counts wasm's data segments, -1 if it has no data section.
func Segments(wasm []byte) int {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return -1
	}
	for _, s := range secs {
		if s.ID == wasmbin.SecData {
			segs, err := decodeData(wasm, s)
			if err != nil {
				return -1
			}
			return len(segs)
		}
	}
	return -1
}

// MemoryAtStart instantiates c without running any start function and
// returns a copy of its linear memory: the data segments' image.
func MemoryAtStart(ctx context.Context, c runtime.Compiled) ([]byte, error) {
	cc := c.(*compiled)
	m, err := cc.r.InstantiateModule(ctx, cc.cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, err
	}
	defer m.Close(ctx)
	if cc.img != nil {
		if !m.Memory().Write(0, cc.img.data) {
			return nil, errors.New("image does not fit")
		}
	}
	b, _ := m.Memory().Read(0, m.Memory().Size())
	return append([]byte(nil), b...), nil
}

// MergeData exposes mergeDataErr.
func MergeData(wasm []byte) ([]byte, error) { return mergeDataErr(wasm) }

// SetInterrupt switches the loop-header interrupt and returns the function
// restoring it.
func SetInterrupt(on bool) (restore func()) {
	u := useInterrupt
	useInterrupt = on
	return func() { useInterrupt = u }
}

// InterruptErr is why c is not instrumented (nil if it is).
func InterruptErr(c runtime.Compiled) error { return c.(*compiled).noInterrupt }

// PreparedPath is where e caches wasm's prepared form ("" if it does not).
func PreparedPath(e runtime.Engine, wasm []byte) string { return e.(*engine).preparedPath(wasm) }

// Prepare is what e compiles for wasm (through its cache), Rewrite the
// same without the cache.
func Prepare(e runtime.Engine, wasm []byte) []byte { return e.(*engine).cachedRewrite(wasm).wasm }
func Rewrite(e runtime.Engine, wasm []byte) []byte { return e.(*engine).rewrite(wasm).wasm }

// SetLazyTable switches the table filled on first use and returns the
// function restoring it.
func SetLazyTable(on bool) (restore func()) {
	u := useLazyTable
	useLazyTable = on
	return func() { useLazyTable = u }
}

// SetImage switches the data image and returns the function restoring it.
func SetImage(on bool) (restore func()) {
	u := useImage
	useImage = on
	return func() { useImage = u }
}

// HasImage reports whether c's instances start from a data image.
func HasImage(c runtime.Compiled) bool { return c.(*compiled).img != nil }

// InstanceMemory is an instance's linear memory (tests write and read it).
func InstanceMemory(i runtime.Instance) api.Memory { return i.(*instance).m.Memory() }

// DropZeroPages runs the zero-page release on an idle instance.
func DropZeroPages(i runtime.Instance) int { return i.(*instance).mem.dropZeroPages() }

// ImageSize is the size of c's data image (0 without one).
func ImageSize(c runtime.Compiled) int {
	if img := c.(*compiled).img; img != nil {
		return len(img.data)
	}
	return 0
}

// SetYieldQuantum sets how long a guest runs before it yields (yield.go).
func SetYieldQuantum(d time.Duration) (restore func()) {
	old := yieldQuantum
	yieldQuantum = d
	return func() { yieldQuantum = old }
}

// Yields is how many times an instance of this engine gave its processor
// up (yield.go).
func Yields(inst runtime.Instance) int { return inst.(*instance).yield.yields }

// SplitImage exposes splitImage.
func SplitImage(wasm []byte) (stripped, image []byte, err error) { return splitImage(wasm) }

// Snapshot reports whether c holds a snapshot for owner, and its size in
// bytes and page runs.
func Snapshot(c runtime.Compiled, owner string) (ok bool, size uint64, pages, runs int) {
	cc, _ := c.(*compiled)
	if cc == nil || cc.snaps == nil {
		return false, 0, 0, 0
	}
	s, ok := cc.snaps.Lookup(owner)
	if !ok {
		return false, 0, 0, 0
	}
	for _, r := range s.runs {
		pages += int(r.N) / pageSize
	}
	return true, s.size, pages, len(s.runs)
}

// WaitSpare waits until c holds a spare snapshot (false after 10 s).
func WaitSpare(c runtime.Compiled) bool {
	cc, _ := c.(*compiled)
	if cc == nil || cc.snaps == nil {
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if cc.snaps.HasSpare() {
			return true
		}
	}
	return false
}

// Spares reports how many spare snapshots c holds ready (-1: none kept).
func Spares(c runtime.Compiled) int {
	cc, _ := c.(*compiled)
	if cc == nil || cc.snaps == nil {
		return -1
	}
	return cc.snaps.Spares()
}
