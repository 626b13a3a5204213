package mcp

import (
	"context"
	"encoding/json"
	"strings"
)

// This file is the Streamable HTTP side of the protocol layer: the
// request as the transport hands it over, the response it sends back,
// routing by HTTP method, and telling the eras apart (legacy.go,
// modern.go).

// Exchange is one HTTP request to the MCP endpoint as the transport hands
// it over.
type Exchange struct {
	Method    string // POST, GET, DELETE, ...
	Header    Headers
	Body      []byte
	Principal Principal
	// Context ends when the HTTP request does (transport shutdown); the
	// work behind an event stream is not bound to it. May be nil.
	Context context.Context
	// Hold, when set, hands the request's admission (its tenant's
	// concurrent_calls slot) over to work that outlives the response: a
	// tools/call that becomes a task calls it once, and the transport
	// then does not release the slot itself; the task calls the returned
	// release when its run ends. May be nil (nothing to hold).
	Hold Holder
	// Trace is the W3C trace context of the HTTP request's traceparent
	// and tracestate headers, copied when tracing is on (the middleware
	// reads them with Request.TraceHeader; the work may outlive the
	// request's headers).
	Trace [2]string
}

// Holder hands a request's admission over (Exchange.Hold): a transport's
// request state implements it, so that setting it allocates no closure.
type Holder interface {
	// Hold is called at most once; the work calls release when it ends.
	Hold() (release func())
}

// HoldFunc is a function as a Holder.
type HoldFunc func() (release func())

// Hold calls f.
func (f HoldFunc) Hold() func() { return f() }

// HeaderField is one response header.
type HeaderField struct{ Name, Value string }

// Response is what the transport sends back: a JSON body, or an event
// stream (Content-Type text/event-stream) the transport pumps with
// Stream.Pump after writing the status and headers.
type Response struct {
	Status int
	Header []HeaderField
	Body   []byte // application/json; empty for 202/204/405
	Stream *Stream
}

// Session header and protocol version header.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
)

// message is a decoded JSON-RPC message from the client.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Result and Error are set on responses the client sends back.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// isNotification reports whether the message has no id.
func (r *message) isNotification() bool { return len(r.ID) == 0 }

// Serve answers one HTTP request to the MCP endpoint, in whichever era it
// belongs to (spec/protocol.md "Eras").
func (s *Server) Serve(ctx context.Context, ex *Exchange) *Response {
	switch ex.Method {
	case "POST":
		return s.post(ctx, ex)
	case "GET":
		return s.getStream(ex)
	case "DELETE":
		return s.deleteSession(ex)
	}
	return &Response{Status: 405, Header: []HeaderField{{"Allow", "GET, POST, DELETE"}}}
}

func jsonError(status int, id json.RawMessage, e *Error) *Response {
	return &Response{Status: status, Body: e.render(id)}
}

// post decodes one POSTed message (or hands a batch on) and sends it to
// its era.
func (s *Server) post(ctx context.Context, ex *Exchange) *Response {
	hv := strings.TrimSpace(ex.Header.Get(headerProtocolVersion))
	modernHeader := hv != "" && isModernVersion(hv)
	accept := ex.Header.Get("Accept")
	if !acceptsJSON(accept) && !acceptsSSE(accept) {
		return jsonError(406, nil, errf(CodeInvalidRequest, "Not Acceptable: the client must accept application/json and text/event-stream"))
	}
	body := ex.Body
	fb := firstByte(body)
	if fb == '[' {
		return s.batch(ctx, ex, hv, modernHeader)
	}
	// One copy of the body: everything decoded aliases it, and it must
	// outlive the transport's buffer when the work goes on in the background.
	body = append([]byte(nil), body...)
	st := new(postState)
	req, p := &st.req, &st.p
	if err := decodeMessage(body, req, p); err != nil {
		status := 200
		if modernHeader {
			status = 400
		}
		if err == errType {
			return jsonError(status, nil, errf(CodeInvalidRequest, err.Error()))
		}
		return jsonError(status, nil, errf(CodeParseError, "parse error: the body is not valid JSON"))
	}
	modern := modernHeader || (p.Meta != nil && p.Meta.ProtocolVersion != nil)
	if modern {
		return s.modernPost(ctx, ex, req, p, hv, &st.rc)
	}
	return s.legacyPost(ctx, ex, req, p, hv, &st.rc)
}

// postState is one POSTed message decoded and the call that serves it, in
// one allocation (the call refers to the two others, and a task can keep
// it past the request). The body's copy is apart: inline, 512 bytes of
// room would be a third more bytes a request for the collector, whose
// marking costs more than the allocation it saves (RATIONALE, "The call
// path's allocations").
type postState struct {
	req message
	p   params
	rc  rpcCall
}

// streams reports whether a request may be answered on an event stream:
// the client accepts one (and said so), and the method runs plugin code.
func streams(ex *Exchange, method string) bool {
	a := ex.Header.Get("Accept")
	return a != "" && acceptsSSE(a) && pluginMethod(method)
}

// envelopeOK checks the JSON-RPC envelope of a single message.
func envelopeOK(req *message) *Error {
	if req.JSONRPC != "2.0" || (req.Method == "" && req.Result == nil && req.Error == nil) {
		return errf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0" and "method" a non-empty string`)
	}
	if !idOK(req.ID) || string(req.ID) == "null" {
		return errf(CodeInvalidRequest, "invalid request: id must be a string or a number")
	}
	return nil
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
