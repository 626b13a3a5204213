package abi

import "encoding/json"

// Guard plugins (ABI v1.1; spec/hooks.md §1): a plugin that declares Hooks
// in its manifest answers OpHookBefore and OpHookAfter for the calls of
// other tools, once the operator's policy switches it on. The name passed
// with either op is the tool's; the arguments are a HookEvent, JSON; the
// output on RetOK is a HookAnswer, JSON.

// Hooks are the tool name globs ('*' matches any run of characters) a
// guard is for, before a call and after it. A guard declares at least one.
type Hooks struct {
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// HookEvent is what a guard is told about a call.
type HookEvent struct {
	// Tenant is the calling tenant ("default" in the single-tenant
	// form), Era the client's protocol era ("legacy" or "modern"),
	// Session its legacy session id ("" outside one).
	Tenant  string `json:"tenant"`
	Era     string `json:"era,omitempty"`
	Session string `json:"session,omitempty"`
	// Tool is the tool's published name, Arguments the call's arguments
	// object (after earlier guards' rewrites).
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Result is the CallToolResult (OpHookAfter only; after earlier
	// guards' replacements).
	Result json.RawMessage `json:"result,omitempty"`
	// Config is the guard's settings from the operator's policy entry.
	Config map[string]string `json:"config,omitempty"`
}

// Hook actions: what a HookAnswer says.
const (
	// Before a call.
	HookAllow   = "allow"   // the call goes on
	HookDeny    = "deny"    // the call does not run; Reason says why
	HookRewrite = "rewrite" // the call goes on with Arguments instead
	// After a call.
	HookKeep    = "keep"    // the result goes on unchanged
	HookReplace = "replace" // Result replaces it (a redacted result)
	HookAdd     = "add"     // Text is added to it as a block marked as the guard's
)

// HookAnswer is a guard's answer. Anything else (another action, a
// missing member, a rewrite that is not an object) is nonsense, and fails
// the call closed unless the operator said fail open.
type HookAnswer struct {
	Action    string          `json:"action"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Text      string          `json:"text,omitempty"`
}
