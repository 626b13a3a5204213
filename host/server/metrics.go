package server

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

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
	calls   *counters
	latency *prometheus.HistogramVec
	quota   *counters
	// observers are latency's series of the methods the method table
	// serves, each resolved by its first request (so /metrics lists the
	// series of the methods served, as before): WithLabelValues checks,
	// hashes and looks up its label under a lock on every call
	observers [len(servedMethods)]atomic.Pointer[prometheus.Observer]
}

// servedMethods are the methods whose latency series Metrics keeps
// resolved (methodSlot); another method's is looked up each time.
var servedMethods = [...]string{"tools/call", "tools/list", "prompts/get", "prompts/list", "resources/read",
	"resources/list", "resources/templates/list", "completion/complete", "ping"}

// methodSlot is method's index in servedMethods, -1 when it is not one.
func methodSlot(method string) int {
	switch method {
	case "tools/call":
		return 0
	case "tools/list":
		return 1
	case "prompts/get":
		return 2
	case "prompts/list":
		return 3
	case "resources/read":
		return 4
	case "resources/list":
		return 5
	case "resources/templates/list":
		return 6
	case "completion/complete":
		return 7
	case "ping":
		return 8
	}
	return -1
}

// observe records one request of method that took d.
func (m *Metrics) observe(method string, d time.Duration) {
	i := methodSlot(method)
	if i < 0 {
		m.latency.WithLabelValues(method).Observe(d.Seconds())
		return
	}
	o := m.observers[i].Load()
	if o == nil {
		ob := m.latency.WithLabelValues(servedMethods[i])
		o = &ob
		m.observers[i].Store(o)
	}
	(*o).Observe(d.Seconds())
}

// clockBase anchors the middleware's clock: time.Since of it reads the
// monotonic clock alone, where time.Now reads the wall clock too.
var clockBase = time.Now()

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
	m.calls = newCounters("aiod_mcp_requests_total", "MCP requests served, by tenant, method, tool (or prompt, resource) and outcome.",
		"tenant", "method", "tool", "outcome")
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aiod_mcp_request_duration_seconds",
		Help: "Time to serve an MCP request, by method.", Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
		[]string{"method"})
	m.quota = newCounters("aiod_quota_rejections_total", "Requests refused because their tenant was at a quota, by tenant and quota.",
		"tenant", "quota")
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
			start := time.Since(clockBase)
			res, err := next(ctx, req)
			m.observe(req.Method, time.Since(clockBase)-start)
			out, _ := audit.Classify(ctx, req, res, err)
			name := req.Name
			if out == audit.Denied {
				name = "" // a name the tenant may not use is not a label it can grow
			}
			t := req.Owner()
			if tt := tenant.FromContext(ctx); tt != nil {
				t = tt.Name
			}
			m.calls.inc(t, req.Method, name, string(out))
			return res, err
		}
	}
}

// quotaRejected counts a refusal.
func (m *Metrics) quotaRejected(e *tenant.QuotaError) {
	if m != nil {
		m.quota.inc(e.Tenant, e.Quota, "", "")
	}
}

func (s *Server) routeMetrics(m *Metrics) {
	s.app.Get(metricsPath, adaptor.HTTPHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})))
}

// counters is a counter vector of up to four labels kept compact: one map
// of values (no allocation per series but the map's own growth) and label
// values interned once per distinct string. A client_golang CounterVec
// allocates about ten objects per series (the label pairs, the values,
// the counter, its creation time) and keeps the request's own strings:
// with a series per tenant, those small long-lived objects, allocated among
// the short-lived ones of the tenant's first call, kept their spans in use
// after every instance was evicted (BENCHMARKS.md "Tenant density").
type counters struct {
	desc   *prometheus.Desc
	labels int
	mu     sync.Mutex
	index  map[[4]string]int // the series' place in keys and counts
	keys   [][4]string       // each series' interned label values
	counts []uint64
	last   int               // the series counted last (-1: none): most requests count the same series as the one before
	names  map[string]string // interned label values, in arena
	arena  []byte            // never written below its length once a string is in it
}

func newCounters(name, help string, labels ...string) *counters {
	return &counters{desc: prometheus.NewDesc(name, help, labels, nil), labels: len(labels),
		index: map[[4]string]int{}, last: -1, names: map[string]string{}}
}

// inc adds one to the series of the label values (the unused ones "").
// The series counted last is compared before the map is hashed.
func (c *counters) inc(a, b, d, e string) {
	k := [4]string{a, b, d, e}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last >= 0 && c.keys[c.last] == k {
		c.counts[c.last]++
		return
	}
	i, ok := c.index[k]
	if !ok {
		for j, v := range k {
			k[j] = c.intern(v)
		}
		i = len(c.counts)
		c.keys = append(c.keys, k)
		c.counts = append(c.counts, 0)
		c.index[k] = i
	}
	c.counts[i]++
	c.last = i
}

// intern returns v's interned copy, made once, in a shared block of bytes:
// a string each would be a small object per tenant, allocated among its
// first call's garbage, each keeping a span of the heap in use.
func (c *counters) intern(v string) string {
	if in, ok := c.names[v]; ok {
		return in
	}
	if len(v) > cap(c.arena)-len(c.arena) {
		c.arena = make([]byte, 0, max(4096, len(v)))
	}
	off := len(c.arena)
	c.arena = append(c.arena, v...)
	in := unsafe.String(unsafe.SliceData(c.arena[off:]), len(v))
	c.names[in] = in
	return in
}

func (c *counters) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *counters) Collect(ch chan<- prometheus.Metric) {
	type series struct {
		k [4]string
		v uint64
	}
	c.mu.Lock()
	all := make([]series, len(c.counts))
	for i, k := range c.keys {
		all[i] = series{k, c.counts[i]}
	}
	c.mu.Unlock()
	for _, s := range all {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(s.v), s.k[:c.labels]...)
	}
}
