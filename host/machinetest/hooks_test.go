package machinetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHooks: the hook chain is in front of Machine Mode tools as of every
// other tool (spec/hooks.md §0): a guard plugin (the C example guard)
// denies one tool's calls before they reach the command, and adds its
// text to another's results, in both protocol eras.
func TestHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the adapter plugin and runs a host (not in -short)")
	}
	_, docs := built(t)
	plugins := t.TempDir()
	testplugins.Package(t, plugins, "plugins/examples/guard-c", nil, nil)
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"hooks":[
	  {"plugin":"guard-c","tools":["docs_delete"],"config":{"before":"deny"}},
	  {"plugin":"guard-c","tools":["docs_fail"],"config":{"after":"add"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, stop := launchWith(t, map[string]caps.MachineTool{"docs": {Command: []string{docs, "docs"}}}, policy,
		func(c *host.Config) { c.PluginsDir = plugins })
	t.Cleanup(stop)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := f.connect(t, clientOpts{era: era})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "docs_delete", Arguments: map[string]any{"id": "a1"}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || len(res.Content) != 1 || res.StructuredContent != nil ||
				res.Content[0].(*mcp.TextContent).Text != "Blocked by the operator's hook (guard guard-c): guard-c says no to docs_delete for default" {
				t.Fatalf("docs_delete: %+v", res)
			}
			res, err = s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "docs_fail", Arguments: map[string]any{"scope": "item"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 2 || res.StructuredContent == nil ||
				!strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "{") ||
				res.Content[1].(*mcp.TextContent).Text != "[guard guard-c] guard-c saw docs_fail" {
				t.Fatalf("docs_fail: %+v", res)
			}
		})
	}
}
