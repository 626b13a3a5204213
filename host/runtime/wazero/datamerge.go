package wazero

import (
	"cmp"
	"errors"
	"slices"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// mergeData rewrites a module's data section so that active segments with
// small zero gaps between them become one segment, and returns wasm
// unchanged when it cannot prove the rewrite invisible to the guest.
//
// Why: wazero keeps one slice header per data segment in every instance
// (ModuleInstance.DataInstances, for memory.init), and the Go toolchain's
// wasm linker emits tens of thousands of segments (the standard-Go echo
// plugin has ~49,500: 1.1 MiB of headers per instance, a sixth of a warm
// instance's 6.4 MiB of RSS). Merged, there are a handful.
//
// Invisible because: memory is zero when the active segments are copied,
// so writing the zero gaps changes no byte; the merged segments cover the
// same bytes (only non-overlapping segments are merged, so their order does
// not matter) and end at the same place (same bounds check at instantiation);
// and segment indices are observable only through memory.init and
// data.drop, which a module may use only with a data count section, so a
// module that has one is left alone, as is one with a passive segment,
// another memory, or an offset that is not an i32.const.
func mergeData(wasm []byte) []byte {
	out, err := mergeDataErr(wasm)
	if err != nil {
		return wasm
	}
	return out
}

// mergeGap is the largest zero gap filled in: under a page, so the merge
// touches at most one page that would otherwise stay untouched (and the
// zero-page release after instantiation returns such a page anyway).
const mergeGap = 4096

var errNoMerge = errors.New("data section not mergeable")

type segment struct {
	off  uint32
	data []byte
}

func mergeDataErr(wasm []byte) ([]byte, error) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, errNoMerge
	}
	var data *wasmbin.Section
	for i, s := range secs {
		switch s.ID {
		case wasmbin.SecDataCount: // memory.init/data.drop may name segments
			return nil, errNoMerge
		case wasmbin.SecData:
			data = &secs[i]
		}
	}
	if data == nil {
		return nil, errNoMerge
	}
	segs, err := decodeData(wasm, *data)
	if err != nil {
		return nil, err
	}
	// Order does not matter for segments that do not overlap (checked
	// below): each byte gets the same value whatever the order, and an
	// out-of-bounds segment fails the instantiation either way (the module
	// cannot import a memory, so a failed one leaves nothing visible).
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.off, b.off) })
	var merged []segment
	for _, s := range segs {
		if k := len(merged); k > 0 {
			last := &merged[k-1]
			end := uint64(last.off) + uint64(len(last.data))
			if uint64(s.off) < end {
				return nil, errNoMerge // overlap
			}
			if gap := uint64(s.off) - end; gap <= mergeGap {
				last.data = append(append(last.data, make([]byte, gap)...), s.data...)
				continue
			}
		}
		merged = append(merged, segment{off: s.off, data: append([]byte(nil), s.data...)})
	}
	if len(merged) == len(segs) {
		return nil, errNoMerge // nothing gained
	}
	var body []byte
	body = wasmbin.AppendU32(body, uint32(len(merged)))
	for _, s := range merged {
		body = append(body, 0, 0x41) // active, memory 0; i32.const
		body = wasmbin.AppendI32(body, int32(s.off))
		body = append(body, 0x0b)
		body = wasmbin.AppendU32(body, uint32(len(s.data))) // at most 4 GiB: the segments lie in a 32-bit memory
		body = append(body, s.data...)
	}
	out := make([]byte, 0, len(wasm))
	out = append(out, wasm[:data.Off]...)
	if out, err = wasmbin.AppendSection(out, wasmbin.SecData, body); err != nil {
		return nil, errNoMerge
	}
	out = append(out, wasm[data.End:]...)
	return out, nil
}

// decodeData reads the data section sec of wasm, whose segments must all be
// active on memory 0 at an i32.const offset.
func decodeData(wasm []byte, sec wasmbin.Section) ([]segment, error) {
	r := sec.Reader(wasm)
	count, err := r.VecLen()
	if err != nil {
		return nil, errNoMerge
	}
	segs := make([]segment, 0, count)
	for range count {
		flag, err := r.U32()
		if err != nil || flag != 0 {
			return nil, errNoMerge
		}
		if op, err := r.Byte(); err != nil || op != 0x41 { // i32.const
			return nil, errNoMerge
		}
		off, err := r.I32()
		if err != nil {
			return nil, errNoMerge
		}
		if end, err := r.Byte(); err != nil || end != 0x0b {
			return nil, errNoMerge
		}
		b, err := r.ByteVec()
		if err != nil {
			return nil, errNoMerge
		}
		u := uint32(off)
		if uint64(u)+uint64(len(b)) > 1<<32 {
			return nil, errNoMerge
		}
		segs = append(segs, segment{off: u, data: b})
	}
	if !r.Done() {
		return nil, errNoMerge
	}
	return segs, nil
}
