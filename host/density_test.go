package host_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

// rssMiB is this process's resident set, from /proc/self/status.
func rssMiB(tb testing.TB) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}

func settle(tb testing.TB) float64 {
	runtime.GC()
	debug.FreeOSMemory()
	return rssMiB(tb)
}

// BenchmarkTenantDensity (BENCHMARKS.md "Tenant density"): N tenants
// (AIOD_DENSITY_TENANTS, default 1000) each make one echo call, which
// leaves one warm echo instance per tenant; then all go idle until the
// instances are evicted. It reports the RSS at start, with every tenant's
// instance warm, and after eviction, and the warm instances per GiB.
//
//	go test ./host -run '^$' -bench TenantDensity -benchtime 1x
func BenchmarkTenantDensity(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("AIOD_DENSITY_TENANTS")); err == nil && v > 0 {
		n = v
	}
	var sb strings.Builder
	sb.WriteString(`{"tenants":{`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"t%d":{"keys":["%s"],"tools":["echo"]}`, i, keyLine(fmt.Sprintf("key-%d", i)))
	}
	sb.WriteString(`}}`)
	dir := b.TempDir()
	pol := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(pol, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	plugins := filepath.Join(dir, "plugins")
	os.Mkdir(plugins, 0o755)
	testplugins.Package(b, plugins, "plugins/examples/echo", nil, nil)
	// Instances must stay warm until every tenant has called (a first
	// call takes tens of ms on a loaded 2-core VM), and then go idle.
	idle := max(10*time.Second, time.Duration(n)*100*time.Millisecond)
	url := startBench(b, host.Config{PluginsDir: plugins, PolicyFile: pol, IdleTimeout: idle}) + "/mcp"
	// warm the HTTP path and one instance before the baseline
	do(b, "POST", url, "key-0", call("echo", `{"text":"warm"}`), nil)
	start := settle(b)
	var msStart runtime.MemStats
	runtime.ReadMemStats(&msStart)
	heapProfile(b, "start")
	b.ResetTimer()
	began := time.Now()
	for i := range n {
		r := do(b, "POST", url, fmt.Sprintf("key-%d", i), call("echo", `{"text":"hi"}`), nil)
		if r.status != 200 || !strings.Contains(r.body, `"hi"`) {
			b.Fatalf("tenant %d: %d %s", i, r.status, r.body)
		}
	}
	took := time.Since(began)
	b.StopTimer()
	warm := settle(b)
	// a warm call, for comparison with a tenant's first
	wbegan := time.Now()
	for range 50 {
		do(b, "POST", url, "key-0", call("echo", `{"text":"hi"}`), nil)
	}
	b.ReportMetric(float64(time.Since(wbegan).Microseconds())/50, "us/warm-call")
	deadline := time.Now().Add(2*idle + time.Minute)
	var after float64
	for {
		time.Sleep(idle)
		after = settle(b)
		if after <= start*1.10 || time.Now().After(deadline) {
			break
		}
	}
	// where the RSS left after eviction is, as the Go runtime counts it
	// (read before the profile, whose own garbage it would count)
	var msIdle runtime.MemStats
	runtime.ReadMemStats(&msIdle)
	heapProfile(b, "idle")
	liveBySize(&msStart, &msIdle)
	mib := func(a, b uint64) float64 { return (float64(a) - float64(b)) / (1 << 20) }
	b.ReportMetric(mib(msIdle.HeapInuse, msStart.HeapInuse), "idle-heap-inuse-MiB")
	b.ReportMetric(mib(msIdle.StackInuse, msStart.StackInuse), "idle-stacks-MiB")
	b.ReportMetric(mib(msIdle.MSpanInuse+msIdle.GCSys+msIdle.OtherSys, msStart.MSpanInuse+msStart.GCSys+msStart.OtherSys), "idle-runtime-meta-MiB")
	per := (warm - start) / float64(n)
	b.ReportMetric(start, "rss-start-MiB")
	b.ReportMetric(warm, "rss-warm-MiB")
	b.ReportMetric(after, "rss-idle-MiB")
	b.ReportMetric(per*1024, "KiB/warm-tenant")
	b.ReportMetric(1024/per, "warm-tenants/GiB")
	b.ReportMetric(float64(took.Microseconds())/float64(n), "us/first-call")
}

// liveBySize prints, when AIOD_DENSITY_HEAP is set, the size classes whose
// count of live objects changed between start and idle: exact counts, at
// no profiling cost (a span stays in use while one object in it lives).
func liveBySize(start, idle *runtime.MemStats) {
	if os.Getenv("AIOD_DENSITY_HEAP") == "" {
		return
	}
	total := 0
	for i := range idle.BySize {
		s, e := start.BySize[i], idle.BySize[i]
		d := int(e.Mallocs-e.Frees) - int(s.Mallocs-s.Frees)
		if d != 0 {
			fmt.Fprintf(os.Stderr, "size %5d: %+d live objects\n", e.Size, d)
			total += d * int(e.Size)
		}
	}
	fmt.Fprintf(os.Stderr, "live small objects: %+d bytes; heap in use %+d bytes\n", total, int64(idle.HeapInuse)-int64(start.HeapInuse))
}

// heapProfile writes the heap profile to $AIOD_DENSITY_HEAP/name.pprof
// when that is set (to see what stays after eviction: go tool pprof
// -diff_base start.pprof idle.pprof).
func heapProfile(b *testing.B, name string) {
	dir := os.Getenv("AIOD_DENSITY_HEAP")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// startBench runs a host for a benchmark on a free loopback port once its
// plugins are compiled, and returns its base URL.
func startBench(b *testing.B, cfg host.Config) string {
	cfg.CacheDir = testplugins.CacheDir()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	if err := h.Registry().WaitLoaded(ctx); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-done; h.Close(context.Background()) })
	return "http://" + ln.Addr().String()
}
