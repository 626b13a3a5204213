package mcp

import (
	"bytes"
	"context"
	"encoding/json"
)

// The stateless 2026-07-28 era: every request carries its protocol
// version and client capabilities in params._meta, mirrored in headers;
// there are no sessions, and results carry resultType and the server's
// identity.

// removedMethods are legacy methods that do not exist in 2026-07-28.
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"tasks/result": true, "tasks/list": true, // tasks/get, update and cancel are the tasks extension's (tasks.go)
}

// modernPost validates and serves a stateless request, in the order of
// spec/protocol.md "Validation order". rc is the caller's room for its
// call.
func (s *Server) modernPost(ctx context.Context, ex *Exchange, req *message, p *params, hv string, rc *rpcCall) *Response {
	if e := envelopeOK(req); e != nil {
		return jsonError(400, validID(req.ID), e)
	}
	if req.Method == "" {
		return jsonError(400, req.ID, errf(CodeInvalidRequest, "invalid request: 2026-07-28 has no server→client requests to answer"))
	}
	id := req.ID
	m := p.Meta
	switch {
	case m == nil:
		return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: missing params._meta (the 2026-07-28 protocol needs "+metaProtocolVersion+" and "+metaClientCapabilities+")"))
	case m.ProtocolVersion == nil:
		return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: missing _meta."+metaProtocolVersion))
	case len(m.ClientCapabilities) == 0 || string(m.ClientCapabilities) == "null":
		return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: missing _meta."+metaClientCapabilities))
	}
	if hv != *m.ProtocolVersion {
		if hv == "" {
			return jsonError(400, id, errf(CodeHeaderMismatch, "Header mismatch: missing MCP-Protocol-Version header (body '"+*m.ProtocolVersion+"')"))
		}
		return jsonError(400, id, errf(CodeHeaderMismatch, "Header mismatch: MCP-Protocol-Version header value '"+hv+"' does not match body value '"+*m.ProtocolVersion+"'"))
	}
	if *m.ProtocolVersion != modernVersion {
		return jsonError(400, id, &Error{Code: CodeUnsupportedVersion,
			Message: "Unsupported protocol version " + *m.ProtocolVersion + "; this server supports " + modernVersion + " (and, through initialize, the legacy revisions)",
			Data:    map[string]any{"supported": []string{modernVersion}, "requested": *m.ProtocolVersion}})
	}
	var mirrored []paramHeader
	var taskSupport string // the tool's declared execution.taskSupport
	if req.Method == "tools/call" && p.Name != nil && s.cat != nil {
		snap := s.cat.Snapshot()
		mirrored = s.headers.forCatalog(snap).tools[*p.Name]
		taskSupport = snap.TaskSupport(*p.Name)
	}
	if e := checkStandardHeaders(ex.Header, req.Method, p, mirrored); e != nil {
		return jsonError(400, id, e)
	}
	*rc = rpcCall{s: s, era: Modern, ex: ex, req: req, p: p, version: modernVersion, logLevel: -1}
	if m.LogLevel != nil {
		if rc.logLevel = logLevelIndex(*m.LogLevel); rc.logLevel < 0 {
			return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: unknown log level '"+*m.LogLevel+"'"))
		}
	}
	if req.isNotification() {
		return &Response{Status: 202}
	}
	if removedMethods[req.Method] {
		return jsonError(404, id, errf(CodeMethodNotFound, "Method not found: "+req.Method+" does not exist in protocol "+modernVersion))
	}
	if string(m.ClientCapabilities) == "{}" {
		rc.caps = clientCaps{Raw: m.ClientCapabilities}
	} else {
		rc.caps = parseClientCaps(m.ClientCapabilities)
	}
	rc.progressToken = m.ProgressToken
	if req.Method == "subscriptions/listen" {
		return s.listen(rc)
	}
	if taskSupport != "" && s.taskCalls != nil {
		// the tasks extension (tasks.go) serves the calls of the tools
		// that declare it; a plain call never reaches it
		if r := s.taskCalls(ctx, ex, rc, taskSupport); r != nil {
			return r
		}
	}
	if (len(rc.progressToken) == 0 && rc.logLevel < 0) || !streams(ex, req.Method) { // the header last
		res, rerr := rc.dispatch(ctx)
		return rc.reply(res, rerr)
	}
	return s.async(ex, rc)
}

var (
	modernCapabilities       = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{},"extensions":{"` + extTasks + `":{}}}`)
	modernCapabilitiesSkills = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{},"extensions":{"` + extTasks + `":{},"` + extSkills + `":{"directoryRead":true}}}`)
)

func (rc *rpcCall) discover() ([]byte, *Error) {
	caps := modernCapabilities
	if rc.s.opts.Skills != nil {
		caps = modernCapabilitiesSkills
	}
	b, _ := json.Marshal(struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		ServerInfo        Implementation  `json:"serverInfo"`
		Instructions      string          `json:"instructions,omitempty"`
		TTL               int             `json:"ttlMs"`
		Scope             string          `json:"cacheScope"`
	}{SupportedVersions, caps, rc.s.info, rc.s.opts.Instructions, 0, "public"})
	return b, nil
}

// modernResult splices resultType (unless present) and _meta.serverInfo
// into a result object. A result with its own top-level _meta (a plugin's,
// or the tool's own _meta of an upstream's answer) gets the serverInfo as
// the first member of that object, unless it names a server itself; the
// rest of the result is not re-encoded.
func (s *Server) modernResult(res []byte, resultType string) []byte {
	hasType := bytes.Contains(res[:min(len(res), 64)], resultTypeKey)
	addMeta := !bytes.Contains(res, metaKey)
	metaAt := -1 // where the serverInfo goes inside the result's own _meta
	if !addMeta {
		if top, ok := scanTop(res); ok {
			hasType, addMeta, metaAt = top.hasType, !top.hasMeta, top.metaAt
		}
	}
	b := make([]byte, 0, len(res)+len(s.metaJSON)+48)
	b = append(b, '{')
	if !hasType {
		b = append(b, `"resultType":"`...)
		b = append(b, resultType...)
		b = append(b, `",`...)
	}
	if addMeta {
		b = append(b, `"_meta":`...)
		b = append(b, s.metaJSON...)
		b = append(b, ',')
	}
	rest := res[1:]
	if firstByte(rest) == '}' {
		b = b[:len(b)-1]
	}
	if metaAt < 0 {
		return append(b, rest...)
	}
	// Inside the result's _meta object, at metaAt (just after its '{').
	b = append(b, res[1:metaAt]...)
	b = append(b, s.metaJSON[1:len(s.metaJSON)-1]...) // the serverInfo member
	if firstByte(res[metaAt:]) != '}' {
		b = append(b, ',')
	}
	return append(b, res[metaAt:]...)
}

var (
	resultTypeKey = []byte(`"resultType"`)
	metaKey       = []byte(`"_meta"`)
)
