//go:build wasip1

package guest

import "unsafe"

//go:wasmimport aiod:core client_info
func clientInfo(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:core client_input
func clientInput(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport aiod:core notify
func notifyImport(ptr unsafe.Pointer, n uint32) uint64

// ClientInfo returns the request's facts as JSON.
func ClientInfo() ([]byte, uint32) { return Finish(clientInfo(nil, 0)) }

// ClientInput asks the client for input (spec/abi/v1.md, "The client").
func ClientInput(req []byte) ([]byte, uint32) {
	return Finish(clientInput(Ptr(req), uint32(len(req))))
}

// Notify sends a server notification (list changes, resource updates).
func Notify(req []byte) ([]byte, uint32) {
	return Finish(notifyImport(Ptr(req), uint32(len(req))))
}
