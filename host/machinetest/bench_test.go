package machinetest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// A Machine Mode call's overhead over running the same command directly
// (make bench): docs_many emits N hits and its summary. The call goes
// over real HTTP (a legacy request without a session) through the host,
// the adapter and the process family; the direct run is the same command
// run by exec.Command with its stdout read whole. The two alternate, call
// by call (which goes first alternates too), so that both see the same
// machine; the figures are the medians of each, and the ratio is the
// ratio of the medians. CPU per call is the process's own CPU and its
// reaped children's (getrusage), the steadier figure on a loaded machine.

func BenchmarkMachineMode(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run("events="+strconv.Itoa(n), func(b *testing.B) { benchPair(b, n) })
	}
}

// cpuNow is the CPU the process and its reaped children have used.
func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func benchPair(b *testing.B, n int) {
	f := shared(b)
	_, docs := built(b)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "docs_many", "arguments": map[string]any{"count": n}}})
	summary := []byte(`"count":` + strconv.Itoa(n) + `,"ok":true`)
	viaAiod := func() {
		req, _ := http.NewRequest("POST", f.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		// read as a client that trusts Content-Length would: into a
		// buffer of that size, not doubling from 512 bytes (2 MB)
		var buf bytes.Buffer
		if resp.ContentLength > 0 {
			buf.Grow(int(resp.ContentLength) + 1)
		}
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		out := buf.Bytes()
		// the result ends with structuredContent's summary and isError
		tail := out[max(0, len(out)-256):]
		if resp.StatusCode != 200 || !bytes.Contains(tail, summary) || !bytes.HasSuffix(tail, []byte(`"isError":false}}`)) ||
			len(out) < 2*n*60 {
			b.Fatalf("status %d, %d bytes: %.300s", resp.StatusCode, len(out), tail)
		}
	}
	direct := func() {
		out, err := exec.Command(docs, "docs", "many", "--count="+strconv.Itoa(n), "--output", "jsonl").Output()
		if err != nil || !bytes.Contains(out[max(0, len(out)-128):], summary) || len(out) < n*60 {
			b.Fatalf("%v: %d bytes", err, len(out))
		}
	}
	viaAiod() // the first call instantiates the plugin
	var wall, cpu [2][]time.Duration
	measure := func(k int, fn func()) {
		c0, t0 := cpuNow(), time.Now()
		fn()
		wall[k] = append(wall[k], time.Since(t0))
		cpu[k] = append(cpu[k], cpuNow()-c0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			measure(0, viaAiod)
			measure(1, direct)
		} else {
			measure(1, direct)
			measure(0, viaAiod)
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / 1e3
	}
	a, d := med(wall[0]), med(wall[1])
	b.ReportMetric(a, "aiod-us")
	b.ReportMetric(d, "direct-us")
	b.ReportMetric(a/d, "ratio")
	b.ReportMetric(med(cpu[0]), "aiod-cpu-us")
	b.ReportMetric(med(cpu[1]), "direct-cpu-us")
}

// BenchmarkMachineModeLockdown is what lockdown adds to a Machine Mode
// call of 10 events: the same call through the registry (no HTTP, so that
// only the process path differs) on a host without lockdown and on a
// locked-down one (bubblewrap: namespaces, uid 10001, no network, the
// tenant's /workspace), alternating call by call; medians of each.
func BenchmarkMachineModeLockdown(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("no bubblewrap")
	}
	builtins, docs := built(b)
	base, err := os.MkdirTemp("/var/tmp", "aiod-machinebench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(base) })
	prog := filepath.Join(base, "bin", "aoidocs")
	os.MkdirAll(filepath.Dir(prog), 0o755)
	copyFile(b, docs, prog)
	regs := map[string]caps.MachineTool{"docs": {Command: []string{prog, "docs"}, SHA256: digest(b, prog)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hosts := make([]*host.Host, 2)
	for i, lock := range []bool{false, true} {
		cfg := host.Config{Builtins: os.DirFS(builtins), MachineTools: regs, APIKey: "bench-key",
			Browser: browser.Config{Mode: browser.Off}, CacheDir: testplugins.CacheDir(), Logger: quiet()}
		if lock {
			cfg.LockdownConfig = host.LockdownConfig{Lockdown: true, DataDir: filepath.Join(base, "data")}
			cfg.TenancyConfig = host.TenancyConfig{AuditLog: filepath.Join(base, "audit.log")}
		} else {
			cfg.Workspace = filepath.Join(base, "ws")
			os.MkdirAll(cfg.Workspace, 0o755)
		}
		h, err := host.New(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close(context.Background())
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Minute)
		err = h.Registry().WaitLoaded(lctx)
		lcancel()
		if err != nil {
			b.Fatal(err)
		}
		hosts[i] = h
	}
	args := []byte(`{"count":10}`)
	call := func(h *host.Host) {
		out, err := h.Registry().CallTool(ctx, plugin.CallRequest{Owner: "alice", Name: "docs_many", Args: args})
		if err != nil || !bytes.Contains(out, []byte(`"isError":false`)) {
			b.Fatalf("%v: %.300s", err, out)
		}
	}
	call(hosts[0])
	call(hosts[1])
	var wall [2][]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			j := (i + k) % 2
			t0 := time.Now()
			call(hosts[j])
			wall[j] = append(wall[j], time.Since(t0))
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / 1e3
	}
	plain, locked := med(wall[0]), med(wall[1])
	b.ReportMetric(plain, "plain-us")
	b.ReportMetric(locked, "lockdown-us")
	b.ReportMetric(locked-plain, "added-us")
}
