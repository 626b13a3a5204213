package host

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/internal/tracing/otlp"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
)

// provisionTracing starts the trace export when the endpoint or the
// OTEL_ variables ask for it (spec/tracing.md); Close flushes it.
func (h *Host) provisionTracing(ctx context.Context, endpoint string) error {
	shutdown, err := otlp.Start(ctx, otlp.Options{Endpoint: endpoint, Version: Version})
	if err != nil {
		return err
	}
	if tracing.On() {
		h.log.Info("tracing on: spans exported over OTLP/HTTP")
	}
	h.built(shutdown)
	return nil
}

// traceRequests is the middleware of the MCP request spans: each request
// the method table serves is a server span named by its method (and the
// tool, prompt or resource it addresses), in the trace its _meta or its
// HTTP headers carry, or in the caller's for a call a program made.
// Installed only when tracing is on.
func traceRequests(next mcp.Handler) mcp.Handler {
	return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
		ctx = tracing.Continue(ctx, req.Params, req.TraceHeader)
		name := req.Method
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs, tracing.AttrMethod.String(req.Method))
		if req.Name != "" && (req.Method == "tools/call" || req.Method == "prompts/get") {
			name += " " + req.Name
			attrs = append(attrs, tracing.AttrTool.String(req.Name))
		}
		if t := tenant.FromContext(ctx); t != nil {
			attrs = append(attrs, tracing.AttrTenant.String(t.Name))
		}
		if req.Via != "" {
			attrs = append(attrs, tracing.AttrVia.String(req.Via))
		}
		ctx, sp := tracing.StartKind(ctx, name, trace.SpanKindServer, attrs...)
		res, err := next(ctx, req)
		outcome, code := audit.Classify(ctx, req, res, err)
		if code != 0 {
			sp.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", code))
		}
		sp.SetAttributes(tracing.AttrBytes.Int(len(res)))
		tracing.End(sp, string(outcome))
		return res, err
	}
}
