//go:build wasip1

package files

import (
	"runtime"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// The aiod:files imports: (req_ptr, req_len) -> code<<32 | resp_len.

//go:wasmimport aiod:files read
func hostRead(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files write
func hostWrite(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files stat
func hostStat(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files exists
func hostExists(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files list
func hostList(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files walk
func hostWalk(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files mkdir
func hostMkdir(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files remove
func hostRemove(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:files rename
func hostRename(ptr unsafe.Pointer, n uint32) uint64

// call runs host function name on req and returns (response, code).
func call(name string, req []byte) ([]byte, uint32) {
	p, n := guest.Ptr(req), uint32(len(req))
	var ret uint64
	switch name {
	case "read":
		ret = hostRead(p, n)
	case "write":
		ret = hostWrite(p, n)
	case "stat":
		ret = hostStat(p, n)
	case "exists":
		ret = hostExists(p, n)
	case "list":
		ret = hostList(p, n)
	case "walk":
		ret = hostWalk(p, n)
	case "mkdir":
		ret = hostMkdir(p, n)
	case "remove":
		ret = hostRemove(p, n)
	case "rename":
		ret = hostRename(p, n)
	default:
		panic("aiod sdk/files: unknown function " + name)
	}
	runtime.KeepAlive(req)
	return guest.Finish(ret)
}

// callKeep runs host function name on req, keeping a successful response
// on the host.
func callKeep(name string, req []byte) (*Text, []byte, uint32) {
	if name != "read" {
		panic("aiod sdk/files: cannot keep the response of " + name)
	}
	ret := hostRead(guest.Ptr(req), uint32(len(req)))
	runtime.KeepAlive(req)
	return guest.FinishKept(ret)
}
