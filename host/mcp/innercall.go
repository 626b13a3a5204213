package mcp

import (
	"context"
	"encoding/json"
	"strconv"
)

// This file is the way in for calls that do not come from a client: a
// program that sandbox_execute_code runs calls its tenant's tools
// (spec/code-tools.md), and each call is served as a client's tools/call
// is, through the middleware (the tenant, the audit log, the metrics, the
// allow-list) and the catalogue.

// InnerCall is one tools/call made from inside the server.
type InnerCall struct {
	// Principal is the tenant the call is made as.
	Principal Principal
	// Name and Args are the tool and its arguments (a JSON object, or
	// nil).
	Name string
	Args json.RawMessage
	// SessionID is the legacy session of the request the call is made
	// for ("" outside one), for the audit log.
	SessionID string
	// Via names what made the call (the tool whose program did) and Step
	// which of its calls this is (1 the first).
	Via  string
	Step int
}

// CallTool serves c as a tools/call of the legacy era, without a session
// or a way back to a client (a tool that asks for input is told the
// client cannot be asked): the result object as JSON, or the JSON-RPC
// error the call is answered with (an unknown or hidden tool:
// UnknownTool's).
func (s *Server) CallTool(ctx context.Context, c InnerCall) (json.RawMessage, *Error) {
	raw, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}{c.Name, c.Args})
	if err != nil {
		return nil, errf(CodeInvalidParams, "invalid params: "+err.Error())
	}
	name := c.Name
	p := &params{Name: &name, Arguments: c.Args}
	req := &message{JSONRPC: "2.0", ID: json.RawMessage(strconv.Itoa(c.Step)), Method: "tools/call", Params: raw}
	rc := &rpcCall{s: s, era: Legacy, ex: &Exchange{Method: "POST", Principal: c.Principal}, req: req, p: p,
		version: latestLegacyVersion, logLevel: -1, via: c.Via, step: c.Step, sessionID: c.SessionID}
	return rc.dispatch(ctx)
}

type requestKey struct{}

// RequestFrom returns the request ctx is serving (nil outside one): what
// the catalogue, and the plugin code it runs, are called for.
func RequestFrom(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}
