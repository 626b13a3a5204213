// Package upstream is the guest side of the aiod:upstream host functions
// (spec/abi/v1/upstream.md): listing and calling the tools of the upstream
// MCP servers the host aggregates (registered with --mcp-servers /
// EXTRA_MCP_SERVERS). The plugin's manifest names the servers it wants
// (`{"upstream":{"servers":["peer"]}}`); the operator's policy decides
// which it gets; a call to any other is ErrDenied.
//
//	tools, reachable, err := upstream.List("peer")
//	res, err := upstream.Call("peer", "echo", map[string]any{"text": "hi"})
//	// res.Text() == "hi"; return res.ToolResult() to answer with it
//
// Tool names are the server's own (no prefix). A server that is down, or
// an answer that could not be used, is a Result with IsError set whose text
// names the server, as an MCP client would see it; a JSON-RPC error of the
// server is an *Error with code "invalid" and its RPCCode.
//
// Built natively (not wasip1), calls go to the fake host installed by the
// SDK's test support (sdktest.WithHandler).
package upstream

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/aiodhq/aiod/sdk/internal/guest"
	"strings"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Module is the import module of the host functions.
const Module = abi.ModuleUpstream

// Errors matched by errors.Is against an *Error's code.
var (
	ErrDenied      = errors.New("denied")      // the server is not granted
	ErrInvalid     = errors.New("invalid")     // malformed request, or the server answered a JSON-RPC error
	ErrNotFound    = errors.New("not_found")   // no server of that name is registered
	ErrTimeout     = errors.New("timeout")     // the call's deadline passed
	ErrUnavailable = errors.New("unavailable") // the host could not reach it
)

// Error is a failed host call.
type Error struct {
	// Code is the host function error code: "denied", "invalid",
	// "not_found", "timeout", "unavailable", "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
	// Server is the server the request named.
	Server string `json:"server,omitempty"`
	// RPCCode and RPCData are the server's JSON-RPC error (code
	// "invalid"), when it answered one.
	RPCCode int64           `json:"rpc_code,omitempty"`
	RPCData json.RawMessage `json:"rpc_data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is matches the Err* value of e's code.
func (e *Error) Is(target error) bool {
	return guest.CodeIs(e.Code, target, ErrDenied, ErrInvalid, ErrNotFound, ErrTimeout, ErrUnavailable)
}

// do calls name and returns its raw response, or an *Error.
func do(name string, req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, &Error{Code: "invalid", Message: err.Error()}
	}
	out, code := call(name, b)
	if code != 0 {
		e := &Error{}
		if json.Unmarshal(out, e) != nil || e.Message == "" {
			e.Message = string(out)
		}
		if e.Code == "" {
			e.Code = abi.CodeName(code)
		}
		return nil, e
	}
	return out, nil
}

// Tool is one tool of an upstream server, as it listed it.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Raw is the tool object as the server wrote it.
	Raw json.RawMessage `json:"-"`
}

// List returns the tools of server, in its order, and whether it answered
// (a server that is down lists nothing and is not an error).
func List(server string) (tools []Tool, reachable bool, err error) {
	out, err := do("list", abi.UpstreamListRequest{Server: server})
	if err != nil {
		return nil, false, err
	}
	var res abi.UpstreamListResponse
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, false, &Error{Code: "internal", Message: "bad response from the host: " + err.Error(), Server: server}
	}
	tools = make([]Tool, 0, len(res.Tools))
	for _, raw := range res.Tools {
		var t Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, false, &Error{Code: "internal", Message: "bad tool from the host: " + err.Error(), Server: server}
		}
		t.Raw = raw
		tools = append(tools, t)
	}
	return tools, res.Reachable, nil
}

// Content is one content block of a Result.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"` // base64 (image, audio)
	MimeType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`  // resource_link
	Name     string `json:"name,omitempty"` // resource_link
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType,omitempty"`
		Text     string `json:"text,omitempty"`
		Blob     string `json:"blob,omitempty"` // base64
	} `json:"resource,omitempty"`
	// Raw is the block as the server wrote it.
	Raw json.RawMessage `json:"-"`
}

// Result is a server's CallToolResult.
type Result struct {
	Content           []Content       `json:"-"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Raw is the result as the server wrote it (with _meta and anything
	// else it sent).
	Raw json.RawMessage `json:"-"`
}

// Text is the result's text blocks, joined by newlines.
func (r *Result) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolResult is r as this plugin's own tool result: the same content
// blocks (text, image, audio, embedded resources, resource links; a block
// of another type becomes a text block holding its JSON), the
// structuredContent and isError. _meta and content annotations are not
// carried over (the SDK's Result has no place for them).
func (r *Result) ToolResult() *sdk.Result {
	out := &sdk.Result{IsError: r.IsError}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		out.Structured = r.StructuredContent
	}
	for _, c := range r.Content {
		out.Content = append(out.Content, c.toSDK())
	}
	if out.Content == nil {
		out.Content = []sdk.Content{}
	}
	return out
}

func (c *Content) toSDK() sdk.Content {
	switch c.Type {
	case "text":
		return sdk.Text(c.Text)
	case "image", "audio":
		if b, err := base64.StdEncoding.DecodeString(c.Data); err == nil {
			if c.Type == "image" {
				return sdk.Image(b, c.MimeType)
			}
			return sdk.Audio(b, c.MimeType)
		}
	case "resource_link":
		return sdk.ResourceLink(c.URI, c.Name, c.MimeType)
	case "resource":
		if r := c.Resource; r != nil {
			if r.Blob != "" {
				if b, err := base64.StdEncoding.DecodeString(r.Blob); err == nil {
					return sdk.BlobResource(r.URI, r.MimeType, b)
				}
			} else {
				return sdk.TextResource(r.URI, r.MimeType, r.Text)
			}
		}
	}
	return sdk.Text(string(c.Raw))
}

// Call calls tool (the server's own name) on server with args (any value
// that encodes to a JSON object, a json.RawMessage, or nil for none).
func Call(server, tool string, args any) (*Result, error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
	case json.RawMessage:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, &Error{Code: "invalid", Message: "arguments: " + err.Error(), Server: server}
		}
		raw = b
	}
	out, err := CallRaw(server, tool, raw)
	if err != nil {
		return nil, err
	}
	var res Result
	var blocks struct {
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(out, &res) != nil || json.Unmarshal(out, &blocks) != nil {
		return nil, &Error{Code: "internal", Message: "upstream MCP server answered a result that is not a CallToolResult", Server: server}
	}
	for _, b := range blocks.Content {
		var c Content
		_ = json.Unmarshal(b, &c) // a block of an unknown shape keeps its Raw
		c.Raw = b
		res.Content = append(res.Content, c)
	}
	res.Raw = out
	return &res, nil
}

// CallRaw is Call with the arguments object as JSON, returning the
// server's CallToolResult bytes as it wrote them.
func CallRaw(server, tool string, args json.RawMessage) (json.RawMessage, error) {
	return do("call", abi.UpstreamCallRequest{Server: server, Tool: tool, Arguments: args})
}
