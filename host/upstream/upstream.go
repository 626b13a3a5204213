package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modern is the first protocol version without a handshake.
const modern = "2026-07-28"

// maxPages bounds a tools/list pagination loop (an upstream that hands out
// cursors forever).
const maxPages = 100

// upstream is one registered server: its go-sdk client, its session (opened
// lazily, reopened after a transport failure or a forgotten session), and its
// cached tool list.
type upstream struct {
	srv  Server
	set  *Set
	cl   *mcp.Client
	hc   *http.Client             // the go-sdk client's: the guard over the transport
	fc   *http.Client             // the fast path's: the transport alone
	lost atomic.Bool              // a 404 answered a request with our session id
	fast atomic.Pointer[fastPath] // nil: calls go through the go-sdk client
	// fastCalls counts the calls the fast path answered (the tests
	// read it).
	fastCalls atomic.Int64

	connMu sync.Mutex // serialises connecting

	mu      sync.Mutex
	cs      *mcp.ClientSession
	closed  bool
	tools   []upTool        // in the upstream's order
	plain   map[string]bool // tools whose arguments no header mirrors (the fast path's)
	have    bool            // tools holds the last good list
	fetched time.Time
	ttl     time.Duration
	stale   bool // a list_changed arrived since fetched
	timeout bool // the last refresh ran out of time
	// downLogged: "does not answer" was logged since the last good list.
	downLogged bool
	refresh    *refreshOp
	answers    int  // refreshes finished (a first one is no change)
	again      bool // list_changed arrived during the running refresh

	tokens   sync.Map // progress token -> *slot
	tokenSeq atomic.Int64

	stdio *stdioState // a command server's (nil for a URL)
	// sse: the server is reached by the 2024-11-05 HTTP+SSE transport
	// (sse.go); refused: the status of a POST of the running connect
	// answered 400, 404 or 405.
	sse     atomic.Bool
	refused atomic.Int32
	// cut is why the last GET stream was ended by the guard ("": it was
	// not): a 2024-11-05 session's calls fail with it.
	cut atomic.Pointer[string]

	// prompts, resources and templates are its other lists (surface.go).
	prompts, resources, templates kindCache
	// asks are the requests under way that may be asked for input
	// (input.go).
	askMu sync.Mutex
	asks  map[*ask]bool
}

type upTool struct {
	name string          // the upstream's name
	pub  string          // the published name ("" when it has none)
	def  json.RawMessage // the definition with the published name
	raw  json.RawMessage // the definition as the upstream wrote it
}

type refreshOp struct {
	done     chan struct{}
	deadline time.Time
}

func newUpstream(set *Set, srv Server) *upstream {
	u := &upstream{srv: srv, set: set}
	if srv.Stdio != nil {
		u.stdio = &stdioState{}
	}
	u.sse.Store(srv.Transport == TransportSSE)
	base := newOriginOnly(srv.Name, srv.URL, serverTransport(srv, set.opts.Transport))
	// Both clients never follow a redirect (client.go).
	warn := func(status int) {
		set.warnOnce(fmt.Sprintf("%s\x00redirect\x00%d", srv.Name, status), "%s: the session goes on without its GET stream (no list_changed from it)",
			(&RedirectError{Server: srv.Name, Status: status}).Error())
	}
	u.fc = newClient(srv.Name, base, nil)
	u.hc = newClient(srv.Name, &guard{base: base, limit: set.opts.MaxResultBytes, sessionLost: func() { u.lost.Store(true) }, capture: u.capture,
		refused: func(status int) { u.refused.Store(int32(status)) }, streamCut: func(why string) { u.cut.Store(&why) }}, warn)
	co := &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{}, // no roots, sampling or elicitation
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { u.listChanged() },
		ProgressNotificationHandler: u.progress,
		Logger:                      set.opts.Logger,
	}
	if srv.FromPolicy {
		// A server of the policy also publishes its prompts and resources
		// (surface.go), and its input requests go to the client of the
		// request under way (input.go): elicitation (forms and URLs) and
		// sampling, in either era (a 2026-07-28 upstream's input_required
		// rounds run in the go-sdk's loop). Still no roots.
		co.Capabilities = &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but live in the eras aiod relays
			Sampling: &mcp.SamplingCapabilities{},
		}
		co.MultiRoundTrip = nil
		co.ElicitationHandler = u.elicit
		//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but live in the eras aiod relays
		co.CreateMessageHandler = u.sample
		co.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { u.kindChanged(KindPrompts) }
		co.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { u.kindChanged(KindResources) }
	}
	u.cl = mcp.NewClient(&mcp.Implementation{Name: set.opts.ClientName, Version: set.opts.ClientVersion}, co)
	return u
}

var errClosed = errors.New("upstream set is closed")

// session returns the open session, connecting if there is none.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	cs, closed := u.cs, u.closed
	u.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if cs != nil {
		return cs, nil
	}
	u.connMu.Lock()
	defer u.connMu.Unlock()
	u.mu.Lock()
	cs = u.cs
	u.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	u.lost.Store(false)
	t, err := u.transport(ctx)
	if err != nil {
		return nil, err
	}
	u.refused.Store(0)
	// The session outlives the request that opens it, and the go-sdk hands
	// the requests the server sends outside a call (an earlier era's
	// elicitation) the context it was opened with: it must not name that
	// request's caller (input.go).
	cs, err = u.cl.Connect(context.WithValue(ctx, askKey{}, (*ask)(nil)), t, nil)
	if err != nil && u.stdio == nil {
		cs, err = u.connectSSE(ctx, err)
	}
	if err != nil {
		if u.stdio != nil {
			u.stdio.mu.Lock()
			u.backoffLocked() // its command is closed by Connect
			u.stdio.mu.Unlock()
		}
		return nil, err
	}
	if u.stdio != nil {
		u.set.wg.Add(1)
		go func() {
			defer u.set.wg.Done()
			u.watch(cs)
		}()
	}
	//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but live in the legacy eras aiod relays
	if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion < modern && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		// Legacy logging is per session: ask for everything, and let each
		// call's notify function (the caller) filter by its client's level.
		// Log messages of calls without one are dropped by the guard.
		//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but live in the legacy eras aiod relays
		_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		go cs.Close()
		return nil, errClosed
	}
	u.cs = cs
	return cs, nil
}

// drop forgets cs (if it is still the current session) and closes it in the
// background; the next use reconnects.
func (u *upstream) drop(cs *mcp.ClientSession) {
	u.mu.Lock()
	if u.cs == cs {
		u.cs = nil
		u.fast.Store(nil)
	}
	u.mu.Unlock()
	go cs.Close() // bounded: the go-sdk gives its DELETE 5 s
}

func modernEra(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= modern
}

// transportFailure reports whether err says nothing about the request itself
// (the upstream is unreachable, the connection broke), so the session should
// be dropped.
func transportFailure(ctx context.Context, err error) bool {
	var we *jsonrpc.Error
	return err != nil && ctx.Err() == nil && !errors.As(err, &we)
}

// retryable reports whether a request failed before the upstream ran it
// because the upstream forgot the session.
func (u *upstream) retryable(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || u.lost.Load()
}

// list fetches the upstream's tools, all pages.
func (u *upstream) list(ctx context.Context) ([]upTool, time.Duration, error) {
	for attempt := 0; ; attempt++ {
		tools, ttl, err, retry := u.listOnce(ctx)
		if retry && attempt == 0 {
			continue
		}
		return tools, ttl, err
	}
}

func (u *upstream) listOnce(ctx context.Context) ([]upTool, time.Duration, error, bool) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, 0, err, false
	}
	var (
		tools  []upTool
		cursor string
		ttl    = u.set.opts.DefaultTTL
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, 0, fmt.Errorf("tools/list: more than %d pages", maxPages), false
		}
		sl := &slot{method: "tools/list"}
		res, err := cs.ListTools(withSlot(ctx, sl), &mcp.ListToolsParams{Cursor: cursor})
		if _, gerr := sl.get(); gerr != nil {
			err = gerr // a replaced answer is an error for a list
		}
		if err != nil {
			if u.retryable(err) {
				u.drop(cs)
				return nil, 0, err, true
			}
			if transportFailure(ctx, err) {
				u.drop(cs)
			}
			return nil, 0, err, false
		}
		// The go-sdk client drops tools it cannot call (bad x-mcp-header
		// annotations); follow it.
		valid := make(map[string]bool, len(res.Tools))
		for _, t := range res.Tools {
			valid[t.Name] = true
		}
		defs, err := rawTools(sl, res)
		if err != nil {
			return nil, 0, fmt.Errorf("tools/list: %w", err), false
		}
		for _, d := range defs {
			var head struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(d, &head) != nil || !valid[head.Name] {
				continue
			}
			tools = append(tools, u.publish(head.Name, d))
		}
		if page == 0 && modernEra(cs) && res.TTLMs > 0 {
			ttl = time.Duration(res.TTLMs) * time.Millisecond
		}
		if res.NextCursor == "" {
			return tools, ttl, nil, false
		}
		cursor = res.NextCursor
	}
}

// rawTools returns each tool's definition as the upstream wrote it. Without a
// captured answer (the go-sdk served the page from its own ttlMs cache) it
// falls back to the decoded tools.
func rawTools(sl *slot, res *mcp.ListToolsResult) ([]json.RawMessage, error) {
	if raw, _ := sl.get(); raw != nil {
		var r struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, err
		}
		return r.Tools, nil
	}
	out := make([]json.RawMessage, 0, len(res.Tools))
	for _, t := range res.Tools {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// publish computes a tool's published name and definition.
func (u *upstream) publish(name string, def json.RawMessage) upTool {
	t := upTool{name: name, raw: def}
	switch {
	case u.srv.Prefix != "":
		t.pub = u.srv.Prefix + "_" + name
	case len(name) > len(u.srv.Name)+1 && name[:len(u.srv.Name)+1] == u.srv.Name+"_":
		t.pub = name
	default:
		return t // no route: dropped when published
	}
	if t.pub == name {
		t.def = def
		return t
	}
	d, err := setName(def, t.pub)
	if err != nil {
		t.pub = ""
		return t
	}
	t.def = d
	return t
}

// setName replaces the top-level "name" of a JSON object, keeping every other
// member as written, in order.
func setName(obj json.RawMessage, name string) (json.RawMessage, error) {
	return setMember(obj, "name", name)
}

// setMember replaces the top-level member key of a JSON object with the
// string value (or, with raw, the JSON value), keeping every other member as
// written, in order; a member it does not have is added last.
func setMember(obj json.RawMessage, key, value string, raw ...bool) (json.RawMessage, error) {
	ms, ok := members(obj)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	vb := []byte(value)
	if len(raw) == 0 || !raw[0] {
		vb, _ = json.Marshal(value)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	found := false
	for i, m := range ms {
		if i > 0 {
			out.WriteByte(',')
		}
		if m.Key == key {
			found = true
			out.Write(obj[m.Start:m.Value])
			out.Write(vb)
			continue
		}
		out.Write(obj[m.Start:m.End])
	}
	if !found { // added last
		if len(ms) > 0 {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// snapshot returns the tools to publish now. A fresh cache costs nothing; a
// stale one is returned at once and refreshed in the background; without one
// it waits for a refresh, at most until that refresh's deadline (the list
// timeout), unless the last refresh already ran out of time.
func (u *upstream) snapshot(ctx context.Context) []upTool {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	if u.have && !u.stale && time.Since(u.fetched) < u.ttl {
		t := u.tools
		u.mu.Unlock()
		return t
	}
	op := u.startRefreshLocked()
	if u.have || u.timeout {
		t := u.tools
		u.mu.Unlock()
		return t
	}
	u.mu.Unlock()
	timer := time.NewTimer(time.Until(op.deadline))
	defer timer.Stop()
	select {
	case <-op.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tools
}

// startRefreshLocked starts a background refresh unless one is running.
func (u *upstream) startRefreshLocked() *refreshOp {
	if u.refresh != nil {
		return u.refresh
	}
	timeout := u.set.opts.ListTimeout
	op := &refreshOp{done: make(chan struct{}), deadline: time.Now().Add(timeout)}
	u.refresh = op
	u.again = false
	u.set.wg.Add(1)
	go func() {
		defer u.set.wg.Done()
		ctx, cancel := context.WithTimeout(u.set.ctx, timeout)
		defer cancel()
		start := time.Now()
		tools, ttl, err := u.list(ctx)
		u.mu.Lock()
		first := u.answers == 0
		u.answers++
		if err == nil {
			u.tools, u.have, u.fetched, u.ttl, u.stale, u.timeout = tools, true, start, ttl, false, false
			u.plain = make(map[string]bool, len(tools))
			for _, t := range tools {
				u.plain[t.name] = !bytes.Contains(t.raw, []byte("x-mcp-header"))
			}
			u.downLogged = false
		} else {
			// An upstream that does not answer is absent.
			u.tools, u.have = nil, false
			u.timeout = ctx.Err() != nil && u.set.ctx.Err() == nil
			if u.set.ctx.Err() == nil && !u.downLogged {
				u.downLogged = true
				u.set.logf("upstream MCP server %q does not answer tools/list (absent until it does): %v", u.srv.Name, err)
			}
		}
		close(op.done)
		u.mu.Unlock()
		// What clients see may have changed: tell them (not for the first
		// answer, which the tools/list that asked for it waits for). The
		// refresh ends after the recheck, so one upstream's refreshes and
		// rechecks come one after the other.
		u.set.recheck(!first)
		u.mu.Lock()
		defer u.mu.Unlock()
		u.refresh = nil
		if u.again && !u.closed && u.set.ctx.Err() == nil {
			// list_changed arrived while this list was on its way: it
			// may predate the change.
			u.again, u.stale = false, true
			u.startRefreshLocked()
		}
	}()
	return op
}

// listChanged marks the cache stale and refreshes it in the background.
func (u *upstream) listChanged() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.stale = true
	if u.refresh != nil {
		u.again = true // the running refresh may have been answered before the change
		return
	}
	u.startRefreshLocked()
}

// progress relays a progress notification that arrived outside the call's
// own stream (legacy servers may use the session's standalone stream).
func (u *upstream) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil || u.stdio != nil || u.sse.Load() {
		return // relayed as read (relayProgress)
	}
	v, ok := u.tokens.Load(fmt.Sprint(req.Params.ProgressToken))
	if !ok {
		return
	}
	sl := v.(*slot)
	if b, err := json.Marshal(req.Params); err == nil && sl.notify != nil {
		sl.notify("notifications/progress", b)
	}
}

// relayProgress hands a progress notification read on a command's stdout
// or the 2024-11-05 stream to its call's notify function.
func (u *upstream) relayProgress(params json.RawMessage) {
	var p struct {
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil || p.Token == nil {
		return
	}
	if v, ok := u.tokens.Load(fmt.Sprint(p.Token)); ok {
		if sl := v.(*slot); sl.notify != nil {
			sl.notify("notifications/progress", params)
		}
	}
}

// call forwards one tools/call.
func (u *upstream) call(ctx context.Context, tool string, args json.RawMessage, notify func(string, json.RawMessage), in Asker) (json.RawMessage, error) {
	ctx, done := u.asking(ctx, in)
	defer done()
	for attempt := 0; ; attempt++ {
		res, err, retry := u.callOnce(ctx, tool, args, notify, in != nil)
		if retry && attempt == 0 {
			continue
		}
		if retry {
			return errorResult(fmt.Sprintf("upstream MCP server %q lost its session twice", u.srv.Name)), nil
		}
		return res, err
	}
}

func (u *upstream) callOnce(ctx context.Context, tool string, args json.RawMessage, notify func(string, json.RawMessage), asks bool) (json.RawMessage, error, bool) {
	cs, err := u.session(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return u.ctxResult(ctx)
		}
		if res, ok := redirected(err); ok {
			return res, nil, false
		}
		if res, ok := authFailed(err); ok {
			return res, nil, false
		}
		return errorResult(fmt.Sprintf("upstream MCP server %q is not reachable: %v", u.srv.Name, err)), nil, false
	}
	if fp := u.fast.Load(); fp != nil && notify == nil && u.fastTool(tool) {
		res, err := u.fastCall(ctx, cs, fp, tool, args)
		// An input_required answer to a call whose client can be asked is
		// taken through the go-sdk client, whose rounds relay the questions.
		if err != errFastRefused && (!asks || err != nil || !interim(res)) {
			u.fastCalls.Add(1)
			return res, err, false
		}
	}
	sl := &slot{method: "tools/call", notify: notify}
	p := &mcp.CallToolParams{Name: tool}
	if a := bytes.TrimSpace(args); len(a) > 0 && string(a) != "null" {
		p.Arguments = json.RawMessage(a)
	}
	if notify != nil {
		tok := "aiod-" + strconv.FormatInt(u.tokenSeq.Add(1), 10)
		p.Meta = mcp.Meta{"progressToken": tok}
		if modernEra(cs) {
			//lint:ignore SA1019 MCP logging is deprecated in 2026-07-28 but live in the legacy eras aiod relays
			p.Meta[mcp.MetaKeyLogLevel] = "debug" // the caller filters by its client's level
		}
		u.tokens.Store(tok, sl)
		defer u.tokens.Delete(tok)
	}
	_, err = cs.CallTool(withSlot(ctx, sl), p)
	if ierr := inputError(ctx); ierr != nil {
		return nil, ierr, false // the client could not answer the upstream's question
	}
	raw, gerr := sl.get()
	switch {
	case raw != nil:
		// The answer as the upstream wrote it, whatever the go-sdk made of it.
		return raw, nil, false
	case gerr != nil:
		return errorResult(fmt.Sprintf("upstream MCP server %q: %v", u.srv.Name, gerr)), nil, false
	case err == nil:
		return errorResult(fmt.Sprintf("upstream MCP server %q: no result captured", u.srv.Name)), nil, false
	}
	if ctx.Err() != nil {
		return u.ctxResult(ctx)
	}
	if u.retryable(err) {
		u.drop(cs)
		return nil, nil, true
	}
	if res, ok := redirected(err); ok {
		return res, nil, false // the session is not broken: this request was answered
	}
	if res, ok := authFailed(err); ok {
		return res, nil, false // nor by a request its Auth hook did not send
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return nil, &RPCError{Server: u.srv.Name, Code: we.Code, Message: we.Message, Data: we.Data}, false
	}
	u.drop(cs)
	if why := u.cut.Swap(nil); why != nil && u.sse.Load() {
		return errorResult(fmt.Sprintf("upstream MCP server %q: its event stream was ended: %s", u.srv.Name, *why)), nil, false
	}
	return errorResult(fmt.Sprintf("upstream MCP server %q is not reachable: %v", u.srv.Name, err)), nil, false
}

// ctxResult answers a call whose context ended: a deadline is a tool failure
// (isError, naming the server); a cancellation is the caller's error.
func (u *upstream) ctxResult(ctx context.Context) (json.RawMessage, error, bool) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errorResult(fmt.Sprintf("upstream MCP server %q did not answer before the deadline", u.srv.Name)), nil, false
	}
	return nil, fmt.Errorf("upstream MCP server %q: %w", u.srv.Name, ctx.Err()), false
}

func (u *upstream) close() {
	u.mu.Lock()
	cs := u.cs
	u.cs, u.closed = nil, true
	u.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	u.stopStdio()
}

// transport is how the session reaches the server: its command, or its URL
// over Streamable HTTP (or the 2024-11-05 HTTP+SSE transport, sse.go).
func (u *upstream) transport(ctx context.Context) (mcp.Transport, error) {
	if u.stdio != nil {
		return u.stdioTransport()
	}
	if u.sse.Load() {
		return u.sseTransport(), nil
	}
	return &mcp.StreamableClientTransport{Endpoint: u.srv.URL, HTTPClient: u.hc}, nil
}

// errorResult is a CallToolResult with isError and one text item.
func errorResult(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content []map[string]string `json:"content"`
		IsError bool                `json:"isError"`
	}{[]map[string]string{{"type": "text", "text": text}}, true})
	return b
}
