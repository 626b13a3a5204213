package hooks

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/internal/tracing"
)

// startGuard starts the span of one hook's decision about a call (nil
// when tracing is off).
func startGuard(ctx context.Context, st *step, phase, tenant, tool string) (context.Context, trace.Span) {
	if !tracing.On() {
		return ctx, nil
	}
	kind := "command"
	if st.guard {
		kind = "plugin"
	}
	return tracing.Start(ctx, tracing.SpanGuard, tracing.AttrGuard.String(st.label()), attribute.String("aiod.guard.kind", kind),
		attribute.String("aiod.guard.phase", phase), tracing.AttrTenant.String(tenant), tracing.AttrTool.String(tool))
}

// endGuard ends a guard span with its decision: allowed, blocked,
// rewritten (the arguments or the result changed) or added (a command's
// text added to the result).
func endGuard(sp trace.Span, outcome string) {
	if sp != nil {
		tracing.End(sp, outcome)
	}
}
