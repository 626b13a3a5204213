package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
)

// This file is the call path every request takes once its transport and
// era (transport.go, legacy.go, modern.go) have validated it: a method
// table, and in front of it the one middleware seam.

// Handler serves one request: the method's result object as JSON, or an
// error. An *Error is answered as that JSON-RPC error; context.Canceled as
// "request cancelled"; any other error as an internal error.
type Handler func(ctx context.Context, req *Request) (json.RawMessage, error)

// Middleware wraps a Handler: it may refuse a request (return an error
// without calling next), observe it, or change its result.
type Middleware func(next Handler) Handler

// Request is one client request as a Handler sees it. Every method of the
// table passes through the middleware: tools/*, prompts/*, resources/*,
// completion/complete, server/discover, ping, logging/setLevel, and
// unknown methods (answered "Method not found"). What the transport
// answers itself does not: initialize (it opens a session),
// subscriptions/listen (it opens a stream), notifications, and requests
// refused before dispatch (malformed, wrong version, header mismatch).
//
// Handlers and middleware must not change a Request; the method reads
// the decoded message, not these fields.
type Request struct {
	// Method is the JSON-RPC method.
	Method string
	// Name is what the method addresses: the tool or prompt name
	// (tools/call, prompts/get) or the resource URI (resources/read,
	// resources/subscribe, resources/unsubscribe); "" for other methods.
	Name string
	// ID is the JSON-RPC id, raw.
	ID json.RawMessage
	// Params is the params object, raw (nil when absent).
	Params json.RawMessage
	// Principal is who is calling.
	Principal Principal
	// Era and Version are the protocol family and revision the request
	// is served under.
	Era     Era
	Version string
	// SessionID is the legacy Mcp-Session-Id, "" outside a session.
	SessionID string
	// Via and Step are set on a call made by a program (Server.CallTool):
	// the tool whose program made it, and which of its calls it is.
	Via  string
	Step int

	rc *rpcCall
}

// Owner is the principal's owner id: the default owner when none is set.
func (r *Request) Owner() string { return r.Principal.owner() }

// WithValue is context.WithValue(ctx, key, val) for what serves r (its
// middleware), kept in r's call instead of a new allocation while the
// call has room (two values; beyond, and for a Request made elsewhere,
// context.WithValue's own). key must be comparable, as for
// context.WithValue.
func (r *Request) WithValue(ctx context.Context, key, val any) context.Context {
	if rc := r.rc; rc != nil && rc.nctx < len(rc.ctxs) {
		c := &rc.ctxs[rc.nctx]
		rc.nctx++
		*c = valueCtx{Context: ctx, key: key, val: val}
		return c
	}
	return context.WithValue(ctx, key, val)
}

// valueCtx is a context carrying one value (Request.WithValue).
type valueCtx struct {
	context.Context
	key, val any
}

func (c *valueCtx) Value(key any) any {
	if key == c.key {
		return c.val
	}
	return c.Context.Value(key)
}

// TraceHeader is the traceparent or tracestate header the request came
// with (Exchange.Trace), "" for another name or when there is none.
func (r *Request) TraceHeader(name string) string {
	if r.rc == nil || r.rc.ex == nil {
		return ""
	}
	switch name {
	case "traceparent":
		return r.rc.ex.Trace[0]
	case "tracestate":
		return r.rc.ex.Trace[1]
	}
	return ""
}

// chain applies mw to h, the first middleware outermost (it sees the
// request first and the outcome last).
func chain(h Handler, mw []Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// method is one entry of the method table.
type method struct {
	serve func(rc *rpcCall, ctx context.Context) ([]byte, *Error)
	// plugin: the method runs plugin code, so it may report progress, log,
	// or ask the client for input, and can be answered on an event stream.
	plugin bool
}

// methods is the base method table: every request method served through
// dispatch. A Server serves it (Server.methods), or a copy of it with an
// extension's methods added (the tasks extension, tasks.go).
var methods map[string]method

func init() {
	methods = map[string]method{
		"tools/call":          {serve: (*rpcCall).toolsCall, plugin: true},
		"prompts/get":         {serve: (*rpcCall).promptsGet, plugin: true},
		"resources/read":      {serve: (*rpcCall).resourcesRead, plugin: true},
		"completion/complete": {serve: (*rpcCall).complete, plugin: true},
		"tools/list": {serve: func(rc *rpcCall, ctx context.Context) ([]byte, *Error) {
			if l, ok := rc.s.cat.(ToolLister); ok {
				return rc.list("tools", l.ListTools(ctx), "public")
			}
			return rc.list("tools", rc.s.cat.Snapshot().ToolsJSON(), "public")
		}},
		"prompts/list": {serve: func(rc *rpcCall, ctx context.Context) ([]byte, *Error) {
			return rc.list("prompts", rc.s.listOf(ctx, "prompts", rc.s.cat.Snapshot().PromptsJSON), "public")
		}},
		"resources/list": {serve: func(rc *rpcCall, ctx context.Context) ([]byte, *Error) {
			return rc.list("resources", rc.s.withSkillResources(rc.s.listOf(ctx, "resources", rc.s.cat.Snapshot().ResourcesJSON)), "public")
		}},
		"skills/list":              {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.skillsList() }},
		"skills/get":               {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.skillsGet() }},
		"resources/directory/read": {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.directoryRead() }},
		"resources/templates/list": {serve: func(rc *rpcCall, ctx context.Context) ([]byte, *Error) {
			return rc.list("resourceTemplates", rc.s.listOf(ctx, "resourceTemplates", rc.s.cat.Snapshot().TemplatesJSON), "public")
		}},
		"server/discover":  {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.discover() }},
		"ping":             {serve: func(*rpcCall, context.Context) ([]byte, *Error) { return []byte("{}"), nil }},
		"logging/setLevel": {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.setLevel() }},
		"resources/subscribe": {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) {
			return rc.subscribe(true)
		}},
		"resources/unsubscribe": {serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) {
			return rc.subscribe(false)
		}},
	}
}

// listOf is the catalogue's list for key: its Lister's when it has one,
// else the snapshot's.
func (s *Server) listOf(ctx context.Context, key string, snap func() []byte) []byte {
	if l, ok := s.cat.(Lister); ok {
		if b, ok := l.List(ctx, key); ok {
			return b
		}
	}
	return snap()
}

// pluginMethod reports whether m runs plugin code (and so may stream).
func pluginMethod(m string) bool { return methods[m].plugin }

// route is the innermost Handler: the method table.
func route(ctx context.Context, req *Request) (json.RawMessage, error) {
	m, ok := req.rc.s.methods[req.Method]
	if !ok {
		return nil, errf(CodeMethodNotFound, "Method not found: "+req.Method)
	}
	res, e := m.serve(req.rc, req.WithValue(ctx, requestKey{}, req))
	if e != nil {
		return nil, e
	}
	return res, nil
}

// dispatch runs the request through the middleware and the method table.
func (rc *rpcCall) dispatch(ctx context.Context) ([]byte, *Error) {
	r := &rc.r
	*r = Request{Method: rc.req.Method, ID: rc.req.ID, Params: rc.req.Params, Principal: rc.ex.Principal,
		Era: rc.era, Version: rc.version, rc: rc}
	switch r.Method {
	case "tools/call", "prompts/get":
		if rc.p.Name != nil {
			r.Name = *rc.p.Name
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe", "resources/directory/read", "skills/get":
		if rc.p.URI != nil {
			r.Name = *rc.p.URI
		}
	}
	if rc.sess != nil {
		r.SessionID = rc.sess.id
	}
	if rc.via != "" {
		r.SessionID, r.Via, r.Step = rc.sessionID, rc.via, rc.step
	}
	res, err := rc.s.handler(ctx, r)
	if err != nil {
		return nil, asError(err)
	}
	return res, nil
}

// asError is the JSON-RPC error a Handler's error is answered with.
func asError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.Canceled):
		return errf(CodeRequestCancelled, "request cancelled")
	}
	return errf(CodeInternal, "internal error: "+err.Error())
}

// UnknownTool is the error a tools/call of a tool not in the catalogue is
// answered with; a middleware that hides a tool refuses its call with it,
// so a hidden tool and a missing one look alike.
func UnknownTool(name string) *Error { return errf(CodeInvalidParams, "unknown tool: "+name) }

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
	req           *message
	p             *params
	sess          *session
	version       string
	caps          clientCaps
	logLevel      int // -1: no log messages for this request
	progressToken json.RawMessage
	q             *queue // nil: nothing can be sent before the response
	cancelled     atomic.Bool
	mrtr          *mrtr // 2026-07-28 input rounds (input.go)
	// onNotify and onInput, when set, take the call's notifications and
	// its input requests instead of the request's own channel back: an
	// extension that serves the call its own way sets them (the tasks
	// extension, for a call that became a task).
	onNotify func(kind string, params any)
	onInput  func(ctx context.Context, keys []string, reqs map[string]inputRequest) ([]byte, error)
	r        Request // what the handlers see (dispatch)
	// via, step and sessionID: a call made by a program (innercall.go)
	via       string
	step      int
	sessionID string
	resp      Response // reply's
	// ctxs: the contexts of Request.WithValue, nctx of them used
	ctxs [2]valueCtx
	nctx int
}

// reply renders the response to a request served synchronously (once per
// call: the response is the call's own).
func (rc *rpcCall) reply(res []byte, rerr *Error) *Response {
	rc.resp = Response{Status: rc.status(rerr), Body: rc.envelope(res, rerr)}
	return &rc.resp
}

// status is the HTTP status of a response: legacy errors travel on 200
// (as aiod always has); 2026-07-28 errors carry their own status.
func (rc *rpcCall) status(rerr *Error) int {
	if rerr == nil || rc.era == Legacy {
		return 200
	}
	return rerr.httpStatus()
}

// envelope wraps a result (or error) in the JSON-RPC response. Modern
// results get resultType and the server's identity in _meta, spliced in
// without re-encoding the result.
func (rc *rpcCall) envelope(res []byte, rerr *Error) []byte {
	if rerr != nil {
		return rerr.render(rc.req.ID)
	}
	if rc.era == Modern {
		res = rc.s.modernResult(res, "complete")
	}
	return resultResponse(rc.req.ID, res)
}

// ---- the methods ----

// list answers a list method: the whole catalogue in one page (cursors are
// accepted and ignored only when empty).
func (rc *rpcCall) list(key string, items []byte, scope string) ([]byte, *Error) {
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

func (rc *rpcCall) toolsCall(ctx context.Context) ([]byte, *Error) {
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
	creq := CallRequest{Owner: rc.ex.Principal.Owner, Name: *p.Name, Args: args}
	rc.hook(&creq)
	res, err := rc.s.cat.CallTool(ctx, creq)
	if err != nil {
		if errors.Is(err, ErrUnknownTool) {
			return nil, UnknownTool(*p.Name)
		}
		return rc.callError(err)
	}
	return res, nil
}

// hook connects a plugin call to the client: notifications when anything
// can be sent before the response, and the client for input, facts and
// server notifications.
func (rc *rpcCall) hook(creq *CallRequest) {
	if rc.q != nil {
		creq.Notify = rc.notify
	}
	if rc.onNotify != nil {
		creq.Notify = rc.onNotify
	}
	creq.Client = rc
	creq.Era = rc.era.String()
	if rc.sess != nil {
		creq.Session = rc.sess.id
	}
}

// callError maps the non-result endings of a plugin call.
func (rc *rpcCall) callError(err error) ([]byte, *Error) {
	var pe *RPCError
	switch {
	case errors.Is(err, ErrInputRequired):
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
		re := &Error{Code: e.Code, Message: e.Message}
		if len(e.Data) > 0 {
			re.Data = e.Data
		}
		return nil, re
	case errors.Is(err, context.Canceled):
		return nil, errf(CodeRequestCancelled, "request cancelled")
	}
	return nil, errf(CodeInternal, "internal error: "+err.Error())
}

func (rc *rpcCall) setLevel() ([]byte, *Error) {
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

func (rc *rpcCall) subscribe(on bool) ([]byte, *Error) {
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
