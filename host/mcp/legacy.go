package mcp

import (
	"context"
	"encoding/json"
	"strings"
)

// The legacy era (2024-11-05 through 2025-11-25): the initialize
// handshake, optional Mcp-Session-Id sessions with their GET stream and
// DELETE, sessionless POSTs (what plain curl sends), and 2025-03-26
// batches.

// legacyPost serves a single legacy message; rc is the caller's room for
// its call.
func (s *Server) legacyPost(ctx context.Context, ex *Exchange, req *message, p *params, hv string, rc *rpcCall) *Response {
	if e := envelopeOK(req); e != nil {
		return jsonError(200, validID(req.ID), e)
	}
	if hv != "" && !isLegacyVersion(hv) {
		return jsonError(400, req.ID, &Error{Code: CodeInvalidRequest,
			Message: "Bad Request: unsupported MCP-Protocol-Version " + hv,
			Data:    map[string]any{"supported": SupportedVersions, "requested": hv}})
	}
	var sess *session
	if sid := ex.Header.Get(headerSessionID); sid != "" {
		sess = s.sessions.get(sid, ex.Principal.owner())
		if sess == nil {
			return jsonError(404, validID(req.ID), errf(CodeInvalidRequest, "session not found: it expired or was ended; initialize a new one"))
		}
	}
	if req.Method == "" { // the client's answer to a server→client request
		s.deliver(req, ex.Principal.owner())
		return &Response{Status: 202}
	}
	if req.isNotification() {
		s.legacyNotification(sess, req, p)
		return &Response{Status: 202}
	}
	if req.Method == "initialize" {
		if sess != nil {
			return jsonError(400, req.ID, errf(CodeInvalidRequest, "initialize inside an existing session: omit Mcp-Session-Id to start a new one"))
		}
		return s.initialize(ex, req, p)
	}
	*rc = rpcCall{s: s, era: Legacy, ex: ex, req: req, p: p, sess: sess, logLevel: -1}
	rc.version = hv
	if sess != nil {
		rc.caps = sess.caps
		rc.logLevel = sess.level()
		if rc.version == "" {
			rc.version = sess.version
		}
	}
	if rc.version == "" {
		rc.version = "2025-03-26"
	}
	if p.Meta != nil && len(p.Meta.ProgressToken) > 0 {
		rc.progressToken = p.Meta.ProgressToken
	}
	// A request streams only when it may produce something before its
	// response: progress, logs, or input requests to the client.
	// (What it could produce is asked first: it reads no header.)
	if (rc.progressToken == nil && rc.logLevel < 0 && (sess == nil || !sess.caps.any())) || !streams(ex, req.Method) {
		res, rerr := rc.dispatch(ctx)
		return rc.reply(res, rerr)
	}
	return s.async(ex, rc)
}

func (s *Server) legacyNotification(sess *session, req *message, p *params) {
	switch req.Method {
	case "notifications/cancelled":
		if sess != nil && len(p.RequestID) > 0 {
			sess.cancelRequest(p.RequestID)
		}
	}
}

func (s *Server) initialize(ex *Exchange, req *message, p *params) *Response {
	v := latestLegacyVersion
	if isLegacyVersion(p.ProtocolVersion) {
		v = p.ProtocolVersion
	}
	caps := parseClientCaps(p.Capabilities)
	sess, err := s.sessions.create(ex.Principal.owner(), v, caps, p.ClientInfo)
	if err != nil {
		return jsonError(503, req.ID, errf(CodeInternal, err.Error()))
	}
	res, _ := json.Marshal(struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      Implementation  `json:"serverInfo"`
		Instructions    string          `json:"instructions,omitempty"`
	}{v, legacyCapabilities, s.info, s.opts.Instructions})
	return &Response{Status: 200, Header: []HeaderField{{headerSessionID, sess.id}}, Body: resultResponse(req.ID, res)}
}

var legacyCapabilities = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{},"logging":{}}`)

// batch answers a JSON array: accepted only under 2025-03-26, whose
// transport requires it; each message is handled without streaming.
func (s *Server) batch(ctx context.Context, ex *Exchange, hv string, modernHeader bool) *Response {
	if modernHeader {
		return jsonError(400, nil, errf(CodeInvalidRequest, "invalid request: the body must be a single JSON-RPC message"))
	}
	v := hv
	var sess *session
	if sid := ex.Header.Get(headerSessionID); sid != "" {
		if sess = s.sessions.get(sid, ex.Principal.owner()); sess == nil {
			return jsonError(404, nil, errf(CodeInvalidRequest, "session not found"))
		}
		if v == "" {
			v = sess.version
		}
	}
	if v == "" {
		v = "2025-03-26"
	}
	if v != "2025-03-26" {
		return jsonError(400, nil, errf(CodeInvalidRequest, "invalid request: JSON-RPC batches are only accepted under protocol 2025-03-26"))
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(ex.Body, &msgs); err != nil {
		return jsonError(200, nil, errf(CodeParseError, "parse error: "+err.Error()))
	}
	if len(msgs) == 0 {
		return jsonError(200, nil, errf(CodeInvalidRequest, "invalid request: empty batch"))
	}
	out := []byte{'['}
	for _, m := range msgs {
		var req message
		if err := json.Unmarshal(m, &req); err != nil {
			out = appendElem(out, errf(CodeInvalidRequest, "invalid request").render(nil))
			continue
		}
		if e := envelopeOK(&req); e != nil {
			out = appendElem(out, e.render(validID(req.ID)))
			continue
		}
		if req.Method == "initialize" {
			out = appendElem(out, errf(CodeInvalidRequest, "initialize must not be part of a batch").render(req.ID))
			continue
		}
		var p params
		if len(req.Params) > 0 {
			_ = json.Unmarshal(req.Params, &p)
		}
		if req.Method == "" {
			s.deliver(&req, ex.Principal.owner())
			continue
		}
		if req.isNotification() {
			s.legacyNotification(sess, &req, &p)
			continue
		}
		rc := &rpcCall{s: s, era: Legacy, ex: ex, req: &req, p: &p, sess: sess, logLevel: -1, version: v}
		if sess != nil {
			rc.caps = sess.caps
		}
		res, rerr := rc.dispatch(ctx)
		out = appendElem(out, rc.envelope(res, rerr))
	}
	if len(out) == 1 {
		return &Response{Status: 202}
	}
	return &Response{Status: 200, Body: append(out, ']')}
}

func appendElem(b, elem []byte) []byte {
	if len(b) > 1 {
		b = append(b, ',')
	}
	return append(b, elem...)
}

// getStream opens a legacy session's standalone SSE stream.
func (s *Server) getStream(ex *Exchange) *Response {
	allow := []HeaderField{{"Allow", "POST"}}
	if isModernVersion(strings.TrimSpace(ex.Header.Get(headerProtocolVersion))) && ex.Header.Get(headerProtocolVersion) != "" {
		return &Response{Status: 405, Header: allow}
	}
	sid := ex.Header.Get(headerSessionID)
	if sid == "" {
		return &Response{Status: 405, Header: allow}
	}
	sess := s.sessions.get(sid, ex.Principal.owner())
	if sess == nil {
		return jsonError(404, nil, errf(CodeInvalidRequest, "session not found"))
	}
	if a := ex.Header.Get("Accept"); a != "" && !acceptsSSE(a) {
		return jsonError(406, nil, errf(CodeInvalidRequest, "Not Acceptable: GET needs Accept: text/event-stream"))
	}
	sess.mu.Lock()
	if sess.get != nil && !sess.get.isGone() {
		sess.mu.Unlock()
		return jsonError(409, nil, errf(CodeInvalidRequest, "Conflict: this session already has a GET stream open"))
	}
	var q *queue
	q = newQueue(64, func() {
		sess.mu.Lock()
		if sess.get == q {
			sess.get = nil
		}
		sess.mu.Unlock()
		sess.busy.Add(-1)
		sess.touch()
	})
	sess.get = q
	sess.busy.Add(1)
	sess.mu.Unlock()
	return &Response{Status: 200, Header: []HeaderField{{headerSessionID, sess.id}}, Stream: &Stream{q: q}}
}

func (s *Server) deleteSession(ex *Exchange) *Response {
	if hv := strings.TrimSpace(ex.Header.Get(headerProtocolVersion)); hv != "" && isModernVersion(hv) {
		return &Response{Status: 405, Header: []HeaderField{{"Allow", "POST"}}}
	}
	sid := ex.Header.Get(headerSessionID)
	if sid == "" {
		return jsonError(400, nil, errf(CodeInvalidRequest, "Bad Request: DELETE needs the Mcp-Session-Id header"))
	}
	if s.sessions.get(sid, ex.Principal.owner()) == nil || !s.sessions.remove(sid) {
		return jsonError(404, nil, errf(CodeInvalidRequest, "session not found"))
	}
	return &Response{Status: 204}
}
