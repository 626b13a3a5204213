package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// changingUpstream is a go-sdk server with sessions and the tool "echo";
// addTool adds one, which the server announces with list_changed.
func changingUpstream(t *testing.T) (string, func(string)) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "changing-upstream", Version: "1"}, nil)
	addTool := func(name string) {
		srv.AddTool(&mcp.Tool{Name: name, Description: "answers " + name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
	}
	addTool("echo")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { up.CloseClientConnections(); up.Close() })
	return up.URL, addTool
}

// checkChangeTellsClients: the upstream "up" adds a tool; bin/aiod refreshes
// its list and tells its own clients once: the TypeScript v2 client, in era
// (2026-07-28 on its subscriptions/listen stream, legacy on its GET stream),
// sees the new tool under the upstream's prefix without reconnecting. The
// client script renames a marker file; the upstream adds its tool when the
// marker appears.
func checkChangeTellsClients(t *testing.T, a *aiod, addTool func(string), era string) {
	work := t.TempDir()
	staging, dest := filepath.Join(work, "staging"), filepath.Join(work, "dest")
	if err := os.WriteFile(staging, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	added := "added_" + era
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the upstream changes when the client renames the marker
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := os.Stat(dest); err == nil {
					addTool(added)
					return
				}
			}
		}
	}()
	r := runNode(t, nil, clientScript("ts-v2-listchanged.mjs"), a.URL, staging, dest, era)
	before, after := names(r["before"]), names(r["after"])
	if !slices.Contains(before, "up_echo") || slices.Contains(before, "up_"+added) {
		t.Fatalf("tools before the change %v: want up_echo and not up_%s\n%s", before, added, a.Logs())
	}
	if !slices.Contains(after, "up_"+added) || len(after) != len(before)+1 {
		t.Errorf("tools before %v, after %v: want up_%s added", before, after, added)
	}
	if r["changes"] != float64(1) {
		t.Errorf("%v list changes for one upstream change, want 1", r["changes"])
	}
	if r["era"] != era {
		t.Errorf("era %v, want %s", r["era"], era)
	}
}
