//go:build wasip1

package guest

import "unsafe"

//go:wasmimport aiod:core configuration
func configurationImport(ptr unsafe.Pointer, n uint32) uint64

// Configuration returns the configured plugin's configuration and state
// (ABI v1.1, aiod:core.configuration) as JSON.
func Configuration() ([]byte, uint32) { return Finish(configurationImport(nil, 0)) }
