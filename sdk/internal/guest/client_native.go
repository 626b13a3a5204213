//go:build !wasip1

package guest

import "github.com/aiodhq/aiod/sdk/abi"

// ClientInfo returns the request's facts as JSON (fake host: its Call of
// aiod:core client_info).
func ClientInfo() ([]byte, uint32) { return NativeCall(abi.ModuleCore, "client_info", nil) }

// ClientInput asks the client for input (fake host: aiod:core client_input).
func ClientInput(req []byte) ([]byte, uint32) { return NativeCall(abi.ModuleCore, "client_input", req) }

// Notify sends a server notification (fake host: aiod:core notify).
func Notify(req []byte) ([]byte, uint32) { return NativeCall(abi.ModuleCore, "notify", req) }
