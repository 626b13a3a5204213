//go:build wasip1

package cdp

import (
	"runtime"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// The aiod:cdp imports: (req_ptr, req_len) -> code<<32 | resp_len.

//go:wasmimport aiod:cdp info
func hostInfo(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:cdp targets
func hostTargets(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:cdp attach
func hostAttach(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:cdp detach
func hostDetach(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:cdp call
func hostCall(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:cdp events
func hostEvents(ptr unsafe.Pointer, n uint32) uint64

// call runs host function name on req and returns (response, code).
func call(name string, req []byte) ([]byte, uint32) {
	p, n := guest.Ptr(req), uint32(len(req))
	var ret uint64
	switch name {
	case "info":
		ret = hostInfo(p, n)
	case "targets":
		ret = hostTargets(p, n)
	case "attach":
		ret = hostAttach(p, n)
	case "detach":
		ret = hostDetach(p, n)
	case "call":
		ret = hostCall(p, n)
	case "events":
		ret = hostEvents(p, n)
	default:
		panic("aiod sdk/cdp: unknown function " + name)
	}
	runtime.KeepAlive(req)
	return guest.Finish(ret)
}
