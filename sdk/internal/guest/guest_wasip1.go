//go:build wasip1

package guest

import (
	"unsafe"

	"github.com/aiodhq/aiod/sdk/abi"
)

//go:wasmimport aiod:core input_read
func inputRead(ptr unsafe.Pointer)

//go:wasmimport aiod:core output_write
func outputWrite(ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport aiod:core response_read
func responseRead(ptr unsafe.Pointer)

//go:wasmimport aiod:core log
func logImport(level uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport aiod:core progress
func progressImport(progress, total float64, ptr unsafe.Pointer, n uint32)

//go:wasmexport aiod_abi_version
func abiVersion() int32 { return abi.Version }

var inBuf []byte

//go:wasmexport aiod_call
func aiodCall(op int32, nameLen, argsLen uint32) int32 {
	n := int(nameLen) + int(argsLen)
	if cap(inBuf) < n {
		inBuf = make([]byte, n)
	}
	in := inBuf[:n]
	if n > 0 {
		inputRead(unsafe.Pointer(&in[0]))
	}
	if Handler == nil {
		return abi.RetUnknownOp
	}
	return Handler(op, in[:nameLen], in[nameLen:])
}

// WriteOutput appends b to the call's output.
func WriteOutput(b []byte) {
	if len(b) == 0 {
		return
	}
	outputWrite(unsafe.Pointer(&b[0]), uint32(len(b)))
}

// Log sends a log message (level 0 debug .. 7 emergency).
func Log(level int, msg string) {
	logImport(uint32(level), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

// Progress reports progress of the running call.
func Progress(progress, total float64, msg string) {
	progressImport(progress, total, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

// Finish turns a family function's packed result into (response, code),
// copying the pending response out of the host.
func Finish(ret uint64) ([]byte, uint32) {
	code := uint32(ret >> 32)
	n := uint32(ret)
	if n == 0 {
		return nil, code
	}
	b := make([]byte, n)
	responseRead(unsafe.Pointer(&b[0]))
	return b, code
}

// Ptr returns a pointer to b's data (nil for empty).
func Ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

//lint:file-ignore U1000 the exports above reach the host through go:wasmexport, which staticcheck does not see
