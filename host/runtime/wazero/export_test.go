package wazero

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero"

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
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n := binary.Uvarint(wasm[i+1:])
		if id == 11 {
			segs, err := decodeData(wasm[i : i+1+n+int(size)])
			if err != nil {
				return -1
			}
			return len(segs)
		}
		i += 1 + n + int(size)
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
func Prepare(e runtime.Engine, wasm []byte) []byte { return e.(*engine).prepare(wasm).wasm }
func Rewrite(e runtime.Engine, wasm []byte) []byte { return e.(*engine).rewrite(wasm).wasm }
