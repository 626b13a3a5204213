//go:build wasip1

package guest

import "unsafe"

//go:wasmimport aiod:core response_keep
func responseKeep() uint64

//go:wasmimport aiod:core output_blob
func outputBlob(h, escape uint32) uint32

//go:wasmimport aiod:core bytes_keep
func bytesKeep(ptr unsafe.Pointer, n uint32) uint64

// KeepBytes keeps a copy of b on the host (aiod:core.bytes_keep, ABI
// v1.1) as a Blob.
func KeepBytes(b []byte) *Blob {
	if len(b) == 0 {
		return &Blob{utf8: true, gen: gen}
	}
	k := bytesKeep(unsafe.Pointer(&b[0]), uint32(len(b)))
	kept++
	return &Blob{h: uint32(k), n: len(b), utf8: k>>32&1 == 1, gen: gen}
}

// FinishKept is Finish for a call whose response the guest keeps on the
// host: on success the response stays there (a Blob); a failure's
// response is read as Finish reads it.
func FinishKept(ret uint64) (*Blob, []byte, uint32) {
	code, n := uint32(ret>>32), uint32(ret)
	if code != 0 {
		resp, code := Finish(ret)
		return nil, resp, code
	}
	if n == 0 {
		return &Blob{utf8: true, gen: gen}, nil, 0
	}
	k := responseKeep()
	if k == ^uint64(0) {
		panic("aiod sdk: the host kept no response")
	}
	kept++
	return &Blob{h: uint32(k), n: int(n), utf8: k>>32&1 == 1, gen: gen}, nil, 0
}

// KeptByHost is a response a family call kept on the host itself (the
// process family's collection, ABI v1.2) as a Blob: handle h, n bytes.
func KeptByHost(h uint32, n int) *Blob {
	if n == 0 {
		return &Blob{utf8: true, gen: gen}
	}
	kept++
	return &Blob{h: h, n: n, utf8: true, gen: gen}
}

func writeBlob(h, level uint32) { outputBlob(h, level) }

func resetNative() {}
