package sandboxtest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProgress: sandbox_execute_bash and sandbox_execute_code called with
// a progress token send the output lines as notifications/progress while
// the command runs, in both protocol eras (go-sdk client), at most a few
// a second; without a token none is sent, and the result text is the same.
func TestProgress(t *testing.T) {
	defaultEngine(t, "progress notifications: the host's MCP layer")
	s := sharedServer(t, "")
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"sandbox_execute_bash", map[string]any{"cmd": "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.3; done"}},
		{"sandbox_execute_code", map[string]any{"code": "import time\nfor i in range(1, 7):\n    print(f'line{i}')\n    time.sleep(0.3)"}},
	}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		for _, c := range calls {
			t.Run(v+"/"+c.tool, func(t *testing.T) {
				t.Parallel() // each waits on its commands (the bash calls queue on the shared session)
				var mu sync.Mutex
				var got []*mcp.ProgressNotificationParams
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cl := mcp.NewClient(&mcp.Implementation{Name: "aiod-sandboxtest", Version: "1.0.0"}, &mcp.ClientOptions{
					ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
						mu.Lock()
						got = append(got, r.Params)
						mu.Unlock()
					},
				})
				cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				defer cs.Close()
				call := func(token any) (string, time.Duration) {
					p := &mcp.CallToolParams{Name: c.tool, Arguments: c.args}
					if token != nil {
						p.SetProgressToken(token)
					}
					start := time.Now()
					res, err := cs.CallTool(ctx, p)
					if err != nil {
						t.Fatalf("tools/call: %v", err)
					}
					if res.IsError || len(res.Content) != 1 {
						t.Fatalf("tools/call: %+v", res)
					}
					return res.Content[0].(*mcp.TextContent).Text, time.Since(start)
				}
				plain, _ := call(nil)
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n != 0 {
					t.Fatalf("%d progress notifications without a token", n)
				}
				text, took := call("tok-" + c.tool)
				// The result is the same (the outputs are the same lines).
				var a, b map[string]any
				if json.Unmarshal([]byte(plain), &a) != nil || json.Unmarshal([]byte(text), &b) != nil ||
					a["stdout"] != b["stdout"] || a["output"] != b["output"] {
					t.Errorf("result with progress differs:\n%s\n%s", text, plain)
				}
				// The handler runs asynchronously: give the last one a moment.
				time.Sleep(100 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				if len(got) < 3 {
					t.Fatalf("%d progress notifications for a 1.8 s command, want several", len(got))
				}
				if max := int(took/(250*time.Millisecond)) + 2; len(got) > max {
					t.Errorf("%d notifications in %v: more than a few a second", len(got), took)
				}
				t.Logf("%d progress notifications in %v", len(got), took)
				var lines []string
				prev := 0.0
				for _, p := range got {
					if p.ProgressToken != "tok-"+c.tool {
						t.Errorf("token %v", p.ProgressToken)
					}
					if p.Progress <= prev {
						t.Errorf("progress %v after %v", p.Progress, prev)
					}
					prev = p.Progress
					lines = append(lines, strings.Split(p.Message, "\n")...)
				}
				if j := strings.Join(lines, ","); j != "line1,line2,line3,line4,line5,line6" {
					t.Errorf("progress messages: %s", j)
				}
			})
		}
	}
}
