package host_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host"
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
