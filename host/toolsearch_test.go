package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
)

// TestToolSearchUpstreams: the composition root with --tool-search over a
// plugin and an upstream: tools/list is the two tools and the pin, a search
// finds the plugin's and the upstream's tools, both are called by name.
func TestToolSearchUpstreams(t *testing.T) {
	up := newGoUpstream(t, true)
	url, _ := startUpstreamHost(t, []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}}, func(c *host.Config) {
		c.ToolSearch, c.ToolSearchPinned = true, []string{"echo", "sandbox_execute_bash"}
	})
	a, _ := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if got, want := toolNames(t, a.Result.Tools), []string{"aiod_tool_search", "aiod_tool_describe", "echo"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list: %v, want %v", got, want)
	}
	_, raw := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"aiod_tool_search","arguments":{"query":"echo text"}}}`)
	var r struct {
		Result struct {
			StructuredContent struct {
				Results []struct{ Name string } `json:"results"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, x := range r.Result.StructuredContent.Results {
		found = append(found, x.Name)
	}
	if !slices.Contains(found, "echo") || !slices.Contains(found, "up_echo") {
		t.Fatalf("search found %v, want echo and up_echo: %s", found, raw)
	}
	for _, name := range []string{"echo", "up_echo"} {
		a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+name+`","arguments":{"text":"hi"}}}`)
		if a.Error != nil || a.Result.IsError || len(a.Result.Content) != 1 || !strings.Contains(a.Result.Content[0].Text, "hi") {
			t.Fatalf("%s by name: %s", name, raw)
		}
	}
	_, raw = rpc(t, url, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"aiod_tool_describe","arguments":{"names":["up_progress"]}}}`)
	if !strings.Contains(raw, `"reports progress"`) {
		t.Fatalf("describe up_progress: %s", raw)
	}
}

// TestToolSearchReloads: a host with tool search over a real registry,
// reloaded 100 times with a plugin added and removed in turn: after each
// reload a search finds the plugin's tool exactly when it is loaded, and
// over the 100 the process keeps its goroutines and its heap (the search
// index is rebuilt, never accumulated). Under -race (make test) it makes
// 30: a reload takes about a second there, and host/internal/toolsearch's
// TestRebuild makes its 100 rebuilds in every run.
func TestToolSearchReloads(t *testing.T) {
	reloads := 100
	if raceEnabled {
		reloads = 30
	}
	dir, spare := t.TempDir(), t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	hashPkg := testplugins.Package(t, spare, "plugins/examples/hash", nil, nil)
	h, url := serveHost(t, host.Config{PluginsDir: dir, ToolSearchConfig: host.ToolSearchConfig{ToolSearch: true}})
	ctx := context.Background()
	search := func() []string {
		_, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"aiod_tool_search","arguments":{"query":"sha-256 hash data","limit":3}}}`)
		var r struct {
			Result struct {
				StructuredContent struct {
					Results []struct{ Name string } `json:"results"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range r.Result.StructuredContent.Results {
			out = append(out, x.Name)
		}
		return out
	}
	measure := func() (int, uint64) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	in := filepath.Join(dir, "hash")
	var g0 int
	var h0 uint64
	for i := range reloads + 2 {
		loaded := i%2 == 0
		var err error
		if loaded {
			err = os.Rename(hashPkg, in)
		} else {
			err = os.Rename(in, hashPkg)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Registry().Reload(ctx); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if got := slices.Contains(search(), "hash"); got != loaded {
			t.Fatalf("reload %d: hash found %v, loaded %v", i, got, loaded)
		}
		if i == 1 { // the first two reloads warm what is made once
			g0, h0 = measure()
		}
	}
	time.Sleep(100 * time.Millisecond) // background rebuilds end
	g1, h1 := measure()
	t.Logf("%d reloads with tool search: goroutines %d -> %d, heap %d -> %d KiB", reloads, g0, g1, h0>>10, h1>>10)
	if g1 > g0+4 {
		t.Errorf("goroutines grew from %d to %d over %d reloads", g0, g1, reloads)
	}
	if h1 > h0+8<<20 {
		t.Errorf("heap grew from %d to %d KiB over %d reloads", h0>>10, h1>>10, reloads)
	}
}
