package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolSearchClients: with --tool-search, the real clients (the
// TypeScript SDK v2 and the go-sdk) in both eras list the short tools/list
// (the two tools and the pins, the pins without output schemas), find echo
// with aiod_tool_search, describe it and call it by name (spec/protocol.md
// §10).
func TestToolSearchClients(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "tool search is the host's MCP layer")
	a := start(t, nil, "--tool-search", "--tool-search-pinned", "sandbox_get_context,hash")
	wantListed := []string{"aiod_tool_search", "aiod_tool_describe", "sandbox_get_context", "hash"}
	for _, era := range []string{"modern", "legacy"} {
		t.Run("ts-v2/"+era, func(t *testing.T) {
			r := runNode(t, nil, clientScript("ts-v2-search.mjs"), a.URL, era)
			if r["era"] != era {
				t.Fatalf("era %v, want %s: %v", r["era"], era, r)
			}
			if got := strs(r["listed"]); !slices.Equal(got, wantListed) {
				t.Errorf("listed %v, want %v", got, wantListed)
			}
			if got := strs(r["withOutputSchema"]); len(got) != 0 {
				t.Errorf("listed with an output schema: %v", got)
			}
			if got := strs(r["found"]); len(got) == 0 || got[0] != "echo" {
				t.Errorf("search for echo found %v", got)
			}
			if got := strs(r["described"]); !slices.Equal(got, []string{"echo"}) || r["echoHasSchema"] != true {
				t.Errorf("described %v (schema %v)", got, r["echoHasSchema"])
			}
			if got := strs(r["unknown"]); !slices.Equal(got, []string{"no_such_tool"}) {
				t.Errorf("unknown %v", got)
			}
			if r["echo"] != "found by search" {
				t.Errorf("echo answered %q", r["echo"])
			}
		})
	}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("go-sdk/"+v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "aiod-e2e-go-sdk-search", Version: "1.0.0"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.URL}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, tl := range lt.Tools {
				listed = append(listed, tl.Name)
				if tl.OutputSchema != nil {
					t.Errorf("%s listed with an output schema", tl.Name)
				}
				if tl.InputSchema == nil {
					t.Errorf("%s listed without its input schema", tl.Name)
				}
			}
			if !slices.Equal(listed, wantListed) {
				t.Errorf("listed %v, want %v", listed, wantListed)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "aiod_tool_search", Arguments: map[string]any{"query": "sha-256 digest of text"}})
			if err != nil || res.IsError {
				t.Fatalf("aiod_tool_search: %v %+v", err, res)
			}
			b, _ := json.Marshal(res.StructuredContent)
			var found struct {
				Results []struct{ Name string } `json:"results"`
			}
			if json.Unmarshal(b, &found) != nil || len(found.Results) == 0 || found.Results[0].Name != "hash" {
				t.Errorf("search for a digest found %s", b)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": v}})
			if err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, v) {
				t.Fatalf("echo by name: %v %+v", err, res)
			}
		})
	}
}

// strs is a JSON array of strings from a client's line.
func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, e := range a {
		out = append(out, fmt.Sprint(e))
	}
	return out
}
