package host_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

// freePort is a loopback port nothing listens on (closed again; Run
// listens on it).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// toolsList posts tools/list and returns the body ("" while nothing
// answers).
func toolsList(url string) string {
	resp, err := http.Post(url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls cond until it holds or d passes, and returns how long
// that took.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for end := start.Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return time.Since(start)
		}
	}
	t.Fatalf("timed out waiting for %s", what)
	return 0
}

// TestRun runs the daemon on a real port: it serves, SIGHUP reloads the
// plugins directory (a plugin added after start appears), the profiler
// answers on its own port, the collector's heap floor holds while it runs,
// and cancelling ctx shuts it down (the port is closed, the process's GC
// percentage is its own again and Run returns nil).
func TestRun(t *testing.T) {
	dir := t.TempDir()
	port, pprofPort := freePort(t), freePort(t)
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	h, err := host.New(context.Background(), host.Config{
		Port:           port,
		PluginsDir:     dir,
		CacheDir:       testplugins.CacheDir(),
		PprofAddr:      "127.0.0.1:" + strconv.Itoa(pprofPort),
		GCHeapFloorMiB: 1024, // above any live heap of the test
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, 10*time.Second, "the server to answer", func() bool { return toolsList(url) != "" })
	if body := toolsList(url); strings.Contains(body, `"name":"echo"`) {
		t.Fatalf("echo listed before it was installed: %s", body)
	}

	waitFor(t, 10*time.Second, "the heap floor to raise the GC percentage", func() bool {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		return gcPercent() > 100
	})

	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(pprofPort) + "/debug/pprof/cmdline")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("profiler: %v %v", resp, err)
	}
	resp.Body.Close()

	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "SIGHUP to load echo", func() bool { return strings.Contains(toolsList(url), `"name":"echo"`) })

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after ctx was cancelled")
	}
	if toolsList(url) != "" {
		t.Fatal("the port still answers after shutdown")
	}
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percentage %d after Run, want the process's own 100", p)
	}
	if _, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(pprofPort), time.Second); err == nil {
		t.Fatal("the profiler still listens after shutdown")
	}
}

// gcPercent is the collector's GC percentage now.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestRunSIGTERM: SIGTERM shuts Run down gracefully, like ctx.
func TestRunSIGTERM(t *testing.T) {
	port := freePort(t)
	h, err := host.New(context.Background(), host.Config{Port: port, CacheDir: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(context.Background()) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, 10*time.Second, "the server to answer", func() bool { return toolsList(url) != "" })
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after SIGTERM")
	}
}

// TestRunListenError: a port in use is Run's error, not a hang.
func TestRunListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	h, err := host.New(context.Background(), host.Config{Port: ln.Addr().(*net.TCPAddr).Port, CacheDir: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if err := h.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Run on a busy port: %v", err)
	}
}
