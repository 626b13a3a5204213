package cdp

// The trace context of an aiod:cdp call, passed to the browser where the
// browser carries it: the HTTP requests of a page load the call causes
// (spec/tracing.md, "Trace context"). CDP messages themselves have no
// place for it.

import (
	"context"
	"net/http"
	"sync"

	"github.com/chromedp/cdproto/target"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/internal/tracing"
)

// navigations are the methods whose page loads carry the call's trace
// context.
var navigations = map[string]bool{"Page.navigate": true, "Page.reload": true, "Page.navigateToHistoryEntry": true}

// Span attributes of an aiod:cdp.call.
const (
	attrMethod = attribute.Key("aiod.cdp.method")
	attrCarry  = attribute.Key("aiod.cdp.traceparent")
)

// maxMethodAttr bounds a method name put on a span.
const maxMethodAttr = 64

// traceSessions are the host's own sessions, one per target, through
// which it sets the traceparent header of the target's requests: a
// session of its own, not the plugin's, so that enabling the Network
// domain there puts no event in the plugin's buffer and changes nothing
// the plugin sees. Chromium adds the extra headers of every session of a
// target whose Network domain is enabled.
type traceSessions struct {
	mu sync.Mutex
	m  map[target.ID]*browser.Session
}

// traceCall marks the span of an aiod:cdp.call with its method and, for a
// navigation on session s, sets the call's trace context as the
// traceparent (and tracestate) header of the target's requests before it
// runs. It never fails the call: a header not set is the span's
// aiod.cdp.traceparent "failed". Call it only when tracing is on.
func (f *Family) traceCall(ctx context.Context, s *browser.Session, method string) {
	sp := trace.SpanFromContext(ctx)
	if len(method) <= maxMethodAttr {
		sp.SetAttributes(attrMethod.String(method))
	}
	if s == nil || !navigations[method] {
		return
	}
	h := http.Header{}
	tracing.Inject(ctx, h)
	tp := h.Get("traceparent")
	if tp == "" {
		return
	}
	headers := map[string]string{"traceparent": tp}
	if st := h.Get("tracestate"); st != "" {
		headers["tracestate"] = st
	}
	hs, err := f.traces.session(ctx, s)
	if err == nil {
		err = hs.Call(ctx, "Network.setExtraHTTPHeaders", map[string]any{"headers": headers}, nil)
	}
	if err != nil {
		sp.SetAttributes(attrCarry.String("failed"))
		return
	}
	sp.SetAttributes(attrCarry.String("sent"))
}

// session is the host's session on s's target, attached (and its Network
// domain enabled, with no body buffering) on first use.
func (ts *traceSessions) session(ctx context.Context, s *browser.Session) (*browser.Session, error) {
	ts.mu.Lock()
	for id, o := range ts.m {
		if o.Err() != nil {
			delete(ts.m, id)
		}
	}
	hs := ts.m[s.TargetID]
	ts.mu.Unlock()
	if hs != nil && hs.Conn() == s.Conn() {
		return hs, nil
	}
	hs, err := s.Conn().Attach(ctx, s.TargetID)
	if err != nil {
		return nil, err
	}
	if _, err := hs.Raw(ctx, "Network.enable", []byte(`{"maxTotalBufferSize":0,"maxResourceBufferSize":0}`)); err != nil {
		hs.Detach(ctx)
		return nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old := ts.m[s.TargetID]; old != nil && old.Err() == nil && old.Conn() == s.Conn() {
		go hs.Detach(context.WithoutCancel(ctx)) // another call attached one first
		return old, nil
	}
	if ts.m == nil {
		ts.m = map[target.ID]*browser.Session{}
	}
	ts.m[s.TargetID] = hs
	return hs, nil
}
