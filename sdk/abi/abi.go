// Package abi is the aiod plugin ABI v1 contract (spec/abi/v1.md), shared
// by the host and the guest SDK: the ABI version, the aiod_call operation
// and return codes, the host function error codes and their names, the
// import module names, and the JSON wire types of every gated family
// (files.go, process.go, state.go, cdp.go).
//
// It is a leaf: standard library only, no engine, no host code, so a
// plugin built with the SDK pays nothing for it but the types it uses. The
// host maps its native values (host/fsroot, host/proc) to these types; the
// SDK decodes them (with sdk/jsonx, whose fast path covers their flat
// fields) and wraps them in its own API.
package abi

import "strconv"

// Version is the ABI version (the value of aiod_abi_version).
const Version = 1

// The exports of a reactor module.
const (
	ExportCall    = "aiod_call"
	ExportVersion = "aiod_abi_version"
)

// Operation codes of aiod_call (spec/abi/v1.md §3).
const (
	OpDescribe     = 0
	OpToolCall     = 1
	OpPromptGet    = 2
	OpResourceRead = 3
	OpComplete     = 4
	// OpHookBefore and OpHookAfter are a guard plugin's hooks around
	// another tool's call (v1.1; spec/hooks.md §1, hooks.go).
	OpHookBefore = 5
	OpHookAfter  = 6
	// OpConfigure (ABI v1.1) gives a configured plugin (Manifest.Configured)
	// its configuration and takes the tools it publishes from it
	// (Configured).
	OpConfigure = 7
)

// MinorVersion is the ABI's minor version: 1.1 added guard plugins
// (OpHookBefore, OpHookAfter, the manifest's hooks), configured plugins
// (OpConfigure, aiod:core.configuration), aiod:process start, read and
// wait, and the process family's tool channel. A module still returns Version from aiod_abi_version; a
// manifest or an import of a later minor version is refused by an earlier
// host (unknown field, missing import).
const MinorVersion = 1

// Return codes of aiod_call.
const (
	RetOK = 0
	// RetUnknownName: no tool, prompt or resource of that name.
	RetUnknownName = 1
	// RetBadInput: the arguments could not be decoded.
	RetBadInput = 2
	// RetUnknownOp: the module does not implement the operation.
	RetUnknownOp = 3
	// RetInputRequired: the call stopped to ask the client for input
	// (aiod:core.client_input answered input_required).
	RetInputRequired = 4
	// RetRPCError: the output is a JSON-RPC error object to answer with.
	RetRPCError = 5
)

// The import modules: aiod:core is always linked; every other module is a
// gated family, linked only when granted, named "aiod:<family>".
const (
	ModuleCore     = "aiod:core"
	ModuleFiles    = "aiod:files"
	ModuleProcess  = "aiod:process"
	ModuleState    = "aiod:state"
	ModuleCDP      = "aiod:cdp"
	ModuleUpstream = "aiod:upstream"
)

// ModulePrefix starts every aiod import module name.
const ModulePrefix = "aiod:"

// Code is a host function error code (spec/abi/v1.md §5.2): the high 32
// bits of a family function's result, and the "code" of its error object
// by name.
type Code uint32

// The error codes.
const (
	OK          Code = 0
	Denied      Code = 1 // outside the grant
	Invalid     Code = 2 // malformed request
	NotFound    Code = 3
	Exists      Code = 4
	IO          Code = 5
	TooLarge    Code = 6
	Timeout     Code = 7
	Unavailable Code = 8
	Internal    Code = 9
	// InputRequired: the client must be asked for input first (an MRTR
	// round); the guest unwinds and the host answers input_required.
	InputRequired Code = 10
)

var codeNames = [...]string{"ok", "denied", "invalid", "not_found", "exists", "io", "too_large", "timeout", "unavailable", "internal", "input_required"}

// String is the code's name, as in an error object's "code"
// ("code(N)" for an unknown code).
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// CodeName is the name of a code the guest received: Code.String, but
// "internal" for a code this version does not know.
func CodeName(c uint32) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "internal"
}

// Error is the error object of a failed family function (its response
// when the code is not OK): {"code", "message", ...}. Families may add
// fields (files: FilesError).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Log levels of aiod:core.log (RFC 5424 / MCP logging), by number.
var LogLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
