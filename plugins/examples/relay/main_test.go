//go:build !wasip1

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/sdktest"
)

// fakeUpstream answers aiod:upstream.call: server "up" echoes its text
// argument (structuredContent {"len": n}); "down" answers isError naming
// itself, as the host does for a server that is down; any other server is
// denied.
func fakeUpstream(t *testing.T) *sdktest.Host {
	return sdktest.New(t, sdktest.WithHandler(abi.ModuleUpstream, "call", func(req []byte) ([]byte, uint32) {
		var r struct {
			Server, Tool string
			Arguments    struct{ Text string }
		}
		json.Unmarshal(req, &r)
		switch r.Server {
		case "up":
			b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": r.Tool + ":" + r.Arguments.Text}},
				"structuredContent": map[string]any{"len": len(r.Arguments.Text)}})
			return b, 0
		case "down":
			return []byte(`{"content":[{"type":"text","text":"upstream MCP server \"down\" is not reachable"}],"isError":true}`), 0
		}
		return []byte(`{"code":"denied","message":"upstream MCP server \"` + r.Server + `\" is not granted to this plugin"}`), uint32(abi.Denied)
	}))
}

func TestRelayCall(t *testing.T) {
	h := fakeUpstream(t)
	r := h.CallTool("relay_call", map[string]any{"server": "up", "tool": "echo", "arguments": map[string]any{"text": "hi"}})
	if r.IsError || r.Text() != "echo:hi" || string(r.StructuredContent) != `{"len":2}` {
		t.Fatalf("relay_call up: %s", r.Raw)
	}
	r = h.CallTool("relay_call", map[string]any{"server": "down", "tool": "echo"})
	if !r.IsError || !strings.Contains(r.Text(), `"down"`) {
		t.Fatalf("relay_call down: %s", r.Raw)
	}
	r = h.CallTool("relay_call", map[string]any{"server": "secret", "tool": "echo"})
	if !r.IsError || !strings.Contains(r.Text(), `"secret" is not granted`) {
		t.Fatalf("relay_call secret: %s, want isError naming the server", r.Raw)
	}
	if r = h.CallTool("relay_call", map[string]any{"server": "up"}); !r.IsError {
		t.Fatalf("relay_call without tool: %s", r.Raw)
	}
}

func TestRelayMerge(t *testing.T) {
	h := fakeUpstream(t)
	r := h.CallTool("relay_merge", map[string]any{"calls": []any{
		map[string]any{"server": "up", "tool": "a", "arguments": map[string]any{"text": "x"}},
		map[string]any{"server": "up", "tool": "b", "arguments": map[string]any{"text": "yz"}},
	}})
	want := `{"results":[{"server":"up","tool":"a","isError":false,"text":"a:x","structuredContent":{"len":1}},{"server":"up","tool":"b","isError":false,"text":"b:yz","structuredContent":{"len":2}}]}`
	if r.IsError || len(r.Content) != 2 || r.Content[0].Text != "a:x" || r.Content[1].Text != "b:yz" || string(r.StructuredContent) != want {
		t.Fatalf("relay_merge: %s", r.Raw)
	}
	r = h.CallTool("relay_merge", map[string]any{"calls": []any{
		map[string]any{"server": "up", "tool": "a"}, map[string]any{"server": "secret", "tool": "b"}}})
	if !r.IsError || len(r.Content) != 2 || !strings.Contains(r.Content[1].Text, `"secret"`) {
		t.Fatalf("relay_merge with a denied call: %s", r.Raw)
	}
	if r = h.CallTool("relay_merge", map[string]any{"calls": []any{map[string]any{"server": "up", "tool": "a"}}}); !r.IsError {
		t.Fatalf("relay_merge with one call: %s", r.Raw)
	}
}

func TestDescribe(t *testing.T) {
	m := sdktest.New(t).Describe()
	if m.Name != "relay" || len(m.Tools) != 2 || m.Tools[0].Name != "relay_call" || m.Tools[1].Name != "relay_merge" {
		t.Fatalf("manifest: %+v", m)
	}
}
