package wazero

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestSplitImage: the image holds the segments applied in order over
// zeros, the module keeps every section but the data section, and every
// module whose start could differ is left alone.
func TestSplitImage(t *testing.T) {
	a, b := segment{16, []byte("abc")}, segment{100, []byte("de")}
	over := segment{17, []byte("Z")}    // a later segment over an earlier one
	twoPages := []byte{5, 1, 0, 2}      // one memory, min 2 pages
	typeSec := []byte{1, 1, 0x60, 0, 0} // (module() adds each size)
	funcSec := []byte{3, 1, 0}
	codeSec := []byte{10, 1, 2, 0, 0x0b}
	for _, tc := range []struct {
		name  string
		in    []byte
		image []byte // nil: left alone
	}{
		{"segments", module(memSec(), dataSec(a, b)), append(append(append(make([]byte, 16), "abc"...), make([]byte, 100-19)...), "de"...)},
		{"later over earlier", module(memSec(), dataSec(a, over)), append(make([]byte, 16), "aZc"...)},
		{"to the end of the initial memory", module(memSec(), dataSec(segment{65535, []byte("x")})), append(make([]byte, 65535), 'x')},
		{"maximum given", module([]byte{5, 1, 1, 1, 4}, dataSec(a)), append(make([]byte, 16), "abc"...)},
		{"second page", module(twoPages, dataSec(segment{65536, []byte("y")})), append(make([]byte, 65536), 'y')},
		{"over the image bound", module([]byte{5, 1, 0, 0x80, 0x10}, dataSec(segment{maxImage, []byte("x")})), nil},
		{"past the initial memory", module(memSec(), dataSec(segment{65535, []byte("xy")})), nil},
		{"functions, no start", module(typeSec, funcSec, memSec(), codeSec, dataSec(a)), append(make([]byte, 16), "abc"...)},
		{"imports a function and a global", module(typeSec, []byte{2, 2, 1, 'm', 1, 'f', 0, 0, 1, 'm', 1, 'g', 3, 0x7f, 0}, memSec(), dataSec(a)), append(make([]byte, 16), "abc"...)},
		{"start section", module(typeSec, funcSec, memSec(), []byte{8, 0}, codeSec, dataSec(a)), nil},
		{"data count section", module(memSec(), []byte{12, 1}, dataSec(a)), nil},
		{"passive segment", module(memSec(), []byte{11, 2, 0, 0x41, 0, 0x0b, 1, 'x', 1, 1, 'y'}), nil},
		{"two memories", module([]byte{5, 2, 0, 1, 0, 1}, dataSec(a)), nil},
		{"shared memory", module([]byte{5, 1, 3, 1, 1}, dataSec(a)), nil},
		{"imported memory", module([]byte{2, 1, 1, 'm', 1, 'n', 2, 0, 1}, dataSec(a)), nil},
		{"no memory", module(dataSec(a)), nil},
		{"no data", module(memSec()), nil},
		{"section size padded to 5 bytes", append(module(memSec()), padded(dataSec(a), 5)...), append(make([]byte, 16), "abc"...)},
		{"section size of 6 bytes", append(module(memSec()), padded(dataSec(a), 6)...), nil},
		{"memory minimum LEB over 5 bytes", module([]byte{5, 1, 0, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00}, dataSec(a)), nil},
		{"truncated", module(memSec(), dataSec(a, b))[:20], nil},
		{"not wasm", []byte("hello world"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := bytes.Clone(tc.in)
			stripped, image, err := splitImage(in)
			if !bytes.Equal(in, tc.in) {
				t.Fatal("input modified")
			}
			if tc.image == nil {
				if err == nil {
					t.Fatalf("split: image %d bytes", len(image))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(image, tc.image) {
				t.Fatalf("image %q, want %q", image, tc.image)
			}
			if want := bytes.Replace(tc.in, dataSecOf(t, tc.in), nil, 1); !bytes.Equal(stripped, want) {
				t.Fatalf("stripped %x, want %x", stripped, want)
			}
		})
	}
}

// dataSecOf returns the data section (id, size, body) of wasm.
func dataSecOf(t *testing.T, wasm []byte) []byte {
	t.Helper()
	for i := 8; i < len(wasm); {
		size, n := binary.Uvarint(wasm[i+1:])
		end := i + 1 + n + int(size)
		if wasm[i] == 11 {
			return wasm[i:end]
		}
		i = end
	}
	t.Fatal("no data section")
	return nil
}

// FuzzSplitImage: splitImage never panics on any bytes, and what it
// splits gives back the module with its data section removed and an
// image within the initial memory; mergeData likewise never panics.
//
//	go test ./host/runtime/wazero -run '^$' -fuzz FuzzSplitImage -fuzztime 30s
func FuzzSplitImage(f *testing.F) {
	a, b := segment{16, []byte("abc")}, segment{100, []byte("de")}
	f.Add(module(memSec(), dataSec(a, b)))
	f.Add(module([]byte{5, 1, 1, 1, 4}, dataSec(a)))
	f.Add(module([]byte{2, 1, 1, 'm', 1, 'n', 2, 0, 1}, dataSec(a)))
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		in := bytes.Clone(wasm)
		mergeData(in)
		stripped, image, err := splitImage(in)
		if !bytes.Equal(in, wasm) {
			t.Fatal("input modified")
		}
		if err != nil {
			return
		}
		if len(stripped) >= len(wasm) || !bytes.HasPrefix(wasm, stripped[:8]) {
			t.Fatalf("stripped %d bytes of %d", len(stripped), len(wasm))
		}
		if len(image) > 1<<32 {
			t.Fatalf("image of %d bytes", len(image))
		}
	})
}
