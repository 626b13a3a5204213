package wazero

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
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
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errNoMerge
	}
	var dataStart, dataEnd int = -1, -1
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n := binary.Uvarint(wasm[i+1:])
		if n <= 0 || size > uint64(len(wasm)) {
			return nil, errNoMerge
		}
		body := i + 1 + n
		end := body + int(size)
		if end > len(wasm) {
			return nil, errNoMerge
		}
		switch id {
		case 12: // data count: memory.init/data.drop may name segments
			return nil, errNoMerge
		case 11:
			dataStart, dataEnd = i, end
		}
		i = end
	}
	if dataStart < 0 {
		return nil, errNoMerge
	}
	segs, err := decodeData(wasm[dataStart:dataEnd])
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
	body = binary.AppendUvarint(body, uint64(len(merged)))
	for _, s := range merged {
		body = append(body, 0, 0x41) // active, memory 0; i32.const
		body = appendSleb(body, int64(int32(s.off)))
		body = append(body, 0x0b)
		body = binary.AppendUvarint(body, uint64(len(s.data)))
		body = append(body, s.data...)
	}
	out := make([]byte, 0, len(wasm))
	out = append(out, wasm[:dataStart]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(body)))
	out = append(out, body...)
	out = append(out, wasm[dataEnd:]...)
	return out, nil
}

// decodeData reads a data section (id, size, body) whose segments are all
// active on memory 0 at an i32.const offset.
func decodeData(sec []byte) ([]segment, error) {
	_, n := binary.Uvarint(sec[1:])
	p := sec[1+n:]
	count, n := binary.Uvarint(p)
	if n <= 0 || count > uint64(len(p)) {
		return nil, errNoMerge
	}
	p = p[n:]
	segs := make([]segment, 0, count)
	for range count {
		flag, n := binary.Uvarint(p)
		if n <= 0 || flag != 0 || len(p) < n+1 || p[n] != 0x41 {
			return nil, errNoMerge
		}
		p = p[n+1:]
		off, n := sleb(p)
		if n <= 0 || len(p) < n+1 || p[n] != 0x0b {
			return nil, errNoMerge
		}
		p = p[n+1:]
		size, n := binary.Uvarint(p)
		if n <= 0 || size > uint64(len(p)-n) {
			return nil, errNoMerge
		}
		u := uint32(int32(off))
		if int64(int32(off)) != off || uint64(u)+size > 1<<32 {
			return nil, errNoMerge
		}
		segs = append(segs, segment{off: u, data: p[n : n+int(size)]})
		p = p[n+int(size):]
	}
	if len(p) != 0 {
		return nil, errNoMerge
	}
	return segs, nil
}

// sleb decodes a signed LEB128 (at most 5 bytes, an i32).
func sleb(b []byte) (int64, int) {
	var v int64
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		c := b[i]
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1
		}
	}
	return 0, 0
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
