// Package reqtrace makes the span of each MCP request (spec/tracing.md):
// a protocol-layer middleware the composition root installs when tracing
// is on. It sits above host/mcp, host/audit and host/tenant, which the
// tracing package itself (imported by them) cannot reach.
package reqtrace

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
)

// Middleware is the middleware of the MCP request spans: each request
// the method table serves is a server span named by its method (and the
// tool, prompt or resource it addresses), in the trace its _meta or its
// HTTP headers carry, or in the caller's for a call a program made.
// Installed only when tracing is on.
func Middleware(next mcp.Handler) mcp.Handler {
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
