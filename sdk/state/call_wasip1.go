//go:build wasip1

package state

import (
	"runtime"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// The aiod:state imports: (req_ptr, req_len) -> code<<32 | resp_len.

//go:wasmimport aiod:state get
func hostGet(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:state set
func hostSet(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:state delete
func hostDelete(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:state list
func hostList(ptr unsafe.Pointer, n uint32) uint64

// call runs host function name on req and returns (response, code).
func call(name string, req []byte) ([]byte, uint32) {
	p, n := guest.Ptr(req), uint32(len(req))
	var ret uint64
	switch name {
	case "get":
		ret = hostGet(p, n)
	case "set":
		ret = hostSet(p, n)
	case "delete":
		ret = hostDelete(p, n)
	case "list":
		ret = hostList(p, n)
	default:
		panic("aiod sdk/state: unknown function " + name)
	}
	runtime.KeepAlive(req)
	return guest.Finish(ret)
}
