//go:build !wasip1

package guest

import "github.com/aiodhq/aiod/sdk/abi"

// Configuration returns the configured plugin's configuration and state
// (fake host: aiod:core configuration).
func Configuration() ([]byte, uint32) { return NativeCall(abi.ModuleCore, "configuration", nil) }
