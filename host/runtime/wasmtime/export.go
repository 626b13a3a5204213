//go:build cgo

package wasmtime

// The Go side of the guest's stdout/stderr callbacks (kept apart from
// shim.go: a file with //export may only declare C in its preamble).

/*
#include <stddef.h>
*/
import "C"

import (
	"io"
	"runtime/cgo"
	"unsafe"
)

//export aiodWasiWrite
func aiodWasiWrite(h unsafe.Pointer, buf *C.uchar, n C.size_t) C.ptrdiff_t {
	w := cgo.Handle(uintptr(h)).Value().(io.Writer)
	if _, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))); err != nil {
		return -5 // EIO
	}
	return C.ptrdiff_t(n)
}

//export aiodWasiFree
func aiodWasiFree(h unsafe.Pointer) {
	cgo.Handle(uintptr(h)).Delete()
}
