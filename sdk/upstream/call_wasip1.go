//go:build wasip1

package upstream

import (
	"runtime"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// The aiod:upstream imports: (req_ptr, req_len) -> code<<32 | resp_len.

//go:wasmimport aiod:upstream list
func hostList(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:upstream call
func hostCall(ptr unsafe.Pointer, n uint32) uint64

// call runs host function name on req and returns (response, code).
func call(name string, req []byte) ([]byte, uint32) {
	p, n := guest.Ptr(req), uint32(len(req))
	var ret uint64
	switch name {
	case "list":
		ret = hostList(p, n)
	case "call":
		ret = hostCall(p, n)
	default:
		panic("aiod sdk/upstream: unknown function " + name)
	}
	runtime.KeepAlive(req)
	return guest.Finish(ret)
}
