package mcp

import (
	"context"

	"github.com/aiodhq/aiod/host/plugin"
)

// Catalog is everything the protocol layer needs from what it serves:
// the current snapshot of tools, prompts, resources and resource
// templates, word when it changes, and the four calls into it.
// *plugin.Registry implements it (the guard is in host/wiring.go); a
// composition of catalogues (plugins plus upstream MCP servers) can too.
//
// Results are the MCP result objects as JSON bytes, spliced into the
// response unchanged. Errors are plain values:
//   - plugin.ErrUnknownTool, plugin.ErrUnknownPrompt and
//     plugin.ErrUnknownResource for a name or URI not in the catalogue
//     (answered -32602 "unknown tool", ..., or -32002 before 2026-07-28);
//   - plugin.ErrInputRequired when the call stopped to ask the client for
//     input (2026-07-28 input_required);
//   - *plugin.RPCError, a JSON-RPC error object answered as it is;
//   - context.Canceled for a cancelled request;
//   - anything else is an internal error (-32603).
//
// The types that still come from host/plugin are the call's arguments
// (plugin.CallRequest) and the snapshot (*plugin.Catalog, of which only
// the JSON renderings ToolsJSON, PromptsJSON, ResourcesJSON,
// TemplatesJSON and the Generation are read).
type Catalog interface {
	// Catalog returns the current snapshot; it never changes once
	// returned.
	Catalog() *plugin.Catalog
	// OnSwap registers f to be called with every new snapshot.
	OnSwap(f func(*plugin.Catalog))
	// CallTool runs a tool and returns its CallToolResult.
	CallTool(ctx context.Context, req plugin.CallRequest) ([]byte, error)
	// GetPrompt renders a prompt (GetPromptResult).
	GetPrompt(ctx context.Context, req plugin.CallRequest) ([]byte, error)
	// ReadResource reads a resource by URI (ReadResourceResult).
	ReadResource(ctx context.Context, req plugin.CallRequest) ([]byte, error)
	// Complete answers completion/complete; req.Args is the request's
	// params (CompleteResult).
	Complete(ctx context.Context, req plugin.CallRequest) ([]byte, error)
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
