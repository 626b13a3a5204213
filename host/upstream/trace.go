package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/internal/tracing"
)

// startCall starts the span of a tools/call sent to server (nil when
// tracing is off): its context is what the request's traceparent carries.
func startCall(ctx context.Context, server, tool string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, nil
	}
	return tracing.StartKind(ctx, tracing.SpanUpstreamCall, trace.SpanKindClient,
		tracing.AttrServer.String(server), tracing.AttrTool.String(tool))
}

// endCall ends a call's span with its outcome.
func endCall(sp trace.Span, res json.RawMessage, err error) {
	if sp == nil {
		return
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case bytes.Contains(res, []byte(`"isError":true`)):
		outcome = "tool_error"
	}
	tracing.End(sp, outcome)
}

// withTrace is req with ctx's trace context in its traceparent and
// tracestate headers (req itself when tracing is off or ctx is in no
// trace).
func withTrace(req *http.Request) *http.Request {
	if !tracing.On() || !trace.SpanContextFromContext(req.Context()).IsValid() {
		return req
	}
	r := req.Clone(req.Context())
	tracing.Inject(r.Context(), r.Header)
	return r
}

// metaWithTrace is the _meta object meta with ctx's trace context added
// (traceparent, tracestate), for upstreams that read it there (the
// 2026-07-28 _meta keys); meta itself when tracing is off or ctx is in no
// trace.
func metaWithTrace(ctx context.Context, meta []byte) []byte {
	if !tracing.On() || !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	m := bytes.TrimSpace(meta)
	if len(m) < 2 || m[len(m)-1] != '}' {
		return meta
	}
	out := append([]byte(nil), m[:len(m)-1]...)
	sep := len(bytes.TrimSpace(out)) > 1 // the object has members
	for _, k := range []string{"traceparent", "tracestate"} {
		v, ok := carrier[k]
		if !ok || v == "" {
			continue
		}
		if sep {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		out = append(append(append(out, kb...), ':'), vb...)
		sep = true
	}
	return append(out, '}')
}
