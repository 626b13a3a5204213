package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/aiodhq/aiod/host/plugin"
)

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
}

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

// Session header and allowed methods.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "MCP-Protocol-Version"
)

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

func jsonError(status int, id json.RawMessage, e *rpcError) *Response {
	return &Response{Status: status, Body: e.render(id)}
}

func (s *Server) post(ctx context.Context, ex *Exchange) *Response {
	hv := strings.TrimSpace(ex.Header.Get(HeaderProtocolVersion))
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
	var req Request
	var p params
	if err := decodeMessage(body, &req, &p); err != nil {
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
		return s.modernPost(ctx, ex, &req, &p, hv)
	}
	return s.legacyPost(ctx, ex, &req, &p, hv)
}

// envelopeOK checks the JSON-RPC envelope of a single message.
func envelopeOK(req *Request) *rpcError {
	if req.JSONRPC != "2.0" || (req.Method == "" && req.Result == nil && req.Error == nil) {
		return errf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0" and "method" a non-empty string`)
	}
	if !idOK(req.ID) || string(req.ID) == "null" {
		return errf(CodeInvalidRequest, "invalid request: id must be a string or a number")
	}
	return nil
}

// ---- legacy era ----

func (s *Server) legacyPost(ctx context.Context, ex *Exchange, req *Request, p *params, hv string) *Response {
	if e := envelopeOK(req); e != nil {
		return jsonError(200, validID(req.ID), e)
	}
	if hv != "" && !isLegacyVersion(hv) {
		return jsonError(400, req.ID, &rpcError{Code: CodeInvalidRequest,
			Message: "Bad Request: unsupported MCP-Protocol-Version " + hv,
			Data:    map[string]any{"supported": SupportedVersions, "requested": hv}})
	}
	var sess *session
	if sid := ex.Header.Get(HeaderSessionID); sid != "" {
		sess = s.sessions.get(sid, ex.Principal.owner())
		if sess == nil {
			return jsonError(404, validID(req.ID), errf(CodeInvalidRequest, "session not found: it expired or was ended; initialize a new one"))
		}
	}
	if req.Method == "" { // the client's answer to a server→client request
		s.deliver(req, ex.Principal.owner())
		return &Response{Status: 202}
	}
	if req.IsNotification() {
		s.legacyNotification(sess, req, p)
		return &Response{Status: 202}
	}
	if req.Method == "initialize" {
		if sess != nil {
			return jsonError(400, req.ID, errf(CodeInvalidRequest, "initialize inside an existing session: omit Mcp-Session-Id to start a new one"))
		}
		return s.initialize(ex, req, p)
	}
	rc := &rpcCall{s: s, era: Legacy, ex: ex, req: req, p: p, sess: sess, logLevel: -1}
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
	streams := acceptsSSE(ex.Header.Get("Accept")) && ex.Header.Get("Accept") != "" &&
		(rc.progressToken != nil || rc.logLevel >= 0 || (sess != nil && sess.caps.any()))
	if !streams || !streamingMethod(req.Method) {
		res, rerr := rc.dispatch(ctx)
		return rc.reply(res, rerr)
	}
	return s.async(ex, rc)
}

// streamingMethod reports whether a method runs plugin code (and so may
// report progress, log, or ask the client for input).
func streamingMethod(m string) bool {
	switch m {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

func (s *Server) legacyNotification(sess *session, req *Request, p *params) {
	switch req.Method {
	case "notifications/cancelled":
		if sess != nil && len(p.RequestID) > 0 {
			sess.cancelRequest(p.RequestID)
		}
	}
}

func (s *Server) initialize(ex *Exchange, req *Request, p *params) *Response {
	v := LatestLegacyVersion
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
	return &Response{Status: 200, Header: []HeaderField{{HeaderSessionID, sess.id}}, Body: resultResponse(req.ID, res)}
}

var (
	legacyCapabilities = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{},"logging":{}}`)
	modernCapabilities = json.RawMessage(`{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"completions":{}}`)
)

// batch answers a JSON array: accepted only under 2025-03-26, whose
// transport requires it; each message is handled without streaming.
func (s *Server) batch(ctx context.Context, ex *Exchange, hv string, modernHeader bool) *Response {
	if modernHeader {
		return jsonError(400, nil, errf(CodeInvalidRequest, "invalid request: the body must be a single JSON-RPC message"))
	}
	v := hv
	var sess *session
	if sid := ex.Header.Get(HeaderSessionID); sid != "" {
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
		var req Request
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
		if req.IsNotification() {
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
	if isModernVersion(strings.TrimSpace(ex.Header.Get(HeaderProtocolVersion))) && ex.Header.Get(HeaderProtocolVersion) != "" {
		return &Response{Status: 405, Header: allow}
	}
	sid := ex.Header.Get(HeaderSessionID)
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
	return &Response{Status: 200, Header: []HeaderField{{HeaderSessionID, sess.id}}, Stream: &Stream{q: q}}
}

func (s *Server) deleteSession(ex *Exchange) *Response {
	if hv := strings.TrimSpace(ex.Header.Get(HeaderProtocolVersion)); hv != "" && isModernVersion(hv) {
		return &Response{Status: 405, Header: []HeaderField{{"Allow", "POST"}}}
	}
	sid := ex.Header.Get(HeaderSessionID)
	if sid == "" {
		return jsonError(400, nil, errf(CodeInvalidRequest, "Bad Request: DELETE needs the Mcp-Session-Id header"))
	}
	if s.sessions.get(sid, ex.Principal.owner()) == nil || !s.sessions.remove(sid) {
		return jsonError(404, nil, errf(CodeInvalidRequest, "session not found"))
	}
	return &Response{Status: 204}
}

// ---- 2026-07-28 ----

// removedMethods are legacy methods that do not exist in 2026-07-28.
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"tasks/get": true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true,
}

// modernPost validates and serves a stateless request, in the order of
// spec/protocol.md "Validation order".
func (s *Server) modernPost(ctx context.Context, ex *Exchange, req *Request, p *params, hv string) *Response {
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
		return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: missing params._meta (the 2026-07-28 protocol needs "+MetaProtocolVersion+" and "+MetaClientCapabilities+")"))
	case m.ProtocolVersion == nil:
		return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: missing _meta."+MetaProtocolVersion))
	case len(m.ClientCapabilities) == 0 || string(m.ClientCapabilities) == "null":
		return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: missing _meta."+MetaClientCapabilities))
	}
	if hv != *m.ProtocolVersion {
		if hv == "" {
			return jsonError(400, id, errf(CodeHeaderMismatch, "Header mismatch: missing MCP-Protocol-Version header (body '"+*m.ProtocolVersion+"')"))
		}
		return jsonError(400, id, errf(CodeHeaderMismatch, "Header mismatch: MCP-Protocol-Version header value '"+hv+"' does not match body value '"+*m.ProtocolVersion+"'"))
	}
	if *m.ProtocolVersion != ModernVersion {
		return jsonError(400, id, &rpcError{Code: CodeUnsupportedVersion,
			Message: "Unsupported protocol version " + *m.ProtocolVersion + "; this server supports " + ModernVersion + " (and, through initialize, the legacy revisions)",
			Data:    map[string]any{"supported": []string{ModernVersion}, "requested": *m.ProtocolVersion}})
	}
	var mirrored []paramHeader
	if req.Method == "tools/call" && p.Name != nil && s.reg != nil {
		mirrored = s.headers.forCatalog(s.reg.Catalog()).tools[*p.Name]
	}
	if e := checkStandardHeaders(ex.Header, req.Method, p, mirrored); e != nil {
		return jsonError(400, id, e)
	}
	rc := &rpcCall{s: s, era: Modern, ex: ex, req: req, p: p, version: ModernVersion, logLevel: -1}
	if m.LogLevel != nil {
		if rc.logLevel = logLevelIndex(*m.LogLevel); rc.logLevel < 0 {
			return jsonError(400, id, errf(CodeInvalidParams, "Invalid params: unknown log level '"+*m.LogLevel+"'"))
		}
	}
	if req.IsNotification() {
		return &Response{Status: 202}
	}
	if removedMethods[req.Method] {
		return jsonError(404, id, errf(CodeMethodNotFound, "Method not found: "+req.Method+" does not exist in protocol "+ModernVersion))
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
	streams := acceptsSSE(ex.Header.Get("Accept")) && ex.Header.Get("Accept") != "" &&
		(len(rc.progressToken) > 0 || rc.logLevel >= 0)
	if !streams || !streamingMethod(req.Method) {
		res, rerr := rc.dispatch(ctx)
		return rc.reply(res, rerr)
	}
	return s.async(ex, rc)
}

// ---- running a request ----

// async runs rc in the background and answers with its response as JSON,
// unless something (progress, a log message, a request to the client)
// comes first: then the answer is an event stream carrying all of it.
func (s *Server) async(ex *Exchange, rc *rpcCall) *Response {
	parent := s.base
	if rc.sess != nil {
		parent = rc.sess.ctx
	}
	ctx, cancel := context.WithCancel(parent)
	onGone := func() {}
	if rc.era == Modern {
		onGone = cancel // 2026-07-28: closing the stream cancels the request
	}
	q := newQueue(16, onGone)
	rc.q = q
	untrack := func() {}
	if rc.sess != nil {
		untrack = rc.sess.track(rc.req.ID, func() { rc.cancelled.Store(true); cancel() })
	}
	go func() {
		defer cancel()
		defer untrack()
		res, rerr := rc.dispatch(ctx)
		if rc.cancelled.Load() { // notifications/cancelled: no response is sent
			q.send(item{final: true})
			return
		}
		q.send(item{msg: rc.envelope(res, rerr), final: true, status: rc.status(rerr)})
	}()
	var done <-chan struct{}
	if ex.Context != nil {
		done = ex.Context.Done()
	}
	select {
	case it := <-q.ch:
		if it.final {
			q.leave()
			if it.msg == nil {
				return jsonError(200, rc.req.ID, errf(CodeRequestCancelled, "request cancelled"))
			}
			return &Response{Status: it.status, Body: it.msg}
		}
		return &Response{Status: 200, Stream: &Stream{first: &it, q: q}}
	case <-done:
		q.leave()
		cancel()
		return jsonError(503, rc.req.ID, errf(CodeInternal, "server shutting down"))
	}
}

// rpcCall is one request being served: its era, what it declared, and the
// channel back to the client.
type rpcCall struct {
	s             *Server
	era           Era
	ex            *Exchange
	req           *Request
	p             *params
	sess          *session
	version       string
	caps          clientCaps
	logLevel      int // -1: no log messages for this request
	progressToken json.RawMessage
	q             *queue // nil: nothing can be sent before the response
	cancelled     atomic.Bool
	mrtr          *mrtr // 2026-07-28 input rounds (input.go)
}

// reply renders the response to a request served synchronously.
func (rc *rpcCall) reply(res []byte, rerr *rpcError) *Response {
	return &Response{Status: rc.status(rerr), Body: rc.envelope(res, rerr)}
}

// status is the HTTP status of a response: legacy errors travel on 200
// (as aiod always has); 2026-07-28 errors carry their own status.
func (rc *rpcCall) status(rerr *rpcError) int {
	if rerr == nil || rc.era == Legacy {
		return 200
	}
	return rerr.httpStatus()
}

// envelope wraps a result (or error) in the JSON-RPC response. Modern
// results get resultType and the server's identity in _meta, spliced in
// without re-encoding the result.
func (rc *rpcCall) envelope(res []byte, rerr *rpcError) []byte {
	if rerr != nil {
		return rerr.render(rc.req.ID)
	}
	if rc.era == Modern {
		res = rc.s.modernResult(res, "complete")
	}
	return resultResponse(rc.req.ID, res)
}

// modernResult splices resultType (unless present) and _meta.serverInfo
// into a result object.
func (s *Server) modernResult(res []byte, resultType string) []byte {
	hasType := bytes.Contains(res[:min(len(res), 64)], resultTypeKey)
	b := make([]byte, 0, len(res)+len(s.metaJSON)+48)
	b = append(b, '{')
	if !hasType {
		b = append(b, `"resultType":"`...)
		b = append(b, resultType...)
		b = append(b, `",`...)
	}
	if !bytes.Contains(res, metaKey) {
		b = append(b, `"_meta":`...)
		b = append(b, s.metaJSON...)
		b = append(b, ',')
	}
	rest := res[1:]
	if firstByte(rest) == '}' {
		b = b[:len(b)-1]
	}
	return append(b, rest...)
}

var (
	resultTypeKey = []byte(`"resultType"`)
	metaKey       = []byte(`"_meta"`)
)

// dispatch runs the method.
func (rc *rpcCall) dispatch(ctx context.Context) ([]byte, *rpcError) {
	s := rc.s
	switch rc.req.Method {
	case "tools/call":
		return rc.toolsCall(ctx)
	case "tools/list":
		return rc.list("tools", s.reg.Catalog().ToolsJSON(), "public")
	case "prompts/list":
		return rc.list("prompts", s.reg.Catalog().PromptsJSON(), "public")
	case "resources/list":
		return rc.list("resources", s.reg.Catalog().ResourcesJSON(), "public")
	case "resources/templates/list":
		return rc.list("resourceTemplates", s.reg.Catalog().TemplatesJSON(), "public")
	case "prompts/get":
		return rc.promptsGet(ctx)
	case "resources/read":
		return rc.resourcesRead(ctx)
	case "completion/complete":
		return rc.complete(ctx)
	case "server/discover":
		return rc.discover()
	case "ping":
		return []byte("{}"), nil
	case "logging/setLevel":
		return rc.setLevel()
	case "resources/subscribe", "resources/unsubscribe":
		return rc.subscribe(rc.req.Method == "resources/subscribe")
	}
	return nil, errf(CodeMethodNotFound, "Method not found: "+rc.req.Method)
}

// list answers a list method: the whole catalogue in one page (cursors are
// accepted and ignored only when empty).
func (rc *rpcCall) list(key string, items []byte, scope string) ([]byte, *rpcError) {
	if rc.p.Cursor != nil && *rc.p.Cursor != "" {
		return nil, errf(CodeInvalidParams, "Invalid params: unknown cursor")
	}
	b := make([]byte, 0, len(items)+len(key)+64)
	b = append(b, `{"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = append(b, items...)
	if rc.era == Modern {
		b = append(b, `,"ttlMs":0,"cacheScope":"`...)
		b = append(b, scope...)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

func (rc *rpcCall) toolsCall(ctx context.Context) ([]byte, *rpcError) {
	p := rc.p
	if len(rc.req.Params) > 0 && firstByte(rc.req.Params) != '{' {
		return nil, errf(CodeInvalidParams, "invalid params: params must be an object")
	}
	if p.Name == nil || *p.Name == "" {
		return nil, errf(CodeInvalidParams, "missing tool name")
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = nil
	} else if firstByte(args) != '{' {
		return nil, errf(CodeInvalidParams, "invalid params: arguments must be an object")
	}
	if e := rc.startMRTR(*p.Name, args); e != nil {
		return nil, e
	}
	creq := plugin.CallRequest{Owner: rc.ex.Principal.Owner, Name: *p.Name, Args: args}
	rc.hook(&creq)
	res, err := rc.s.reg.CallTool(ctx, creq)
	if err != nil {
		if errors.Is(err, plugin.ErrUnknownTool) {
			return nil, errf(CodeInvalidParams, "unknown tool: "+*p.Name)
		}
		return rc.callError(err)
	}
	return res, nil
}

// hook connects a plugin call to the client: notifications when anything
// can be sent before the response, and the client for input, facts and
// server notifications.
func (rc *rpcCall) hook(creq *plugin.CallRequest) {
	if rc.q != nil {
		creq.Notify = rc.notify
	}
	creq.Client = rc
}

// callError maps the non-result endings of a plugin call.
func (rc *rpcCall) callError(err error) ([]byte, *rpcError) {
	var pe *plugin.RPCError
	switch {
	case errors.Is(err, plugin.ErrInputRequired):
		if rc.mrtr != nil {
			return rc.inputRequired()
		}
		return nil, errf(CodeInternal, "internal error: the plugin asked for input that cannot be requested here")
	case errors.As(err, &pe):
		var e struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal(pe.Body, &e) != nil || e.Code == 0 {
			return nil, errf(CodeInternal, "internal error: invalid plugin error")
		}
		re := &rpcError{Code: e.Code, Message: e.Message}
		if len(e.Data) > 0 {
			re.Data = e.Data
		}
		return nil, re
	case errors.Is(err, context.Canceled):
		return nil, errf(CodeRequestCancelled, "request cancelled")
	}
	return nil, errf(CodeInternal, "internal error: "+err.Error())
}

func (rc *rpcCall) discover() ([]byte, *rpcError) {
	b, _ := json.Marshal(struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		ServerInfo        Implementation  `json:"serverInfo"`
		Instructions      string          `json:"instructions,omitempty"`
		TTL               int             `json:"ttlMs"`
		Scope             string          `json:"cacheScope"`
	}{SupportedVersions, modernCapabilities, rc.s.info, rc.s.opts.Instructions, 0, "public"})
	return b, nil
}

func (rc *rpcCall) setLevel() ([]byte, *rpcError) {
	if rc.p.Level == nil || logLevelIndex(*rc.p.Level) < 0 {
		return nil, errf(CodeInvalidParams, "Invalid params: level must be one of "+strings.Join(logLevelNames, ", "))
	}
	if rc.sess != nil {
		rc.sess.mu.Lock()
		rc.sess.logLevel = logLevelIndex(*rc.p.Level)
		rc.sess.mu.Unlock()
	}
	return []byte("{}"), nil
}

func (rc *rpcCall) subscribe(on bool) ([]byte, *rpcError) {
	if rc.p.URI == nil || *rc.p.URI == "" {
		return nil, errf(CodeInvalidParams, "Invalid params: uri is required")
	}
	if rc.sess != nil {
		rc.sess.mu.Lock()
		if rc.sess.subs == nil {
			rc.sess.subs = map[string]bool{}
		}
		if on {
			rc.sess.subs[*rc.p.URI] = true
		} else {
			delete(rc.sess.subs, *rc.p.URI)
		}
		rc.sess.mu.Unlock()
	}
	return []byte("{}"), nil
}
