// Package mcp is aiod's MCP dispatch: JSON-RPC 2.0 messages in, JSON-RPC
// messages out, over the plugin registry. It knows nothing of HTTP
// frameworks; host/server adapts it to Fiber.
//
// The tools/call path is written for speed: the envelope is decoded once,
// arguments stay raw bytes until the plugin reads them, and the plugin's
// result bytes are spliced into the response without re-encoding.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"

	"github.com/aiodhq/aiod/host/plugin"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// LatestLegacyVersion is answered to initialize when the client's version
// is not supported.
const LatestLegacyVersion = "2025-11-25"

// LegacyVersions are the initialize-era protocol versions served.
var LegacyVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Implementation names the server in initialize results.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Server dispatches MCP requests to the registry.
type Server struct {
	reg  *plugin.Registry
	info Implementation
	log  *slog.Logger
}

// Options configure a Server.
type Options struct {
	Info   Implementation
	Logger *slog.Logger
}

// NewServer returns a dispatcher over reg.
func NewServer(reg *plugin.Registry, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "aiod", Version: "dev"}
	}
	return &Server{reg: reg, info: opts.Info, log: opts.Logger}
}

// Request is a decoded JSON-RPC message from the client.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Result and Error are set on responses the client sends back.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// IsNotification reports whether the message has no id.
func (r *Request) IsNotification() bool { return len(r.ID) == 0 }

// Reply is what the transport sends back for one POSTed message.
type Reply struct {
	// Status is the HTTP status (200, or 202 for accepted notifications).
	Status int
	// Body is the JSON-RPC response, empty for 202.
	Body []byte
}

// Principal identifies who is calling: the tenant owning instances.
type Principal struct {
	Owner string
}

// Handle processes one POSTed body.
func (s *Server) Handle(ctx context.Context, p Principal, body []byte) Reply {
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) || firstByte(body) == '[' {
			return Reply{Status: 200, Body: errorResponse(nil, CodeInvalidRequest, "invalid request: expected a single JSON-RPC object")}
		}
		return Reply{Status: 200, Body: errorResponse(nil, CodeParseError, "parse error: "+err.Error())}
	}
	if req.JSONRPC != "2.0" || (req.Method == "" && req.Result == nil && req.Error == nil) {
		return Reply{Status: 200, Body: errorResponse(validID(req.ID), CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0" and "method" a non-empty string`)}
	}
	if !idOK(req.ID) {
		return Reply{Status: 200, Body: errorResponse(nil, CodeInvalidRequest, "invalid request: id must be a string or a number")}
	}
	if req.Method == "" { // a response from the client; nothing waits for it here
		return Reply{Status: 202}
	}
	if req.IsNotification() {
		return Reply{Status: 202}
	}
	return Reply{Status: 200, Body: s.dispatch(ctx, p, &req)}
}

func (s *Server) dispatch(ctx context.Context, p Principal, req *Request) []byte {
	switch req.Method {
	case "tools/call":
		return s.toolsCall(ctx, p, req)
	case "tools/list":
		return s.toolsList(req)
	case "initialize":
		return s.initialize(req)
	case "ping":
		return resultResponse(req.ID, []byte("{}"))
	}
	return errorResponse(req.ID, CodeMethodNotFound, "method not found: "+req.Method)
}

type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (s *Server) toolsCall(ctx context.Context, p Principal, req *Request) []byte {
	var cp callParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &cp); err != nil {
			return errorResponse(req.ID, CodeInvalidParams, "invalid params: "+err.Error())
		}
	}
	if cp.Name == nil || *cp.Name == "" {
		return errorResponse(req.ID, CodeInvalidParams, "missing tool name")
	}
	args := cp.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = nil
	} else if firstByte(args) != '{' {
		return errorResponse(req.ID, CodeInvalidParams, "invalid params: arguments must be an object")
	}
	res, err := s.reg.CallTool(ctx, plugin.CallRequest{Owner: p.Owner, Name: *cp.Name, Args: args})
	if err != nil {
		if errors.Is(err, plugin.ErrUnknownTool) {
			return errorResponse(req.ID, CodeInvalidParams, "unknown tool: "+*cp.Name)
		}
		return errorResponse(req.ID, CodeInternal, "internal error: "+err.Error())
	}
	return resultResponse(req.ID, res)
}

func (s *Server) toolsList(req *Request) []byte {
	cat := s.reg.Catalog()
	b := make([]byte, 0, len(cat.ToolsJSON())+64)
	b = append(b, `{"tools":`...)
	b = append(b, cat.ToolsJSON()...)
	b = append(b, '}')
	return resultResponse(req.ID, b)
}

func (s *Server) initialize(req *Request) []byte {
	var ip struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &ip); err != nil {
			return errorResponse(req.ID, CodeInvalidParams, "invalid params: "+err.Error())
		}
	}
	v := LatestLegacyVersion
	if slices.Contains(LegacyVersions, ip.ProtocolVersion) {
		v = ip.ProtocolVersion
	}
	res, _ := json.Marshal(map[string]any{
		"protocolVersion": v,
		"capabilities": map[string]any{
			"tools":   map[string]any{"listChanged": true},
			"logging": map[string]any{},
		},
		"serverInfo": s.info,
	})
	return resultResponse(req.ID, res)
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func idOK(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch c := firstByte(id); {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

func validID(id json.RawMessage) json.RawMessage {
	if idOK(id) {
		return id
	}
	return nil
}

// resultResponse splices a raw result into a response envelope.
func resultResponse(id json.RawMessage, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// errorResponse renders a JSON-RPC error (id null when unknown).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	b := make([]byte, 0, len(e)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, e...)
	return append(b, '}')
}
