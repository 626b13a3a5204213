// Package tracing is aiod's OpenTelemetry instrumentation: the spans of an
// MCP request, a plugin call, a host family call, a quota or guard
// decision and an upstream call (spec/tracing.md), and the W3C trace
// context taken from a request and passed on to upstream servers.
//
// It is off until Enable: then On is false and every caller skips its
// span with one atomic load, so tracing off costs nothing else (no
// context, no attribute, no allocation). Callers write
//
//	if tracing.On() {
//		var sp trace.Span
//		ctx, sp = tracing.Start(ctx, tracing.SpanPluginCall, attribute.String(...))
//		defer tracing.End(sp, outcome)
//	}
//
// Spans never carry argument values, results, keys or tokens: only names
// (tenant, tool, plugin, family, function, server), sizes and outcomes.
package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every aiod span.
const ScopeName = "github.com/aiodhq/aiod"

// Span names (spec/tracing.md).
const (
	SpanRequest      = "mcp.request"          // one MCP request through the method table
	SpanQuota        = "aiod.quota"           // a tenant's quotas admitting a request
	SpanGuard        = "aiod.guard"           // one guard (hook) run around a call
	SpanPluginCall   = "aiod.plugin.call"     // a plugin running one operation
	SpanInstanceWait = "aiod.plugin.instance" // waiting for (or making) an instance
	SpanPluginRun    = "aiod.plugin.run"      // the guest running the operation
	SpanUpstreamCall = "aiod.upstream.call"   // a tools/call sent to an upstream server
	// a host family call is named "aiod.hostfn <module>.<function>"
	// (HostfnSpanName), e.g. "aiod.hostfn aiod:upstream.call_tool"
)

// Attribute keys.
const (
	AttrMethod   = attribute.Key("mcp.method.name")
	AttrTenant   = attribute.Key("aiod.tenant")
	AttrTool     = attribute.Key("aiod.tool")
	AttrPlugin   = attribute.Key("aiod.plugin")
	AttrOutcome  = attribute.Key("aiod.outcome")
	AttrFamily   = attribute.Key("aiod.hostfn.family")
	AttrFunction = attribute.Key("aiod.hostfn.function")
	AttrServer   = attribute.Key("aiod.upstream.server")
	AttrQuota    = attribute.Key("aiod.quota")
	AttrGuard    = attribute.Key("aiod.guard")
	AttrVia      = attribute.Key("aiod.via")
	AttrBytes    = attribute.Key("aiod.result_bytes")
)

// HostfnSpanName is the span name of a host family function.
func HostfnSpanName(module, function string) string { return "aiod.hostfn " + module + "." + function }

var (
	on     atomic.Bool
	tracer atomic.Pointer[trace.Tracer]
	prop   = propagation.TraceContext{}
)

// Enable starts tracing with tp; Disable ends it.
func Enable(tp trace.TracerProvider) {
	t := tp.Tracer(ScopeName)
	tracer.Store(&t)
	on.Store(true)
}

// Disable stops making spans.
func Disable() { on.Store(false) }

// On reports whether spans are made.
func On() bool { return on.Load() }

// Start starts a span (internal kind unless kind says otherwise). Call it
// only when On.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return StartKind(ctx, name, trace.SpanKindInternal, attrs...)
}

// StartKind starts a span of kind.
func StartKind(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return (*t).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// End ends sp with its outcome: a success ("ok", a quota's "admitted", a
// guard's "allowed", "rewritten" or "added") leaves the status unset,
// anything else marks the span an error with the outcome as its
// description.
func End(sp trace.Span, outcome string) {
	sp.SetAttributes(AttrOutcome.String(outcome))
	switch outcome {
	case "ok", "admitted", "allowed", "rewritten", "added":
	default:
		sp.SetStatus(codes.Error, outcome)
	}
	sp.End()
}

// getter reads a header.
type getter func(string) string

func (g getter) Get(k string) string { return g(k) }
func (g getter) Set(string, string)  {}
func (g getter) Keys() []string      { return []string{"traceparent", "tracestate"} }

// Extract continues the trace context get gives (traceparent and
// tracestate, from HTTP headers or an MCP request's _meta): ctx unchanged
// when there is none or it is malformed.
func Extract(ctx context.Context, get func(key string) string) context.Context {
	return prop.Extract(ctx, getter(get))
}

// Inject writes ctx's span context into h (traceparent, tracestate), when
// ctx has one.
func Inject(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// metaTrace is the trace context an MCP request's params carry in _meta.
type metaTrace struct {
	Meta struct {
		Traceparent string `json:"traceparent"`
		Tracestate  string `json:"tracestate"`
	} `json:"_meta"`
}

// FromParams continues the trace context of an MCP request's params
// (_meta.traceparent, _meta.tracestate), ctx unchanged when they carry
// none. The params are decoded only when they name a traceparent.
func FromParams(ctx context.Context, params []byte) context.Context {
	if !bytes.Contains(params, []byte(`"traceparent"`)) {
		return ctx
	}
	var m metaTrace
	if json.Unmarshal(params, &m) != nil || m.Meta.Traceparent == "" {
		return ctx
	}
	return Extract(ctx, func(k string) string {
		switch k {
		case "traceparent":
			return m.Meta.Traceparent
		case "tracestate":
			return m.Meta.Tracestate
		}
		return ""
	})
}

// FromBody is FromParams for a whole JSON-RPC message (its params).
func FromBody(ctx context.Context, body []byte) context.Context {
	if !bytes.Contains(body, []byte(`"traceparent"`)) {
		return ctx
	}
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ctx
	}
	return FromParams(ctx, m.Params)
}

// Continue is the context a request's span starts from: ctx when it is in
// a trace already (a call a program made inside a traced call), else the
// trace context of the request's _meta, else that of its HTTP headers
// (header may be nil).
func Continue(ctx context.Context, params []byte, header func(string) string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if c := FromParams(ctx, params); c != ctx {
		return c
	}
	if header != nil {
		return Extract(ctx, header)
	}
	return ctx
}
