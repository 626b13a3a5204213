//go:build !wasip1

package process

import (
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// call runs host function name on the fake host of native builds.
func call(name string, req []byte) ([]byte, uint32) {
	return guest.NativeCall(Module, name, req)
}

// callStream is call for the started-program functions (start, read,
// wait), apart so that a wasip1 plugin that does not use them does not
// import them.
func callStream(name string, req []byte) ([]byte, uint32) { return call(name, req) }
