// Package cdp is the aiod:cdp host function family (spec/abi/v1/cdp.md),
// over host/browser.
package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/target"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Family is the aiod:cdp family (spec/abi/v1/cdp.md): a plugin lists
// the browser's targets, attaches flat sessions to them, sends CDP
// commands on them and reads their events, over the host's one connection
// to the browser (host/browser). Every command is checked against the
// grant's method patterns; sessions belong to the (plugin, owner) that
// attached them.
type Family struct {
	b *browser.Browser
	// ownerAllowed says whether an owner (tenant) may use the browser at
	// all (SetOwnerPolicy); nil: every owner may.
	ownerAllowed func(owner string) bool

	mu       sync.Mutex
	sessions map[cdpOwner]map[string]*browser.Session
	// contexts are the tenants' browser contexts (Target.createBrowserContext),
	// by owner, on the connection that made them.
	contexts map[string]ownerContext
	// traces are the host's sessions that carry a call's trace context
	// to the page loads it causes (trace.go).
	traces traceSessions
}

type ownerContext struct {
	conn *browser.Conn
	id   string
}

type cdpOwner struct {
	g     *caps.Grant
	owner string
}

// New returns the cdp family over b (nil: no browser; every call is
// unavailable). The caller owns b.
func New(b *browser.Browser) *Family {
	return &Family{b: b, sessions: map[cdpOwner]map[string]*browser.Session{}, contexts: map[string]ownerContext{}}
}

// Name is abi.FamilyCDP.
func (*Family) Name() abi.Family { return abi.FamilyCDP }

// Defs are the functions of aiod:cdp.
func (f *Family) Defs() []hostfn.Def {
	return []hostfn.Def{
		hostfn.ReqResp(abi.ModuleCDP, "info", hostfn.StrictJSON(f.info)),
		hostfn.ReqResp(abi.ModuleCDP, "targets", hostfn.StrictJSON(f.targets)),
		hostfn.ReqResp(abi.ModuleCDP, "attach", hostfn.StrictJSON(f.attach)),
		hostfn.ReqResp(abi.ModuleCDP, "detach", hostfn.StrictJSON(f.detach)),
		hostfn.ReqResp(abi.ModuleCDP, "call", f.call),
		hostfn.ReqResp(abi.ModuleCDP, "events", hostfn.StrictJSON(f.events)),
	}
}

// Provision does nothing: sessions are made by attach.
func (*Family) Provision(context.Context, *caps.Grant) error { return nil }

// Cleanup detaches the sessions of a plugin that is gone.
func (f *Family) Cleanup(g *caps.Grant) {
	f.mu.Lock()
	var ss []*browser.Session
	for k, m := range f.sessions {
		if k.g == g {
			for _, s := range m {
				ss = append(ss, s)
			}
			delete(f.sessions, k)
		}
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range ss {
		s.Detach(ctx)
	}
}

// neverByCall are the Target methods call refuses whatever the grant:
// they make or end sessions the host would not know of (use attach and
// detach), or end the browser every plugin shares.
var neverByCall = map[string]bool{
	"Target.attachToTarget": true, "Target.attachToBrowserTarget": true, "Target.detachFromTarget": true,
	"Target.setAutoAttach": true, "Target.autoAttachRelated": true, "Target.exposeDevToolsProtocol": true,
	"Target.sendMessageToTarget": true, "Browser.close": true, "Browser.crash": true, "Browser.crashGpuProcess": true,
}

// newTargetMethods open or close targets: they need new_targets besides a
// pattern.
var newTargetMethods = map[string]bool{
	"Target.createTarget": true, "Target.closeTarget": true,
	"Target.createBrowserContext": true, "Target.disposeBrowserContext": true,
}

// sensitiveDomains are allowed only by a pattern that names the domain
// ("Storage.*", "Browser.getVersion"), never by "*"; sensitiveMethods only
// by their exact name.
var (
	sensitiveDomains = map[string]bool{"Browser": true, "Target": true, "Storage": true, "SystemInfo": true}
	sensitiveMethods = map[string]bool{
		"Network.setCookie": true, "Network.setCookies": true, "Network.getCookies": true, "Network.getAllCookies": true,
		"Network.deleteCookies": true, "Network.clearBrowserCookies": true, "Page.setDownloadBehavior": true,
	}
)

// methodAllowed applies the grant's patterns and the rules above; the
// error says why not, naming the method.
func methodAllowed(g *caps.Grant, method string) error {
	if neverByCall[method] {
		return hostfn.Errorf(abi.Denied, "CDP method %s is not available through aiod:cdp.call (use attach and detach; the browser is shared)", method)
	}
	if !g.MethodAllowed(method) {
		return hostfn.Errorf(abi.Denied, "CDP method %s is outside the plugin's cdp scope (capabilities.cdp.methods)", method)
	}
	domain, _, _ := strings.Cut(method, ".")
	if sensitiveDomains[domain] || sensitiveMethods[method] {
		var naming []string
		for _, p := range g.CDPMethods {
			if p == method || (sensitiveDomains[domain] && strings.HasPrefix(p, domain+".")) {
				naming = append(naming, p)
			}
		}
		if !(&caps.Grant{CDPMethods: naming}).MethodAllowed(method) {
			return hostfn.Errorf(abi.Denied, "CDP method %s must be named in the plugin's cdp scope (a pattern like \"*\" does not cover it)", method)
		}
	}
	if newTargetMethods[method] && !g.CDPNewTargets {
		return hostfn.Errorf(abi.Denied, "CDP method %s opens or closes targets: the plugin's cdp scope has no new_targets", method)
	}
	return nil
}

// SetOwnerPolicy sets which owners (tenants) may use the browser; a
// refused owner's every cdp call is denied. Call it before serving.
func (f *Family) SetOwnerPolicy(allowed func(owner string) bool) { f.ownerAllowed = allowed }

func (f *Family) grant(c *hostfn.Call) (*caps.Grant, error) {
	if c.Grant == nil || !c.Grant.Has(abi.FamilyCDP) {
		return nil, hostfn.Errorf(abi.Denied, "the plugin has no cdp grant")
	}
	if f.ownerAllowed != nil && !f.ownerAllowed(c.Owner) {
		return nil, hostfn.Errorf(abi.Denied, "the browser is not enabled for this tenant (the policy's tenants.<name>.browser)")
	}
	return c.Grant, nil
}

// conn is the browser connection, waited for (a launched browser that
// restarts) at most until shortly before the call's deadline.
func (f *Family) conn(ctx context.Context) (*browser.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cdpTimeout(ctx, 15_000))
	defer cancel()
	c, err := f.b.Conn(ctx)
	if err != nil {
		return nil, cdpError("", err)
	}
	return c, nil
}

func (f *Family) info(ctx context.Context, c *hostfn.Call, _ *struct{}) (*abi.CDPInfoResponse, error) {
	if _, err := f.grant(c); err != nil {
		return nil, err
	}
	conn, err := f.conn(ctx)
	if err != nil {
		return nil, err
	}
	v, vp := conn.Version(), f.b.Viewport()
	ws := v.WebSocketURL
	if fw, ok := browser.ForwardedFrom(ctx); ok { // the client came through a proxy: its URL
		ws = fw.CDPURL(ws)
	}
	return &abi.CDPInfoResponse{Mode: string(f.b.Mode()), Product: v.Product, UserAgent: v.UserAgent, ProtocolVersion: v.ProtocolVersion,
		JSVersion: v.JSVersion, WebSocketURL: ws, Viewport: abi.CDPViewport{Width: vp.Width, Height: vp.Height}}, nil
}

func (f *Family) targets(ctx context.Context, c *hostfn.Call, _ *struct{}) (*abi.CDPTargetsResponse, error) {
	if _, err := f.grant(c); err != nil {
		return nil, err
	}
	conn, err := f.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cdpTimeout(ctx, 0))
	defer cancel()
	ts, err := f.ownTargets(ctx, conn, c.Owner)
	if err != nil {
		return nil, err
	}
	resp := &abi.CDPTargetsResponse{Targets: make([]abi.CDPTarget, 0, len(ts))}
	for _, t := range ts {
		resp.Targets = append(resp.Targets, abi.CDPTarget{TargetID: string(t.TargetID), Type: t.Type, Title: t.Title, URL: t.URL, Attached: t.Attached})
	}
	return resp, nil
}

func (f *Family) attach(ctx context.Context, c *hostfn.Call, req *abi.CDPAttachRequest) (*abi.CDPAttachResponse, error) {
	g, err := f.grant(c)
	if err != nil {
		return nil, err
	}
	conn, err := f.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cdpTimeout(ctx, 0))
	defer cancel()
	id := target.ID(req.TargetID)
	ts, err := f.ownTargets(ctx, conn, c.Owner)
	if err != nil {
		return nil, err
	}
	if id == "" {
		for _, t := range ts {
			if t.Type == "page" {
				id = t.TargetID
				break
			}
		}
		if id == "" && isolated(c.Owner) {
			// a tenant's first page, in its own browser context
			if id, err = f.newPage(ctx, conn, c.Owner); err != nil {
				return nil, err
			}
		}
		if id == "" {
			return nil, hostfn.Errorf(abi.NotFound, "the browser has no page open")
		}
	} else if !slices.ContainsFunc(ts, func(t *target.Info) bool { return t.TargetID == id }) {
		// closed (or another tenant's, which does not exist for this one)
		return nil, hostfn.Errorf(abi.NotFound, "no target %q", id)
	}
	key := cdpOwner{g, c.Owner}
	f.mu.Lock()
	live := 0
	for sid, s := range f.sessions[key] {
		switch {
		case s.Err() != nil || s.Conn() != conn:
			delete(f.sessions[key], sid)
		case s.TargetID == id:
			f.mu.Unlock()
			return &abi.CDPAttachResponse{Session: sid, TargetID: string(id), Reused: true}, nil
		default:
			live++
		}
	}
	f.mu.Unlock()
	if live >= abi.CDPMaxSessions {
		return nil, hostfn.Errorf(abi.TooLarge, "%d sessions are attached already (at most %d): detach one", live, abi.CDPMaxSessions)
	}
	s, err := conn.Attach(ctx, id)
	if err != nil {
		return nil, cdpError("Target.attachToTarget", err)
	}
	// Inspector.targetCrashed tells the host that the page crashed.
	if _, err := s.Raw(ctx, "Inspector.enable", nil); err != nil {
		s.Detach(ctx)
		return nil, cdpError("Inspector.enable", err)
	}
	f.mu.Lock()
	if f.sessions[key] == nil {
		f.sessions[key] = map[string]*browser.Session{}
	}
	f.sessions[key][string(s.ID)] = s
	f.mu.Unlock()
	return &abi.CDPAttachResponse{Session: string(s.ID), TargetID: string(id)}, nil
}

// session finds a session of the caller.
func (f *Family) session(c *hostfn.Call, id string) (*browser.Session, error) {
	f.mu.Lock()
	s := f.sessions[cdpOwner{c.Grant, c.Owner}][id]
	f.mu.Unlock()
	if s == nil {
		return nil, hostfn.Errorf(abi.NotFound, "no session %q: attach first", id)
	}
	if err := s.Err(); err != nil {
		f.drop(c, id)
		return nil, cdpError("", err)
	}
	return s, nil
}

func (f *Family) drop(c *hostfn.Call, id string) {
	f.mu.Lock()
	delete(f.sessions[cdpOwner{c.Grant, c.Owner}], id)
	f.mu.Unlock()
}

func (f *Family) detach(ctx context.Context, c *hostfn.Call, req *abi.CDPSessionRequest) (*abi.CDPDetachResponse, error) {
	if _, err := f.grant(c); err != nil {
		return nil, err
	}
	f.mu.Lock()
	s := f.sessions[cdpOwner{c.Grant, c.Owner}][req.Session]
	f.mu.Unlock()
	if s == nil {
		return &abi.CDPDetachResponse{}, nil
	}
	f.drop(c, req.Session)
	ctx, cancel := context.WithTimeout(ctx, cdpTimeout(ctx, 0))
	defer cancel()
	s.Detach(ctx)
	return &abi.CDPDetachResponse{Detached: true}, nil
}

// call is raw JSON in and out: the response is the browser's result
// object, passed through unparsed.
func (f *Family) call(ctx context.Context, c *hostfn.Call, raw []byte) ([]byte, error) {
	g, err := f.grant(c)
	if err != nil {
		return nil, err
	}
	var req abi.CDPCallRequest
	if err := hostfn.DecodeRequest(raw, &req); err != nil {
		return nil, hostfn.Errorf(abi.Invalid, "bad request: %v", err)
	}
	if req.Method == "" {
		return nil, hostfn.Errorf(abi.Invalid, "method is required")
	}
	if err := methodAllowed(g, req.Method); err != nil {
		return nil, err
	}
	if p := strings.TrimSpace(string(req.Params)); p != "" && p != "null" && !strings.HasPrefix(p, "{") {
		return nil, hostfn.Errorf(abi.Invalid, "params must be a JSON object")
	}
	ctx, cancel := context.WithTimeout(ctx, cdpTimeout(ctx, req.TimeoutMs))
	defer cancel()
	var res []byte
	if req.Session == "" {
		conn, err := f.conn(ctx)
		if err != nil {
			return nil, err
		}
		if tracing.On() {
			f.traceCall(ctx, nil, req.Method)
		}
		params, err := f.browserLevel(ctx, conn, c.Owner, req.Method, req.Params)
		if err != nil {
			return nil, err
		}
		res, err = conn.Raw(ctx, req.Method, params)
		if err != nil {
			return nil, cdpError(req.Method, err)
		}
	} else {
		s, err := f.session(c, req.Session)
		if err != nil {
			return nil, err
		}
		if tracing.On() {
			f.traceCall(ctx, s, req.Method)
		}
		res, err = s.Raw(ctx, req.Method, req.Params)
		if err != nil {
			if s.Err() != nil {
				f.drop(c, req.Session)
			}
			return nil, cdpError(req.Method, err)
		}
	}
	if max := resultLimit(g); int64(len(res)) > max {
		return nil, hostfn.Errorf(abi.TooLarge, "the answer to %s is %d bytes, over the plugin's limit of %d (limits.max_result_bytes)", req.Method, len(res), max)
	}
	if len(res) == 0 {
		res = []byte("{}")
	}
	return res, nil
}

func (f *Family) events(ctx context.Context, c *hostfn.Call, req *abi.CDPEventsRequest) (*abi.CDPEventsResponse, error) {
	g, err := f.grant(c)
	if err != nil {
		return nil, err
	}
	s, err := f.session(c, req.Session)
	if err != nil {
		return nil, err
	}
	max := req.Max
	if max <= 0 {
		max = abi.CDPDefaultEvents
	}
	max = min(max, abi.CDPMaxEvents)
	wait := time.Duration(min(max64(req.WaitMs, 0), abi.CDPMaxWaitMs)) * time.Millisecond
	wait = min(wait, cdpTimeout(ctx, abi.CDPMaxWaitMs))
	var match func(string) bool
	if len(req.Methods) > 0 {
		m := &caps.Grant{CDPMethods: req.Methods}
		match = m.MethodAllowed
	}
	// The response: the events' JSON, framing each (browser.EventOverhead)
	// and around them.
	budget := int(min(resultLimit(g), 1<<30)) - 64
	evs, dropped, more, err := s.Events(ctx, match, max, budget, wait)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, hostfn.Errorf(abi.Timeout, "events: %v", err)
		}
		f.drop(c, req.Session)
		return nil, cdpError("", err)
	}
	resp := &abi.CDPEventsResponse{Events: make([]abi.CDPEvent, len(evs)), Dropped: dropped, More: more}
	for i, e := range evs {
		resp.Events[i] = abi.CDPEvent{Method: e.Method, Params: []byte(e.Params)}
	}
	return resp, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// resultLimit is the most bytes one answer may carry to the plugin.
func resultLimit(g *caps.Grant) int64 {
	if g.MaxResultBytes > 0 {
		return g.MaxResultBytes
	}
	return caps.DefaultMaxResultBytes
}

// cdpTimeout is a command's timeout: ms (0: the default, at most the max),
// ending a little before the guest call's own deadline so that the guest
// gets the timeout error rather than being cut off.
func cdpTimeout(ctx context.Context, ms int64) time.Duration {
	if ms <= 0 {
		ms = abi.CDPDefaultTimeoutMs
	}
	d := time.Duration(min(ms, abi.CDPMaxTimeoutMs)) * time.Millisecond
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		left -= min(time.Second, left/10)
		d = min(d, max(left, time.Millisecond))
	}
	return d
}

// cdpError maps a browser or connection error onto a host function error
// naming the method.
func cdpError(method string, err error) error {
	prefix := ""
	if method != "" {
		prefix = method + ": "
	}
	var pe *cdproto.Error
	switch {
	case errors.As(err, &pe):
		code := abi.IO
		if pe.Code == -32601 || pe.Code == -32602 {
			code = abi.Invalid
		}
		return &hostfn.Error{Code: code, Message: fmt.Sprintf("%sthe browser answered: %s", prefix, pe.Message), Detail: map[string]any{"cdp_code": pe.Code}}
	case errors.Is(err, context.DeadlineExceeded):
		return hostfn.Errorf(abi.Timeout, "%sthe browser did not answer in time", prefix)
	case errors.Is(err, browser.ErrTargetCrashed):
		return hostfn.Errorf(abi.Unavailable, "%s%v", prefix, err)
	case errors.Is(err, browser.ErrTargetClosed):
		return hostfn.Errorf(abi.NotFound, "%s%v", prefix, err)
	case errors.Is(err, browser.ErrUnavailable):
		return hostfn.Errorf(abi.Unavailable, "%s%v", prefix, err)
	}
	return hostfn.Errorf(abi.Internal, "%s%v", prefix, err)
}

// Tenants' browsers. An owner other than the single-tenant one ("" or
// "default") gets its own browser context (Target.createBrowserContext:
// its own cookies, storage and cache) the first time it needs a page, and
// sees only that context's targets: targets lists them, attach picks or
// opens a page there and refuses another's target as unknown, and a
// browser-level call (no session) is confined to what cannot reach another
// context.

// isolated reports whether owner gets a browser context of its own.
func isolated(owner string) bool { return owner != "" && owner != "default" }

// isolatedBrowserLevel are the browser-level methods (sent without a
// session) an isolated owner may send: the version, and opening or closing
// its own targets. Everything else at the browser level could read or
// change another context (Target.getTargets, Storage.*, Browser.*).
var isolatedBrowserLevel = map[string]bool{"Browser.getVersion": true, "Target.createTarget": true, "Target.closeTarget": true}

// ownTargets lists the targets owner may see: all of them for the single
// tenant, those of its browser context for another.
func (f *Family) ownTargets(ctx context.Context, conn *browser.Conn, owner string) ([]*target.Info, error) {
	ts, err := conn.Targets(ctx)
	if err != nil {
		return nil, cdpError("Target.getTargets", err)
	}
	if !isolated(owner) {
		return ts, nil
	}
	bc := f.knownContext(conn, owner)
	out := ts[:0:0]
	for _, t := range ts {
		if bc != "" && string(t.BrowserContextID) == bc {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *Family) knownContext(conn *browser.Conn, owner string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if oc, ok := f.contexts[owner]; ok && oc.conn == conn {
		return oc.id
	}
	return ""
}

// browserContext returns owner's browser context, making it on first use
// (and again on a new connection: a restarted browser has lost it).
func (f *Family) browserContext(ctx context.Context, conn *browser.Conn, owner string) (string, error) {
	if id := f.knownContext(conn, owner); id != "" {
		return id, nil
	}
	var res struct {
		BrowserContextID string `json:"browserContextId"`
	}
	if err := conn.Call(ctx, "Target.createBrowserContext", map[string]any{"disposeOnDetach": false}, &res); err != nil {
		return "", cdpError("Target.createBrowserContext", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if oc, ok := f.contexts[owner]; ok && oc.conn == conn { // another call made one first
		go conn.Call(context.Background(), "Target.disposeBrowserContext", map[string]any{"browserContextId": res.BrowserContextID}, nil)
		return oc.id, nil
	}
	f.contexts[owner] = ownerContext{conn: conn, id: res.BrowserContextID}
	return res.BrowserContextID, nil
}

// newPage opens about:blank in owner's browser context.
func (f *Family) newPage(ctx context.Context, conn *browser.Conn, owner string) (target.ID, error) {
	bc, err := f.browserContext(ctx, conn, owner)
	if err != nil {
		return "", err
	}
	var res struct {
		TargetID target.ID `json:"targetId"`
	}
	if err := conn.Call(ctx, "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc}, &res); err != nil {
		return "", cdpError("Target.createTarget", err)
	}
	return res.TargetID, nil
}

// browserLevel checks a browser-level call of an isolated owner, and puts
// its browser context into Target.createTarget; other owners' params pass
// unchanged.
func (f *Family) browserLevel(ctx context.Context, conn *browser.Conn, owner, method string, params []byte) ([]byte, error) {
	if !isolated(owner) {
		return params, nil
	}
	if !isolatedBrowserLevel[method] {
		return nil, hostfn.Errorf(abi.Denied, "CDP method %s is not available without a session to a tenant: it reaches beyond the tenant's browser context (attach to a page and send it there)", method)
	}
	m := map[string]json.RawMessage{}
	if p := strings.TrimSpace(string(params)); p != "" && p != "null" {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, hostfn.Errorf(abi.Invalid, "params: %v", err)
		}
	}
	switch method {
	case "Target.createTarget":
		bc, err := f.browserContext(ctx, conn, owner)
		if err != nil {
			return nil, err
		}
		m["browserContextId"], _ = json.Marshal(bc)
		delete(m, "newWindow") // a window belongs to the default context
	case "Target.closeTarget":
		var id target.ID
		_ = json.Unmarshal(m["targetId"], &id)
		ts, err := f.ownTargets(ctx, conn, owner)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(ts, func(t *target.Info) bool { return t.TargetID == id }) {
			return nil, hostfn.Errorf(abi.NotFound, "no target %q", id)
		}
	}
	return json.Marshal(m)
}
