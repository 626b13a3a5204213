package wazero

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// module builds a wasm module from sections (id, body).
func module(secs ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		b = append(b, s[0])
		b = binary.AppendUvarint(b, uint64(len(s)-1))
		b = append(b, s[1:]...)
	}
	return b
}

// padded is the section sec (id, body) with its size encoded in n bytes:
// up to 5 is a valid u32 LEB128, more is malformed.
func padded(sec []byte, n int) []byte {
	b := []byte{sec[0]}
	size := len(sec) - 1
	for i := 0; i < n-1; i++ {
		b = append(b, byte(size)|0x80)
		size >>= 7
	}
	return append(append(b, byte(size)), sec[1:]...)
}

func memSec() []byte { return []byte{5, 1, 0, 1} } // one memory, min 1 page

// dataSec encodes active segments on memory 0 at i32.const offsets.
func dataSec(segs ...segment) []byte {
	b := []byte{11}
	b = binary.AppendUvarint(b, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, 0, 0x41)
		b = wasmbin.AppendI32(b, int32(s.off))
		b = append(b, 0x0b)
		b = binary.AppendUvarint(b, uint64(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

func TestMergeData(t *testing.T) {
	a, b, c := segment{16, []byte("abc")}, segment{100, []byte("de")}, segment{100 + 2 + mergeGap + 1, []byte("far")}
	for _, tc := range []struct {
		name string
		in   []byte
		want []segment // nil: unchanged
	}{
		{"merges small gaps, keeps a large one", module(memSec(), dataSec(a, b, c)),
			[]segment{{16, append(append([]byte("abc"), make([]byte, 100-19)...), "de"...)}, c}},
		{"adjacent", module(memSec(), dataSec(segment{0, []byte("x")}, segment{1, []byte("y")})), []segment{{0, []byte("xy")}}},
		{"nothing to merge", module(memSec(), dataSec(a, c)), nil},
		{"data count section", module(memSec(), []byte{12, 2}, dataSec(a, b)), nil},
		{"out of order", module(memSec(), dataSec(b, a)), []segment{{16, append(append([]byte("abc"), make([]byte, 100-19)...), "de"...)}}},
		{"overlap out of order", module(memSec(), dataSec(b, segment{17, []byte("z")}, a)), nil},
		{"overlap", module(memSec(), dataSec(a, segment{17, []byte("z")})), nil},
		{"passive segment", module(memSec(), []byte{11, 2, 0, 0x41, 0, 0x0b, 1, 'x', 1, 1, 'y'}), nil},
		{"global offset", module(memSec(), []byte{11, 2, 0, 0x41, 0, 0x0b, 1, 'x', 0, 0x23, 0, 0x0b, 1, 'y'}), nil},
		{"no data", module(memSec()), nil},
		{"section size padded to 5 bytes", append(module(memSec()), padded(dataSec(a, b), 5)...),
			[]segment{{16, append(append([]byte("abc"), make([]byte, 100-19)...), "de"...)}}},
		{"section size of 6 bytes", append(module(memSec()), padded(dataSec(a, b), 6)...), nil},
		{"segment offset LEB over 5 bytes", module(memSec(), []byte{11, 2, 0, 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b, 1, 'x', 0, 0x41, 1, 0x0b, 1, 'y'}), nil},
		{"segment offset's unused bits set", module(memSec(), []byte{11, 2, 0, 0x41, 0x80, 0x80, 0x80, 0x80, 0x40, 0x0b, 1, 'x', 0, 0x41, 1, 0x0b, 1, 'y'}), nil},
		{"truncated", module(memSec(), dataSec(a, b))[:20], nil},
		{"not wasm", []byte("hello world"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := bytes.Clone(tc.in)
			out := mergeData(in)
			if !bytes.Equal(in, tc.in) {
				t.Fatal("input modified")
			}
			if tc.want == nil {
				if !bytes.Equal(out, tc.in) {
					t.Fatalf("rewritten: %x", out)
				}
				return
			}
			if want := module(memSec(), dataSec(tc.want...)); !bytes.Equal(out, want) {
				t.Fatalf("got  %x\nwant %x", out, want)
			}
		})
	}
}
