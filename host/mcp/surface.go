package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
)

// prompts/get, resources/read, completion/complete, subscriptions/listen
// and the notifications that reach listening clients.

func (rc *rpcCall) promptsGet(ctx context.Context) ([]byte, *Error) {
	p := rc.p
	if p.Name == nil || *p.Name == "" {
		return nil, errf(CodeInvalidParams, "Invalid params: missing prompt name")
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	} else if firstByte(args) != '{' {
		return nil, errf(CodeInvalidParams, "Invalid params: arguments must be an object")
	}
	if e := rc.startMRTR(*p.Name, args); e != nil {
		return nil, e
	}
	creq := CallRequest{Owner: rc.ex.Principal.Owner, Name: *p.Name, Args: args}
	rc.hook(&creq)
	res, err := rc.s.cat.GetPrompt(ctx, creq)
	if err != nil {
		if errors.Is(err, ErrUnknownPrompt) {
			return nil, errf(CodeInvalidParams, "Invalid params: unknown prompt: "+*p.Name)
		}
		return rc.callError(err)
	}
	return res, nil
}

func (rc *rpcCall) resourcesRead(ctx context.Context) ([]byte, *Error) {
	p := rc.p
	if p.URI == nil || *p.URI == "" {
		return nil, errf(CodeInvalidParams, "Invalid params: missing uri")
	}
	uri := *p.URI
	if res, e, ok := rc.skillRead(uri); ok {
		return res, e
	}
	if e := rc.startMRTR(uri, nil); e != nil {
		return nil, e
	}
	creq := CallRequest{Owner: rc.ex.Principal.Owner, Name: uri}
	rc.hook(&creq)
	res, err := rc.s.cat.ReadResource(ctx, creq)
	if err != nil {
		if errors.Is(err, ErrUnknownResource) {
			code := CodeInvalidParams
			if rc.era == Legacy {
				code = CodeLegacyNotFound
			}
			return nil, &Error{Code: code, Message: "Resource not found: " + uri, Data: map[string]string{"uri": uri}}
		}
		return rc.callError(err)
	}
	if rc.era == Modern {
		res = spliceFields(res, `"ttlMs":0,"cacheScope":"private"`)
	}
	return res, nil
}

func (rc *rpcCall) complete(ctx context.Context) ([]byte, *Error) {
	if len(rc.p.Ref) == 0 || len(rc.p.Argument) == 0 {
		return nil, errf(CodeInvalidParams, "Invalid params: completion/complete needs ref and argument")
	}
	creq := CallRequest{Owner: rc.ex.Principal.Owner, Args: rc.req.Params}
	rc.hook(&creq)
	res, err := rc.s.cat.Complete(ctx, creq)
	if err != nil {
		if errors.Is(err, ErrUnknownPrompt) {
			return nil, errf(CodeInvalidParams, "Invalid params: completion reference names no known prompt or resource template")
		}
		return rc.callError(err)
	}
	return res, nil
}

// spliceFields inserts fields (a comma-free list of "k":v pairs) at the
// start of a JSON object.
func spliceFields(obj []byte, fields string) []byte {
	b := make([]byte, 0, len(obj)+len(fields)+2)
	b = append(b, '{')
	b = append(b, fields...)
	rest := obj[1:]
	if firstByte(rest) != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// ---- listening clients ----

// listener is one 2026-07-28 subscriptions/listen stream.
type listener struct {
	id                        json.RawMessage
	tools, prompts, resources bool
	uris                      map[string]bool
	owner                     string // notifications/tasks go to the owner's listeners
	tasks                     bool   // that declared the tasks extension
	q                         *queue
}

type listeners struct {
	mu sync.Mutex
	m  map[*listener]struct{}
}

func (l *listeners) add(x *listener) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[*listener]struct{}{}
	}
	l.m[x] = struct{}{}
	l.mu.Unlock()
}

func (l *listeners) remove(x *listener) {
	l.mu.Lock()
	delete(l.m, x)
	l.mu.Unlock()
}

func (l *listeners) each(f func(*listener)) {
	l.mu.Lock()
	all := make([]*listener, 0, len(l.m))
	for x := range l.m {
		all = append(all, x)
	}
	l.mu.Unlock()
	for _, x := range all {
		f(x)
	}
}

// closeAll ends every listen stream gracefully, with its final result.
func (l *listeners) closeAll() {
	l.each(func(x *listener) {
		x.q.trySend(item{msg: resultResponse(x.id, subscriptionMeta(`{"resultType":"complete","_meta":{`, x.id, `}}`)), final: true})
		x.q.end()
	})
}

func subscriptionMeta(pre string, id json.RawMessage, post string) []byte {
	b := append([]byte(pre), `"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	return append(b, post...)
}

// listen opens a subscriptions/listen stream: first the acknowledgement of
// the notifications honoured, then those notifications as they happen.
func (s *Server) listen(rc *rpcCall) *Response {
	var f struct {
		Tools     bool     `json:"toolsListChanged"`
		Prompts   bool     `json:"promptsListChanged"`
		Resources bool     `json:"resourcesListChanged"`
		URIs      []string `json:"resourceSubscriptions"`
	}
	if len(rc.p.Notifications) > 0 && json.Unmarshal(rc.p.Notifications, &f) != nil {
		return jsonError(400, rc.req.ID, errf(CodeInvalidParams, "Invalid params: notifications must be a subscription filter object"))
	}
	x := &listener{id: rc.req.ID, tools: f.Tools, prompts: f.Prompts, resources: f.Resources,
		owner: rc.ex.Principal.owner(), tasks: declaresExtension(rc.caps.Raw, extTasks)}
	if len(f.URIs) > 0 {
		x.uris = map[string]bool{}
		for _, u := range f.URIs {
			x.uris[u] = true
		}
	}
	x.q = newQueue(64, func() { s.listeners.remove(x) })
	honoured := map[string]any{}
	if f.Tools {
		honoured["toolsListChanged"] = true
	}
	if f.Prompts {
		honoured["promptsListChanged"] = true
	}
	if f.Resources {
		honoured["resourcesListChanged"] = true
	}
	if len(f.URIs) > 0 {
		honoured["resourceSubscriptions"] = f.URIs
	}
	hb, _ := json.Marshal(honoured)
	ack := subscriptionMeta(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{`, rc.req.ID, `},"notifications":`)
	ack = append(append(ack, hb...), "}}"...)
	s.listeners.add(x)
	return &Response{Status: 200, Stream: &Stream{first: &item{msg: ack}, q: x.q}}
}

// broadcastListChanged tells listening clients that the tools, prompts or
// resources list changed: legacy sessions on their GET stream, 2026-07-28
// listeners that asked for it.
func (s *Server) broadcastListChanged(kind string) {
	method := "notifications/" + kind + "/list_changed"
	legacy := []byte(`{"jsonrpc":"2.0","method":"` + method + `"}`)
	s.sessions.each(func(ss *session) { ss.sendStandalone(legacy) })
	s.listeners.each(func(x *listener) {
		if (kind == "tools" && x.tools) || (kind == "prompts" && x.prompts) || (kind == "resources" && x.resources) {
			msg := subscriptionMeta(`{"jsonrpc":"2.0","method":"`+method+`","params":{"_meta":{`, x.id, `}}}`)
			x.q.trySend(item{msg: msg})
		}
	})
}

// broadcastResourceUpdated tells the clients subscribed to uri that it
// changed.
func (s *Server) broadcastResourceUpdated(uri string) {
	ub, _ := json.Marshal(uri)
	legacy := []byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":` + string(ub) + `}}`)
	s.sessions.each(func(ss *session) {
		ss.mu.Lock()
		sub := ss.subs[uri]
		ss.mu.Unlock()
		if sub {
			ss.sendStandalone(legacy)
		}
	})
	s.listeners.each(func(x *listener) {
		if x.uris[uri] {
			msg := subscriptionMeta(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":`+string(ub)+`,"_meta":{`, x.id, `}}}`)
			x.q.trySend(item{msg: msg})
		}
	})
}
