package tracing

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	tp      = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
)

// TestContinue: _meta wins over the headers; a context already in a trace
// is kept (a program's inner call); malformed values are ignored.
func TestContinue(t *testing.T) {
	hdr := func(v string) func(string) string {
		return func(k string) string {
			if k == "traceparent" {
				return v
			}
			return ""
		}
	}
	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	cases := []struct {
		name, params string
		header       func(string) string
		want         string
	}{
		{"meta", `{"_meta":{"traceparent":"` + tp + `"}}`, hdr(other), traceID},
		{"header", `{"name":"echo"}`, hdr(tp), traceID},
		{"nil header", `{}`, nil, ""},
		{"malformed meta, header", `{"_meta":{"traceparent":"00-zz-<script>-01"}}`, hdr(tp), traceID},
		{"all-zero trace id", `{"_meta":{"traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}}`, nil, ""},
		{"not an object", `["traceparent"]`, nil, ""},
		{"meta not an object", `{"_meta":"traceparent"}`, nil, ""},
	}
	for _, c := range cases {
		got := trace.SpanContextFromContext(Continue(context.Background(), []byte(c.params), c.header))
		if (c.want == "" && got.IsValid()) || (c.want != "" && got.TraceID().String() != c.want) {
			t.Errorf("%s: trace %v valid %v, want %q", c.name, got.TraceID(), got.IsValid(), c.want)
		}
	}
	in := Continue(context.Background(), []byte(`{"_meta":{"traceparent":"`+other+`"}}`), nil)
	if got := trace.SpanContextFromContext(Continue(in, []byte(`{"_meta":{"traceparent":"`+tp+`"}}`), nil)); got.TraceID().String() == traceID {
		t.Fatal("a context in a trace was moved to the request's")
	}
	if got := trace.SpanContextFromContext(FromBody(context.Background(), []byte(`{"jsonrpc":"2.0","params":{"_meta":{"traceparent":"`+tp+`"}}}`))); got.TraceID().String() != traceID {
		t.Fatalf("FromBody: %v", got.TraceID())
	}
}

// TestOffAndOn: off, nothing is made; on, spans nest and Inject writes the
// traceparent of the current span.
func TestOffAndOn(t *testing.T) {
	if On() {
		t.Fatal("on before Enable")
	}
	rec := tracetest.NewSpanRecorder()
	tpv := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	Enable(tpv)
	defer Disable()
	ctx, sp := Start(context.Background(), SpanPluginCall, AttrPlugin.String("echo"))
	_, child := Start(ctx, SpanPluginRun)
	End(child, "trap")
	h := http.Header{}
	Inject(ctx, h)
	End(sp, "ok")
	if !strings.Contains(h.Get("traceparent"), sp.SpanContext().SpanID().String()) {
		t.Fatalf("traceparent %q does not name the span", h.Get("traceparent"))
	}
	ended := rec.Ended()
	if len(ended) != 2 || ended[0].Parent().SpanID() != ended[1].SpanContext().SpanID() || ended[0].Status().Description != "trap" {
		t.Fatalf("spans: %+v", ended)
	}
	Disable()
	if On() {
		t.Fatal("on after Disable")
	}
	h = http.Header{}
	Inject(context.Background(), h)
	if len(h) != 0 {
		t.Fatalf("Inject without a span wrote %v", h)
	}
}

// FuzzContinue: whatever a client sends as params or header, Continue
// does not panic, and a trace it continues is one whose id the input
// spells.
func FuzzContinue(f *testing.F) {
	f.Add([]byte(`{"_meta":{"traceparent":"`+tp+`","tracestate":"a=b"}}`), tp)
	f.Add([]byte(`{"_meta":{"traceparent":"00-zz-<script>-01"}}`), "ff-"+traceID+"-00f067aa0ba902b7-01")
	f.Add([]byte(`{"_meta":{"traceparent":null}}`), "")
	f.Fuzz(func(t *testing.T, params []byte, header string) {
		ctx := Continue(context.Background(), params, func(k string) string {
			if k == "traceparent" {
				return header
			}
			return ""
		})
		sc := trace.SpanContextFromContext(ctx)
		// (a JSON escape can spell the id other ways: not checked then)
		if sc.IsValid() && !strings.Contains(string(params), `\`) && !strings.Contains(strings.ToLower(string(params)+header), sc.TraceID().String()) {
			t.Fatalf("trace %s continued from input that does not spell it", sc.TraceID())
		}
	})
}
