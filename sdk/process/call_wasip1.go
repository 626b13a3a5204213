//go:build wasip1

package process

import (
	"runtime"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// The aiod:process imports: (req_ptr, req_len) -> code<<32 | resp_len.

//go:wasmimport aiod:process spawn
func hostSpawn(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:process shell_exec
func hostShellExec(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:process shell_close
func hostShellClose(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:process which
func hostWhich(ptr unsafe.Pointer, n uint32) uint64

// call runs host function name on req and returns (response, code).
func call(name string, req []byte) ([]byte, uint32) {
	p, n := guest.Ptr(req), uint32(len(req))
	var ret uint64
	switch name {
	case "spawn":
		ret = hostSpawn(p, n)
	case "shell_exec":
		ret = hostShellExec(p, n)
	case "shell_close":
		ret = hostShellClose(p, n)
	case "which":
		ret = hostWhich(p, n)
	default:
		panic("aiod sdk/process: unknown function " + name)
	}
	runtime.KeepAlive(req)
	return guest.Finish(ret)
}

//go:wasmimport aiod:process start
func hostStart(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:process read
func hostRead(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:process wait
func hostWait(ptr unsafe.Pointer, n uint32) uint64

// callStream is call for the started-program functions (ABI v1.1), apart
// from call so that a plugin that does not use them does not import them
// (and loads on a host without them).
func callStream(name string, req []byte) ([]byte, uint32) {
	p, n := guest.Ptr(req), uint32(len(req))
	var ret uint64
	switch name {
	case "start":
		ret = hostStart(p, n)
	case "read":
		ret = hostRead(p, n)
	case "wait":
		ret = hostWait(p, n)
	default:
		panic("aiod sdk/process: unknown function " + name)
	}
	runtime.KeepAlive(req)
	return guest.Finish(ret)
}
