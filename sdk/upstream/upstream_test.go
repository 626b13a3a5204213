//go:build !wasip1

package upstream_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/sdktest"
	"github.com/aiodhq/aiod/sdk/upstream"
)

// fake serves aiod:upstream for server "up" (tools echo and pic) and
// denies every other server, as the host does for one not granted.
func fake(t *testing.T, seen *[]string) {
	deny := func(server string) ([]byte, uint32) {
		b, _ := json.Marshal(map[string]any{"code": "denied", "message": "upstream MCP server \"" + server + "\" is not granted to this plugin", "server": server})
		return b, uint32(abi.Denied)
	}
	sdktest.New(t,
		sdktest.WithHandler(abi.ModuleUpstream, "list", func(req []byte) ([]byte, uint32) {
			var r abi.UpstreamListRequest
			json.Unmarshal(req, &r)
			if r.Server != "up" {
				return deny(r.Server)
			}
			return []byte(`{"tools":[{"name":"echo","description":"echo text","inputSchema":{"type":"object"},"x-vendor":1},{"name":"pic","inputSchema":{"type":"object"}}],"reachable":true}`), 0
		}),
		sdktest.WithHandler(abi.ModuleUpstream, "call", func(req []byte) ([]byte, uint32) {
			*seen = append(*seen, string(req))
			var r abi.UpstreamCallRequest
			json.Unmarshal(req, &r)
			switch {
			case r.Server != "up":
				return deny(r.Server)
			case r.Tool == "missing":
				return []byte(`{"code":"invalid","message":"upstream MCP server \"up\": unknown tool (code -32602)","server":"up","rpc_code":-32602,"rpc_data":{"tool":"missing"}}`), uint32(abi.Invalid)
			case r.Tool == "pic":
				return []byte(`{"content":[{"type":"image","data":"iVBORw==","mimeType":"image/png"},{"type":"future","x":1}],"structuredContent":{"w":1},"isError":true,"_meta":{"k":"v"}}`), 0
			}
			return []byte(`{"content":[{"type":"text","text":"hi"}],"_meta":{"k":"v"}}`), 0
		}))
}

func TestList(t *testing.T) {
	fake(t, new([]string))
	tools, reachable, err := upstream.List("up")
	if err != nil || !reachable || len(tools) != 2 || tools[0].Name != "echo" || tools[0].Description != "echo text" ||
		string(tools[0].InputSchema) != `{"type":"object"}` || string(tools[0].Raw) != `{"name":"echo","description":"echo text","inputSchema":{"type":"object"},"x-vendor":1}` {
		t.Fatalf("list: %+v %v %v", tools, reachable, err)
	}
	_, _, err = upstream.List("other")
	var e *upstream.Error
	if !errors.Is(err, upstream.ErrDenied) || !errors.As(err, &e) || e.Server != "other" {
		t.Fatalf("list other: %v, want denied naming the server", err)
	}
}

func TestCall(t *testing.T) {
	var seen []string
	fake(t, &seen)
	res, err := upstream.Call("up", "echo", map[string]any{"text": "hi"})
	if err != nil || res.Text() != "hi" || res.IsError || string(res.Raw) != `{"content":[{"type":"text","text":"hi"}],"_meta":{"k":"v"}}` {
		t.Fatalf("call: %+v %v", res, err)
	}
	if want := `{"server":"up","tool":"echo","arguments":{"text":"hi"}}`; seen[0] != want {
		t.Fatalf("request %s, want %s", seen[0], want)
	}
	if _, err := upstream.Call("up", "echo", nil); err != nil || seen[1] != `{"server":"up","tool":"echo"}` {
		t.Fatalf("no arguments: request %s, %v", seen[1], err)
	}

	res, err = upstream.Call("up", "pic", nil)
	if err != nil || !res.IsError || len(res.Content) != 2 || res.Content[0].Data != "iVBORw==" || string(res.StructuredContent) != `{"w":1}` {
		t.Fatalf("pic: %+v %v", res, err)
	}
	tr := res.ToolResult()
	if !tr.IsError || len(tr.Content) != 2 || string(tr.Structured.(json.RawMessage)) != `{"w":1}` {
		t.Fatalf("pic as a tool result: %+v", tr)
	}

	_, err = upstream.Call("up", "missing", nil)
	var e *upstream.Error
	if !errors.Is(err, upstream.ErrInvalid) || !errors.As(err, &e) || e.RPCCode != -32602 || string(e.RPCData) != `{"tool":"missing"}` {
		t.Fatalf("missing: %#v, want invalid with the JSON-RPC code", err)
	}
	if _, err := upstream.Call("other", "echo", nil); !errors.Is(err, upstream.ErrDenied) {
		t.Fatalf("other: %v, want denied", err)
	}
}
