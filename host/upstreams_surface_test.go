package host_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
)

// newSurfaceUpstream is a go-sdk server with the prompt "greet", the
// resource doc://a and the template doc://{id}.
func newSurfaceUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "surface-upstream", Version: "1"}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
		})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "the text of " + req.Params.URI}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "doc://a", Name: "a"}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "doc://{id}", Name: "doc"}, read)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func surfaceRPC(method, params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
}

// TestPolicyUpstreamSurfaceTenants: the prompts and resources of a policy
// server follow its "tenants" as its tools do: alice lists, gets, reads and
// completes them; bob (whose own "upstreams" is "*") sees none, and his
// prompts/get, resources/read and completion of them are answered as for
// names that do not exist, without reaching the server. A server of
// EXTRA_MCP_SERVERS (seed 000's rules) publishes its tools only.
func TestPolicyUpstreamSurfaceTenants(t *testing.T) {
	up := newSurfaceUpstream(t)
	extra := newSurfaceUpstream(t)
	policy := `{"tenants":{
	  "alice":{"keys":["` + keyLine(aliceKey) + `"],"tools":["*"],"upstreams":["*"]},
	  "bob":{"keys":["` + keyLine(bobKey) + `"],"tools":["*"],"upstreams":["*"]}},
	  "upstreams":{"sec":{"url":"` + up + `","prefix":"sec","tenants":["alice"]}}}`
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	url := startHost(t, host.Config{PluginsDir: plugins, PolicyFile: writePolicy(t, policy), UpstreamListTimeout: 5e9,
		Upstreams: []upstream.Server{{Name: "extra", URL: extra, Prefix: "extra"}}}) + "/mcp"

	const uri = "upstream://sec/doc://a"
	for _, c := range []struct{ body, want string }{
		{surfaceRPC("prompts/list", `{}`), `"name":"sec_greet"`},
		{surfaceRPC("prompts/get", `{"name":"sec_greet","arguments":{"who":"Ada"}}`), `Hello, Ada`},
		{surfaceRPC("resources/list", `{}`), `"uri":"` + uri + `"`},
		{surfaceRPC("resources/templates/list", `{}`), `"uriTemplate":"upstream://sec/doc://{id}"`},
		{surfaceRPC("resources/read", `{"uri":"`+uri+`"}`), `"uri":"` + uri + `"`},
		{surfaceRPC("resources/read", `{"uri":"upstream://sec/doc://b"}`), `the text of doc://b`},
	} {
		if r := do(t, "POST", url, aliceKey, c.body, nil); !strings.Contains(r.body, c.want) || strings.Contains(r.body, `"error"`) {
			t.Fatalf("alice %s: %s", c.body, r.body)
		}
	}
	for _, c := range []struct{ body, want string }{
		{surfaceRPC("prompts/get", `{"name":"sec_greet","arguments":{"who":"Ada"}}`), `unknown prompt`},
		{surfaceRPC("resources/read", `{"uri":"`+uri+`"}`), `Resource not found`},
		{surfaceRPC("completion/complete", `{"ref":{"type":"ref/prompt","name":"sec_greet"},"argument":{"name":"who","value":"A"}}`), `no known prompt`},
	} {
		if r := do(t, "POST", url, bobKey, c.body, nil); !strings.Contains(r.body, c.want) || strings.Contains(r.body, "Hello") || strings.Contains(r.body, "the text of") {
			t.Fatalf("bob %s: %s", c.body, r.body)
		}
	}
	for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		r := do(t, "POST", url, bobKey, surfaceRPC(m, `{}`), nil)
		if strings.Contains(r.body, "sec_") || strings.Contains(r.body, "upstream://") || strings.Contains(r.body, `"error"`) {
			t.Fatalf("bob's %s: %s", m, r.body)
		}
		if r := do(t, "POST", url, aliceKey, surfaceRPC(m, `{}`), nil); strings.Contains(r.body, "extra_") || strings.Contains(r.body, "upstream://extra/") {
			t.Fatalf("an EXTRA_MCP_SERVERS server's %s: %s", m, r.body)
		}
	}
	if r := do(t, "POST", url, aliceKey, surfaceRPC("resources/read", `{"uri":"upstream://extra/doc://a"}`), nil); !strings.Contains(r.body, "Resource not found") {
		t.Fatalf("an EXTRA_MCP_SERVERS server's resource read: %s", r.body)
	}
	// a 2026-07-28 client: aiod's envelope and caching hints, once each
	r := do(t, "POST", url, aliceKey, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`",`+modernMeta+`}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": uri})
	if !strings.Contains(r.body, "the text of doc://a") || strings.Count(r.body, `"ttlMs"`) != 1 || strings.Count(r.body, `"resultType"`) != 1 {
		t.Fatalf("a 2026-07-28 read: %s", r.body)
	}
	if tools := tenantTools(t, do(t, "POST", url, aliceKey, listTools, nil).body); len(tools) == 0 {
		t.Fatal("no tools")
	}
}
