//go:build !wasip1

package files

import (
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// call runs host function name on the fake host of native builds.
func call(name string, req []byte) ([]byte, uint32) {
	return guest.NativeCall(Module, name, req)
}

// callKeep runs host function name on the fake host, keeping a
// successful response as the host would.
func callKeep(name string, req []byte) (*Text, []byte, uint32) {
	resp, code := guest.NativeCall(Module, name, req)
	if code != 0 {
		return nil, resp, code
	}
	return guest.KeepNative(resp), nil, 0
}
