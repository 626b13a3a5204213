package cdp

// The trace context of an aiod:cdp call, passed to the browser where the
// browser carries it: the HTTP requests of the page loads the call
// causes (spec/tracing.md, "Trace context"). CDP messages themselves have
// no place for it.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
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

// documentsOnly pauses a target's document requests (its top-level and
// frame navigations) before they are sent, and nothing else: a header
// added to a page's subresources or scripts' fetches would make the
// browser send CORS preflights those servers may refuse.
var documentsOnly = []byte(`{"patterns":[{"urlPattern":"*","resourceType":"Document","requestStage":"Request"}]}`)

// traceSessions are the host's own sessions, one per target, which add
// the traceparent header to the target's document requests: a session of
// its own, not the plugin's, so that the Fetch domain enabled there puts
// no event in the plugin's buffer and changes nothing the plugin sees.
type traceSessions struct {
	mu sync.Mutex
	m  map[target.ID]*traceTarget
}

// traceTarget is the host's session on one target and the trace context
// its document requests get (the last navigation call's).
type traceTarget struct {
	s      *browser.Session
	header atomic.Pointer[[2]string] // traceparent, tracestate
}

// traceCall marks the span of an aiod:cdp.call with its method and, for a
// navigation on session s, makes the call's trace context the traceparent
// (and tracestate) header of the target's document requests from now
// on. It never fails the call: a header not set is the span's
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
	if h.Get("traceparent") == "" {
		return
	}
	tt, err := f.traces.target(ctx, s)
	if err != nil {
		sp.SetAttributes(attrCarry.String("failed"))
		return
	}
	tt.header.Store(&[2]string{h.Get("traceparent"), h.Get("tracestate")})
	sp.SetAttributes(attrCarry.String("sent"))
}

// target is the host's session on s's target, attached (with the Fetch
// domain pausing its document requests) on first use.
func (ts *traceSessions) target(ctx context.Context, s *browser.Session) (*traceTarget, error) {
	ts.mu.Lock()
	for id, o := range ts.m {
		if o.s.Err() != nil {
			delete(ts.m, id)
		}
	}
	tt := ts.m[s.TargetID]
	ts.mu.Unlock()
	if tt != nil && tt.s.Conn() == s.Conn() {
		return tt, nil
	}
	hs, err := s.Conn().Attach(ctx, s.TargetID)
	if err != nil {
		return nil, err
	}
	tt = &traceTarget{s: hs}
	paused, unsubscribe := hs.Subscribe("Fetch.requestPaused")
	go tt.serve(paused, unsubscribe)
	if _, err := hs.Raw(ctx, "Fetch.enable", documentsOnly); err != nil {
		hs.Detach(context.WithoutCancel(ctx))
		return nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old := ts.m[s.TargetID]; old != nil && old.s.Err() == nil && old.s.Conn() == s.Conn() {
		go hs.Detach(context.WithoutCancel(ctx)) // another call attached one first
		return old, nil
	}
	if ts.m == nil {
		ts.m = map[target.ID]*traceTarget{}
	}
	ts.m[s.TargetID] = tt
	return tt, nil
}

// pausedRequest is the part of a Fetch.requestPaused event read.
type pausedRequest struct {
	RequestID string `json:"requestId"`
	Request   struct {
		Headers map[string]string `json:"headers"`
	} `json:"request"`
}

type headerEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// serve lets each paused document request go on with the trace context's
// headers added (any traceparent or tracestate the page set replaced),
// until the session ends.
func (tt *traceTarget) serve(paused <-chan jsonv2.Value, unsubscribe func()) {
	defer unsubscribe()
	for ev := range paused {
		var p pausedRequest
		if json.Unmarshal(ev, &p) != nil || p.RequestID == "" {
			continue
		}
		headers := make([]headerEntry, 0, len(p.Request.Headers)+2)
		for k, v := range p.Request.Headers {
			if !strings.EqualFold(k, "traceparent") && !strings.EqualFold(k, "tracestate") {
				headers = append(headers, headerEntry{k, v})
			}
		}
		if h := tt.header.Load(); h != nil {
			headers = append(headers, headerEntry{"traceparent", h[0]})
			if h[1] != "" {
				headers = append(headers, headerEntry{"tracestate", h[1]})
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = tt.s.Call(ctx, "Fetch.continueRequest", map[string]any{"requestId": p.RequestID, "headers": headers}, nil)
		cancel()
	}
}
