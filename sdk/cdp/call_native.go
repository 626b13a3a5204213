//go:build !wasip1

package cdp

import "github.com/aiodhq/aiod/sdk/internal/guest"

// call runs host function name on the fake host of native builds.
func call(name string, req []byte) ([]byte, uint32) {
	return guest.NativeCall(Module, name, req)
}
