package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/aiodhq/aiod/host/internal/tracing"
)

// TestTraceOut: with tracing on, a call's span context goes out as the
// traceparent header and in the forwarded call's _meta (the members it had
// kept); off, nothing is added.
func TestTraceOut(t *testing.T) {
	req, _ := http.NewRequest("POST", "http://127.0.0.1:1/mcp", nil)
	if withTrace(req) != req || string(metaWithTrace(context.Background(), []byte(`{}`))) != `{}` {
		t.Fatal("tracing off changed the request")
	}
	tp := sdktrace.NewTracerProvider()
	tracing.Enable(tp)
	defer tracing.Disable()
	ctx, sp := startCall(context.Background(), "b", "echo")
	defer sp.End()
	want := "00-" + sp.SpanContext().TraceID().String() + "-" + sp.SpanContext().SpanID().String() + "-01"
	if got := withTrace(req.WithContext(ctx)).Header.Get("traceparent"); got != want {
		t.Fatalf("header %q, want %q", got, want)
	}
	if req.Header.Get("traceparent") != "" {
		t.Fatal("the caller's request was changed")
	}
	for _, meta := range []string{`{}`, ` {"io.modelcontextprotocol/protocolVersion":"2026-07-28"} `} {
		var m map[string]any
		if err := json.Unmarshal(metaWithTrace(ctx, []byte(meta)), &m); err != nil || m["traceparent"] != want {
			t.Fatalf("%s: %v %v", meta, m, err)
		}
		if len(meta) > 2 && m["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
			t.Fatalf("%s: a member lost: %v", meta, m)
		}
	}
	if got := string(metaWithTrace(ctx, []byte(`null`))); got != `null` {
		t.Fatalf("a _meta that is not an object: %s", got)
	}
}
