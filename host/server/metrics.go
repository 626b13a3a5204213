package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
)

// metricsPath serves the Prometheus metrics, behind the admin key only.
const metricsPath = "/metrics"

// Metrics are the host's Prometheus metrics (GET /metrics). Counters are
// fed by Middleware (every request the method table serves) and by the
// server (quota refusals); gauges are read from the host when scraped
// (MetricsSources).
type Metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	quota   *prometheus.CounterVec
}

// MetricsSources are the host's numbers read at each scrape; a nil func
// leaves its metric out.
type MetricsSources struct {
	// WarmInstances is the idle warm instances, by tenant.
	WarmInstances func() map[string]int
	// Sessions is the live legacy MCP sessions.
	Sessions func() int
	// ProcessUnits is the live process sessions (bash sessions and the
	// like).
	ProcessUnits func() int
	// LoadErrors is the plugins that failed to load.
	LoadErrors func() int
	// Browser reports whether the browser plane is ready.
	Browser func(ctx context.Context) bool
	// Upstreams reports each upstream MCP server's reachability.
	Upstreams func(ctx context.Context) map[string]bool
}

// NewMetrics returns the metrics, with the Go runtime and process
// collectors and the host's gauges from src.
func NewMetrics(src MetricsSources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aiod_mcp_requests_total",
		Help: "MCP requests served, by tenant, method, tool (or prompt, resource) and outcome."},
		[]string{"tenant", "method", "tool", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aiod_mcp_request_duration_seconds",
		Help: "Time to serve an MCP request, by method.", Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
		[]string{"method"})
	m.quota = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aiod_quota_rejections_total",
		Help: "Requests refused because their tenant was at a quota, by tenant and quota."}, []string{"tenant", "quota"})
	m.reg.MustRegister(m.calls, m.latency, m.quota, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, f func() int) {
		if f != nil {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f()) }))
		}
	}
	gauge("aiod_mcp_sessions", "Live legacy MCP sessions.", src.Sessions)
	gauge("aiod_process_units", "Live process sessions (bash sessions and the like).", src.ProcessUnits)
	gauge("aiod_plugin_load_errors", "Plugins that failed to load in the current catalogue.", src.LoadErrors)
	if src.Browser != nil {
		gauge("aiod_browser_up", "1 when the browser plane is ready.", func() int {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return b2i(src.Browser(ctx))
		})
	}
	m.reg.MustRegister(&mapCollector{desc: prometheus.NewDesc("aiod_warm_instances", "Idle warm plugin instances, by tenant.", []string{"tenant"}, nil),
		f: func(context.Context) map[string]float64 { return toF(src.WarmInstances) }})
	if src.Upstreams != nil {
		m.reg.MustRegister(&mapCollector{desc: prometheus.NewDesc("aiod_upstream_up", "1 when the upstream MCP server answered its last tools/list.", []string{"server"}, nil),
			f: func(ctx context.Context) map[string]float64 {
				out := map[string]float64{}
				for k, v := range src.Upstreams(ctx) {
					out[k] = float64(b2i(v))
				}
				return out
			}})
	}
	return m
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func toF(f func() map[string]int) map[string]float64 {
	out := map[string]float64{}
	if f == nil {
		return out
	}
	for k, v := range f() {
		out[k] = float64(v)
	}
	return out
}

// mapCollector is a gauge with one label whose values are read at scrape.
type mapCollector struct {
	desc *prometheus.Desc
	f    func(ctx context.Context) map[string]float64
}

func (c *mapCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *mapCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for k, v := range c.f(ctx) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, k)
	}
}

// Middleware counts every request the method table serves and times it;
// it sits inside tenant.Set.Middleware.
func (m *Metrics) Middleware() mcp.Middleware {
	return func(next mcp.Handler) mcp.Handler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			start := time.Now()
			res, err := next(ctx, req)
			m.latency.WithLabelValues(req.Method).Observe(time.Since(start).Seconds())
			out, _ := audit.Classify(ctx, req, res, err)
			name := req.Name
			if out == audit.Denied {
				name = "" // a name the tenant may not use is not a label it can grow
			}
			t := req.Owner()
			if tt := tenant.FromContext(ctx); tt != nil {
				t = tt.Name
			}
			m.calls.WithLabelValues(t, req.Method, name, string(out)).Inc()
			return res, err
		}
	}
}

// quotaRejected counts a refusal.
func (m *Metrics) quotaRejected(e *tenant.QuotaError) {
	if m != nil {
		m.quota.WithLabelValues(e.Tenant, e.Quota).Inc()
	}
}

func (s *Server) routeMetrics(m *Metrics) {
	s.app.Get(metricsPath, adaptor.HTTPHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})))
}
