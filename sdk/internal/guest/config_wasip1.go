//go:build wasip1

package guest

import (
	"bytes"
	"unsafe"
)

//go:wasmimport aiod:core configuration
func configurationImport(ptr unsafe.Pointer, n uint32) uint64

// configuration is the configuration and state this instance read, kept:
// an instance belongs to one load (spec/abi/v1.md §2.6), so every later
// call of it would read the same bytes. A call then makes no host call,
// copy and comparison for them (~5 KB for a Machine Mode adapter with a
// few tools, its first step after the guest was idle).
var configuration []byte

// Configuration returns the configured plugin's configuration and state
// (ABI v1.1, aiod:core.configuration) as JSON. The answer of a plugin
// that is not configured, or of configure itself (both null), is not
// kept.
func Configuration() ([]byte, uint32) {
	if configuration != nil {
		return configuration, 0
	}
	b, code := Finish(configurationImport(nil, 0))
	if code == 0 && len(b) > 0 && !bytes.HasPrefix(b, []byte(`{"config":null`)) {
		configuration = b
	}
	return b, code
}
