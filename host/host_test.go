package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

var update = flag.Bool("update", false, "rewrite golden files")

// startHost runs a host with the echo plugin on a free loopback port.
func startHost(t *testing.T, cfg host.Config) string {
	t.Helper()
	if cfg.PluginsDir == "" {
		cfg.PluginsDir = t.TempDir()
		testplugins.Package(t, cfg.PluginsDir, "plugins/examples/echo", nil, nil)
	}
	_, url, _ := runHost(t, cfg)
	return url
}

// serveHost runs a host on a free loopback port and returns it with its
// base URL.
func serveHost(t *testing.T, cfg host.Config) (*host.Host, string) {
	t.Helper()
	h, url, _ := runHost(t, cfg)
	return h, url
}

// runHost starts a host from cfg (the shared compile cache, a quiet log
// unless one is set) on a free loopback port once its plugins are
// compiled, and returns it, its base URL and a function that stops it
// (also run at cleanup; idempotent).
func runHost(t *testing.T, cfg host.Config) (*host.Host, string, func()) {
	t.Helper()
	cfg.CacheDir = testplugins.CacheDir()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// it lists at once and compiles in the background: wait, so that
	// no call (and no timing) includes compiling
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer lcancel()
	if err := h.Registry().WaitLoaded(lctx); err != nil {
		t.Fatalf("plugins still loading after 5 minutes: %v (loading: %v)", err, h.Registry().Loading())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			h.Close(context.Background())
		})
	}
	t.Cleanup(stop)
	return h, "http://" + ln.Addr().String(), stop
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type exchange struct {
	Name     string          `json:"name"`
	Request  string          `json:"request"`
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response,omitempty"`
}

// TestGoldenCore replays the core JSON-RPC exchanges over real HTTP against
// testdata/core.golden.json (go test ./host -run Golden -update rewrites it).
func TestGoldenCore(t *testing.T) {
	url := startHost(t, host.Config{})
	cases := []struct{ name, body string }{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"tools/call echo", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello \"world\"\n"}}}`},
		{"tools/call string id", `{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"text":"é ✓"}}}`},
		{"unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_execute","arguments":{}}}`},
		{"missing tool name", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}`},
		{"arguments not an object", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"frobnicate"}`},
		{"parse error", `{"jsonrpc":"2.0","id":7,`},
		{"not jsonrpc 2.0", `{"jsonrpc":"1.0","id":8,"method":"tools/list"}`},
		{"initialize supported version", `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
		{"initialize unknown version", `{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"ping", `{"jsonrpc":"2.0","id":11,"method":"ping"}`},
	}
	var got []exchange
	for _, c := range cases {
		status, body := post(t, url, c.body)
		e := exchange{Name: c.name, Request: c.body, Status: status}
		if body != "" {
			e.Response = normalize(t, body)
		}
		got = append(got, e)
	}
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON = append(gotJSON, '\n')
	path := filepath.Join("testdata", "core.golden.json")
	if *update {
		if err := os.WriteFile(path, gotJSON, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(want, gotJSON) {
		t.Fatalf("exchange differs from %s:\n%s", path, diff(string(want), string(gotJSON)))
	}
}

// normalize hides the server version, which changes with every commit.
func normalize(t *testing.T, body string) json.RawMessage {
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("response is not JSON: %q", body)
	}
	if r, ok := v["result"].(map[string]any); ok {
		if si, ok := r["serverInfo"].(map[string]any); ok {
			si["version"] = "VERSION"
		}
	}
	b, _ := json.Marshal(v)
	return b
}

func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out.WriteString("- " + x + "\n+ " + y + "\n")
		}
	}
	return out.String()
}

// TestRefuseNonLoopback: no API key beyond loopback unless allowed.
func TestRefuseNonLoopback(t *testing.T) {
	_, err := host.New(context.Background(), host.Config{Host: "0.0.0.0", CacheDir: "-"})
	if err == nil || !strings.Contains(err.Error(), "--allow-unauthenticated") {
		t.Fatalf("err %v", err)
	}
	h, err := host.New(context.Background(), host.Config{Host: "0.0.0.0", CacheDir: "-", AllowUnauthenticated: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("allowed: %v", err)
	}
	h.Close(context.Background())
	h.Close(context.Background()) // idempotent
}

// TestCapabilitiesReportContainment: /v1/capabilities says how process
// limits are enforced; on a machine where aiod can make cgroups (root with
// the pids controller, as CI's) it is the kernel, not the watchdog.
func TestCapabilitiesReportContainment(t *testing.T) {
	url := startHost(t, host.Config{})
	var body struct {
		Data struct {
			Families map[string]struct {
				Warnings    []string `json:"warnings"`
				Containment *struct {
					Mode   string `json:"mode"`
					Reason string `json:"reason"`
				} `json:"containment"`
			} `json:"families"`
		} `json:"data"`
	}
	getCapabilities(t, url, &body)
	caps := body.Data
	c := caps.Families["process"].Containment
	if c == nil {
		t.Fatalf("no containment in families.process: %+v", caps.Families["process"])
	}
	switch c.Mode {
	case "cgroup-v1", "cgroup-v2":
		if len(caps.Families["process"].Warnings) != 0 {
			t.Errorf("kernel limits but warnings %q", caps.Families["process"].Warnings)
		}
	case "watchdog":
		if c.Reason == "" || len(caps.Families["process"].Warnings) != 1 {
			t.Errorf("watchdog without a reason or a warning: %+v", caps.Families["process"])
		}
		if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
			t.Errorf("CI runs as root with cgroups, but containment fell back to the watchdog: %s", c.Reason)
		}
	default:
		t.Errorf("containment mode %q", c.Mode)
	}
}

// TestCapabilitiesFamilyFromImplementation: families granted to a plugin
// and implemented by this host (state, cdp, upstream) are reported ready;
// one granted to nobody (files, process: no plugin here asks) is absent.
// (That every family of the contract has an implementation is
// TestFamilyTableComplete.)
func TestCapabilitiesFamilyFromImplementation(t *testing.T) {
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, func(m []byte) []byte {
		var doc map[string]any
		if err := json.Unmarshal(m, &doc); err != nil {
			t.Fatal(err)
		}
		doc["capabilities"] = map[string]any{"cdp": map[string]any{"methods": []string{"Page.*"}},
			"upstream": map[string]any{"servers": []string{"docs"}}, "state": map[string]any{"max_bytes": 1024}}
		b, _ := json.Marshal(doc)
		return b
	})
	policy := filepath.Join(t.TempDir(), "policy.json")
	os.WriteFile(policy, []byte(`{"plugins":{"echo":{"cdp":{"methods":["Page.*"]},"upstream":{"servers":["docs"]},"state":{"max_bytes":1024}}}}`), 0o644)
	url := startHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy})
	var body struct {
		Data struct {
			Families map[string]struct {
				Status  string   `json:"status"`
				Missing []string `json:"missing"`
			} `json:"families"`
		} `json:"data"`
	}
	getCapabilities(t, url, &body)
	fams := body.Data.Families
	for _, name := range []string{"files", "process"} {
		if f := fams[name]; f.Status != "absent" {
			t.Errorf("%s granted to no plugin: %+v, want absent", name, f)
		}
	}
	for _, name := range []string{"state", "cdp", "upstream"} {
		if f := fams[name]; f.Status != "ready" {
			t.Errorf("%s granted and implemented: %+v, want ready", name, f)
		}
	}
}

// getCapabilities decodes GET /v1/capabilities into v.
func getCapabilities(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url + "/v1/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
