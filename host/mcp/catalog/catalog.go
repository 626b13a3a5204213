// Package catalog holds the types the MCP protocol layer serves: the call
// request, the catalogue snapshot and the errors a call ends with.
//
// host/mcp owns them and re-exports every name (mcp.CallRequest,
// mcp.Snapshot, mcp.ErrUnknownTool, ...); they sit in this leaf so that
// what serves a catalogue (the plugin registry, the host's composition
// with upstream MCP servers) implements mcp.Catalog without importing
// host/mcp, and host/mcp imports none of them. The dependency runs
// host/mcp -> host/mcp/catalog <- host/plugin.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/aiodhq/aiod/host/hostfn"
)

// DefaultOwner is the owner (tenant) id of a call that names none.
const DefaultOwner = "default"

// CallRequest is one call into a catalogue: a tools/call, prompts/get,
// resources/read (Name is the URI) or completion/complete (Args is the
// request's params).
type CallRequest struct {
	Owner string // DefaultOwner when empty
	Name  string
	Args  []byte // JSON object; empty means {}
	// Notify receives log and progress notifications; may be nil.
	Notify func(kind string, params any)
	// Client is the MCP client behind the request (input, request
	// facts, server notifications); may be nil.
	Client hostfn.Client
	// Era is the protocol era the request is served under ("legacy" or
	// "modern"; "" when not an MCP request) and Session its legacy
	// session id ("" outside one): what the hooks around a call are told
	// (spec/hooks.md).
	Era     string
	Session string
}

// ErrUnknownTool is returned by CallTool for a name not in the catalogue.
var ErrUnknownTool = errors.New("unknown tool")

// ErrUnknownPrompt and ErrUnknownResource are returned for names and URIs
// not in the catalogue.
var (
	ErrUnknownPrompt   = errors.New("unknown prompt")
	ErrUnknownResource = errors.New("unknown resource")
)

// ErrInputRequired is returned when the call stopped to ask the client
// for input it did not have yet (an MRTR round in the 2026-07-28
// protocol). What it asked for was handed to the request's
// hostfn.Client.
var ErrInputRequired = errors.New("input required")

// RPCError is a JSON-RPC error the callee chose to answer with, as the
// JSON error object ({"code":..,"message":..,"data":..}).
type RPCError struct{ Body json.RawMessage }

func (e *RPCError) Error() string { return "plugin answered with a JSON-RPC error: " + string(e.Body) }

// Snapshot is one immutable generation of a catalogue as the protocol
// layer reads it: the JSON renderings of its four lists and, by tool
// name, the tools that may run as tasks.
type Snapshot struct {
	gen                                  uint64
	tools, prompts, resources, templates []byte
	taskSupport                          map[string]string
}

// NewSnapshot makes generation gen from the JSON arrays of the tool,
// prompt, resource and resource template declarations (nil reads as
// empty) and taskSupport, the declared execution.taskSupport ("optional"
// or "required") by tool name; tools that declare neither are left out.
// The snapshot keeps the slices and the map: they must not change after.
func NewSnapshot(gen uint64, tools, prompts, resources, templates []byte, taskSupport map[string]string) *Snapshot {
	return &Snapshot{gen: gen, tools: tools, prompts: prompts, resources: resources, templates: templates, taskSupport: taskSupport}
}

// Generation numbers the snapshot: a new one for every swap.
func (s *Snapshot) Generation() uint64 { return s.gen }

// ToolsJSON, PromptsJSON, ResourcesJSON and TemplatesJSON are the
// pre-rendered JSON arrays of the declarations, in catalogue order.
func (s *Snapshot) ToolsJSON() []byte     { return orEmpty(s.tools) }
func (s *Snapshot) PromptsJSON() []byte   { return orEmpty(s.prompts) }
func (s *Snapshot) ResourcesJSON() []byte { return orEmpty(s.resources) }
func (s *Snapshot) TemplatesJSON() []byte { return orEmpty(s.templates) }

// TaskSupport is tool's declared execution.taskSupport: "optional" or
// "required", "" when it declares neither or is not in the snapshot.
func (s *Snapshot) TaskSupport(tool string) string { return s.taskSupport[tool] }

// Changed reports which lists differ from prev's (every list when prev is
// nil): what a swap tells listening clients.
func (s *Snapshot) Changed(prev *Snapshot) (tools, prompts, resources bool) {
	if prev == nil {
		return true, true, true
	}
	return !bytes.Equal(s.tools, prev.tools),
		!bytes.Equal(s.prompts, prev.prompts),
		!bytes.Equal(s.resources, prev.resources) || !bytes.Equal(s.templates, prev.templates)
}

func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte("[]")
	}
	return b
}
