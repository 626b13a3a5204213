package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/tenant"
)

// CodeQuota is the JSON-RPC error code of a request refused over a quota
// (HTTP 429, with Retry-After); data names the quota.
const CodeQuota = -32029

// routeTenancy adds the routes of tenancy: the OAuth resource metadata
// and the metrics, each when configured.
func (s *Server) routeTenancy() {
	if s.opts.OAuth != nil {
		s.routeOAuth(s.opts.OAuth)
	}
	if s.opts.Metrics != nil && s.opts.Admin != nil && s.opts.Admin.Key != "" {
		s.routeMetrics(s.opts.Metrics)
	}
}

// principal is who the guard found calling.
func principal(c *fiber.Ctx) mcp.Principal {
	if t := tenantOf(c); t != nil {
		return mcp.Principal{Owner: t.Name}
	}
	return mcp.Principal{}
}

// admit takes a request slot of the caller's tenant for a POST; release is
// nil when the request was refused (and answered: 429, Retry-After and a
// JSON-RPC error naming the quota, err being what to return). GET streams
// and DELETE take no slot; nor do a subscriptions/listen stream and the
// requests that steer a task (slotless): they take only a rate token.
func (s *Server) admit(c *fiber.Ctx) (release func(), err error) {
	t := tenantOf(c)
	if c.Method() != fiber.MethodPost || t == nil {
		return func() {}, nil
	}
	admit := t.Admit
	if slotless(c) {
		admit = t.AdmitRate
	}
	rel, qe := admit()
	if tracing.On() {
		traceQuota(c, t, qe)
	}
	if qe == nil {
		return rel, nil
	}
	s.opts.Metrics.quotaRejected(qe)
	method, tool, id := peek(c.Body())
	_ = s.opts.Audit.Write(audit.Entry{Tenant: t.Name, Session: string(c.Request().Header.Peek("Mcp-Session-Id")),
		Method: method, Tool: tool, Outcome: audit.Quota, Quota: qe.Quota})
	c.Status(fiber.StatusTooManyRequests)
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(qe.RetryAfterSeconds()))
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": CodeQuota, "message": qe.Error(),
		"data": map[string]any{"quota": qe.Quota, "limit": qe.Limit, "retryAfterSeconds": qe.RetryAfterSeconds()}}})
	return nil, c.Send(body)
}

// Hold is the request's mcp.Exchange.Hold: it hands the request's slot's
// release to the caller, once, and leaves nil behind so that the handler
// does not give it back when the response is written.
func (m *mcpRequest) Hold() func() {
	r := m.release
	m.release = nil
	if r == nil {
		return func() {}
	}
	return r
}

// slotless reports whether c is a request that takes no concurrent_calls
// slot, only a calls_per_minute token:
//   - tasks/get, tasks/update, tasks/cancel steer a task that holds its
//     tenant's slot already (mcp.Exchange.Hold); else a tenant at its
//     quota could neither poll nor cancel its own task;
//   - subscriptions/listen opens a stream that lives as long as the client
//     listens, doing no work of its own: held for its whole life, a slot
//     would let one open stream and concurrent_calls=1 stop every call (a
//     legacy GET stream takes none either).
//
// The Mcp-Method header (required in the 2026-07-28 era, where alone these
// methods exist, and checked against the body) picks the candidates
// without parsing every body; the body's method decides.
func slotless(c *fiber.Ctx) bool {
	switch string(c.Request().Header.Peek("Mcp-Method")) {
	case "tasks/get", "tasks/update", "tasks/cancel", "subscriptions/listen":
	default:
		return false
	}
	switch method, _, _ := peek(c.Body()); method {
	case "tasks/get", "tasks/update", "tasks/cancel", "subscriptions/listen":
		return true
	}
	return false
}

// peek reads the method, the tool name and the id of a single JSON-RPC
// message, for the answer and the audit line of a refused request.
func peek(body []byte) (method, name string, id json.RawMessage) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "", "", nil
	}
	if len(m.ID) == 0 || (m.ID[0] != '"' && (m.ID[0] < '0' || m.ID[0] > '9') && m.ID[0] != '-') {
		m.ID = nil
	}
	return m.Method, m.Params.Name, m.ID
}

// auditOutside writes the audit line of a request the method table does
// not serve, and so its audit middleware does not see: initialize and the
// notifications a client posts. A required log that cannot be written
// refuses the request (503, a JSON-RPC error) instead of its answer.
func (s *Server) auditOutside(c *fiber.Ctx, start time.Time, r *mcp.Response) error {
	body := c.Body()
	if !bytes.Contains(body, []byte(`"initialize"`)) && !bytes.Contains(body, []byte(`"notifications/`)) {
		return nil
	}
	method, _, _ := peek(body)
	if method != "initialize" && !strings.HasPrefix(method, "notifications/") {
		return nil
	}
	e := audit.Entry{Time: start.UTC(), Tenant: plugin.DefaultOwner, Method: method,
		Session:    string(c.Request().Header.Peek("Mcp-Session-Id")),
		DurationMs: float64(time.Since(start).Microseconds()) / 1000, Outcome: audit.OK, ResultBytes: len(r.Body)}
	if t := tenantOf(c); t != nil {
		e.Tenant = t.Name
	}
	for _, h := range r.Header {
		if e.Session == "" && strings.EqualFold(h.Name, "Mcp-Session-Id") {
			e.Session = h.Value
		}
	}
	if r.Status >= 400 {
		e.Outcome = audit.ProtocolError
	}
	if err := s.opts.Audit.Write(e); err != nil && s.opts.Audit.Required() {
		c.Status(fiber.StatusServiceUnavailable)
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(rpcErrorBody(-32603, audit.ErrUnavailable.Error()))
	}
	return nil
}

// traceQuota records the quota decision on a request of a tenant with a
// rate or concurrency quota, in the trace the request continues.
func traceQuota(c *fiber.Ctx, t *tenant.Tenant, qe *tenant.QuotaError) {
	if q := t.Quotas(); q.ConcurrentCalls == 0 && q.CallsPerMinute == 0 {
		return
	}
	ctx := tracing.FromBody(context.Background(), c.Body())
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = tracing.Extract(ctx, func(k string) string { return string(c.Request().Header.Peek(k)) })
	}
	_, sp := tracing.Start(ctx, tracing.SpanQuota, tracing.AttrTenant.String(t.Name))
	outcome := "admitted"
	if qe != nil {
		outcome = "refused"
		sp.SetAttributes(tracing.AttrQuota.String(qe.Quota))
	}
	tracing.End(sp, outcome)
}
