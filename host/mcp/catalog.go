package mcp

import (
	"context"

	"github.com/aiodhq/aiod/host/mcp/catalog"
)

// The types the protocol layer serves. They are declared in the leaf
// package host/mcp/catalog, which host/mcp and whatever serves a catalogue
// (the plugin registry) both import: host/mcp imports nothing of what it
// serves.
type (
	// CallRequest is one call into a Catalog.
	CallRequest = catalog.CallRequest
	// Snapshot is one immutable generation of a Catalog.
	Snapshot = catalog.Snapshot
	// RPCError is a JSON-RPC error object a call answered with.
	RPCError = catalog.RPCError
)

// The errors of a Catalog call (see Catalog).
var (
	ErrUnknownTool     = catalog.ErrUnknownTool
	ErrUnknownPrompt   = catalog.ErrUnknownPrompt
	ErrUnknownResource = catalog.ErrUnknownResource
	ErrInputRequired   = catalog.ErrInputRequired
)

// Catalog is everything the protocol layer needs from what it serves:
// the current snapshot of tools, prompts, resources and resource
// templates, word when it changes, and the four calls into it.
// *plugin.Registry implements it (the guard is in host/wiring.go); a
// composition of catalogues (plugins plus upstream MCP servers) can too.
//
// Results are the MCP result objects as JSON bytes, spliced into the
// response unchanged. Errors are plain values:
//   - ErrUnknownTool, ErrUnknownPrompt and ErrUnknownResource for a name
//     or URI not in the catalogue (answered -32602 "unknown tool", ...,
//     or -32002 before 2026-07-28);
//   - ErrInputRequired when the call stopped to ask the client for input
//     (2026-07-28 input_required);
//   - *RPCError, a JSON-RPC error object answered as it is;
//   - context.Canceled for a cancelled request;
//   - anything else is an internal error (-32603).
type Catalog interface {
	// Snapshot returns the current snapshot; it never changes once
	// returned.
	Snapshot() *Snapshot
	// OnSwap registers f to be called with every new snapshot.
	OnSwap(f func(*Snapshot))
	// CallTool runs a tool and returns its CallToolResult.
	CallTool(ctx context.Context, req CallRequest) ([]byte, error)
	// GetPrompt renders a prompt (GetPromptResult).
	GetPrompt(ctx context.Context, req CallRequest) ([]byte, error)
	// ReadResource reads a resource by URI (ReadResourceResult).
	ReadResource(ctx context.Context, req CallRequest) ([]byte, error)
	// Complete answers completion/complete; req.Args is the request's
	// params (CompleteResult).
	Complete(ctx context.Context, req CallRequest) ([]byte, error)
}

// ToolLister is implemented by a Catalog whose tools/list is more than its
// snapshot's ToolsJSON: the host's composition with upstream MCP servers,
// whose tools come and go without a new snapshot. tools/list then answers
// ListTools, a JSON array of tool objects. The snapshot still serves
// everything else (the Mcp-Param-* header index among it).
type ToolLister interface {
	ListTools(ctx context.Context) []byte
}

// ToolsNotifier is implemented by a Catalog whose tools change without a
// new snapshot (the upstream MCP servers of a ToolLister): f is called once
// for each such change, and the server tells its listening clients.
type ToolsNotifier interface {
	OnToolsChanged(f func())
}

// Lister is implemented by a Catalog whose prompts, resources or resource
// templates are more than its snapshot's (the upstream MCP servers'): List
// returns the JSON array to answer for key ("prompts", "resources",
// "resourceTemplates"); ok false serves the snapshot's.
type Lister interface {
	List(ctx context.Context, key string) (items []byte, ok bool)
}

// ListNotifier is implemented by a Catalog whose prompts or resources
// change without a new snapshot: f is called with "prompts" or
// "resources" once for each such change.
type ListNotifier interface {
	OnListChanged(f func(kind string))
}
