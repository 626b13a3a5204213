// Package abi is the raw aiod plugin ABI v1 (spec/abi/v1.md) as the guest
// sees it: the aiod:core imports on wasip1, and a fake host for native
// builds so plugin code unit-tests with plain `go test`.
package abi

// Version is the ABI version this SDK implements.
const Version = 1

// Operation codes of aiod_call.
const (
	OpDescribe = 0
	OpToolCall = 1
)

// Return codes of aiod_call.
const (
	RetOK          = 0
	RetUnknownName = 1
	RetBadInput    = 2
	RetUnknownOp   = 3
)

// Host function error codes (high 32 bits of a family function's result).
const (
	CodeOK          = 0
	CodeDenied      = 1
	CodeInvalid     = 2
	CodeNotFound    = 3
	CodeExists      = 4
	CodeIO          = 5
	CodeTooLarge    = 6
	CodeTimeout     = 7
	CodeUnavailable = 8
	CodeInternal    = 9
)

// Handler is the guest's side of aiod_call, installed by package sdk.
var Handler func(op int32, name, args []byte) int32

var codeNames = [...]string{"ok", "denied", "invalid", "not_found", "exists", "io", "too_large", "timeout", "unavailable", "internal", "input_required"}

// CodeName is the name of a host function error code ("internal" if unknown).
func CodeName(code uint32) string {
	if int(code) < len(codeNames) {
		return codeNames[code]
	}
	return "internal"
}
