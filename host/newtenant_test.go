package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

// BenchmarkNewTenantHTTP (BENCHMARKS.md, "Instances from snapshots"): the
// first call over HTTP of tenants never seen before, each calling the Go
// echo plugin once (its module compiled, no instance of theirs), as the
// client sees it (request written to answer read, keep-alive). Each case
// is a new host whose module has served two tenants and whose spares are
// full before the timed tenants come:
//
//   - burst: AIOD_NEW_TENANTS tenants (default 600) one after another as
//     fast as the client goes, with AIOD_NEW_TENANT_SPARES spares (default
//     host.DefaultSnapshotSpares) and with one: a tenant that finds none
//     runs its own initialisation (the isolation rule: two tenants never
//     share a snapshot);
//   - paced-Nms: AIOD_PACED_TENANTS tenants (default 100), one every N ms:
//     the rate the refill keeps up with; halfway between two of them the
//     known tenant calls once, the HTTP path after the same idle gap (the
//     machine's wake-up from idle is in both);
//   - scratch: the burst with snapshots off.
//
// Each reports the median and the 90th percentile of the first calls, and
// the median of a known tenant's echo on the same host (the HTTP path
// without any instance to make), taken before the tenants come.
//
//	go test ./host -run '^$' -bench NewTenantHTTP -benchtime 1x
func BenchmarkNewTenantHTTP(b *testing.B) {
	burst, paced := envInt("AIOD_NEW_TENANTS", 600), envInt("AIOD_PACED_TENANTS", 100)
	spares := envInt("AIOD_NEW_TENANT_SPARES", host.DefaultSnapshotSpares)
	type tc struct {
		name    string
		tenants int
		gap     time.Duration
		spares  int
		noSnaps bool
	}
	cases := []tc{
		{name: fmt.Sprintf("burst-%dspares", spares), tenants: burst, spares: spares},
		{name: "burst-1spare", tenants: burst, spares: 1},
		{name: "paced-20ms", tenants: paced, gap: 20 * time.Millisecond, spares: spares},
		{name: "paced-5ms", tenants: paced, gap: 5 * time.Millisecond, spares: spares},
		{name: "scratch", tenants: burst, noSnaps: true},
	}
	plugins := filepath.Join(b.TempDir(), "plugins")
	os.Mkdir(plugins, 0o755)
	testplugins.Package(b, plugins, "plugins/examples/echo", nil, nil)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			// two warm-up tenants and the timed ones
			pol := filepath.Join(b.TempDir(), "policy.json")
			if err := os.WriteFile(pol, []byte(tenantsPolicy(c.tenants+2)), 0o600); err != nil {
				b.Fatal(err)
			}
			url := startBench(b, host.Config{PluginsDir: plugins, PolicyFile: pol, IdleTimeout: 10 * time.Minute,
				NoSnapshots: c.noSnaps, SnapshotSpares: c.spares}) + "/mcp"
			echo := call("echo", `{"text":"hi"}`)
			first := func(i int) time.Duration {
				t0 := time.Now()
				r := do(b, "POST", url, fmt.Sprintf("key-%d", i), echo, nil)
				d := time.Since(t0)
				if r.status != 200 || !strings.Contains(r.body, `"hi"`) {
					b.Fatalf("tenant %d: %d %s", i, r.status, r.body)
				}
				return d
			}
			// The module serves two tenants (the spares start after the
			// second), then the known tenant's calls, while the spares
			// fill (c.spares captures of a few ms each).
			first(0)
			first(1)
			warm := make([]time.Duration, 0, 200)
			for deadline := time.Now().Add(time.Second); len(warm) < 200 || time.Now().Before(deadline); {
				warm = append(warm, first(0))
			}
			time.Sleep(time.Duration(c.spares)*50*time.Millisecond + 200*time.Millisecond)
			took := make([]time.Duration, 0, c.tenants)
			var paced []time.Duration
			b.ResetTimer()
			next := time.Now()
			for i := range c.tenants {
				if c.gap > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(c.gap)
				}
				took = append(took, first(2+i))
				if c.gap > 0 { // a known tenant's call halfway to the next new one
					time.Sleep(time.Until(next.Add(-c.gap / 2)))
					paced = append(paced, first(0))
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(quantile(took, 0.5)), "first-ms/p50")
			b.ReportMetric(ms(quantile(took, 0.9)), "first-ms/p90")
			b.ReportMetric(ms(quantile(warm, 0.5)), "known-ms/p50")
			if c.gap > 0 {
				b.ReportMetric(ms(quantile(paced, 0.5)), "known-paced-ms/p50")
				b.ReportMetric(float64(time.Second/c.gap), "tenants/s")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// quantile returns the q-th quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// tenantsPolicy is a policy of n tenants t0..t(n-1), each with the key
// key-i and the echo tool.
func tenantsPolicy(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"tenants":{`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"t%d":{"keys":["%s"],"tools":["echo"]}`, i, keyLine(fmt.Sprintf("key-%d", i)))
	}
	sb.WriteString(`}}`)
	return sb.String()
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
