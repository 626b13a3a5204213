package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store/storetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStoredStateKeys: without --state-key-file, replicas sharing a real
// redis-server (--store) seal and open MRTR requestStates with the key
// ring in it, so a state sealed by one opens on the other (two replicas
// with neither flag refuse each other's); and with --data-dir a state
// sealed before a restart opens after it.
func TestStoredStateKeys(t *testing.T) {
	defaultEngine(t, "the key ring is host-side")
	t.Parallel()
	r := storetest.StartRedis(t)
	t.Run("replicas sharing a store open each other's states", func(t *testing.T) {
		a, b := start(t, nil, "--store", r.URL(), "--browser", "off"), start(t, nil, "--store", r.URL(), "--browser", "off")
		if !finish(t, b, round1(t, a)) || !finish(t, a, round1(t, b)) {
			t.Fatal("a requestState sealed by one replica was refused by the other sharing its store")
		}
	})
	t.Run("without a store they do not", func(t *testing.T) {
		a, b := start(t, nil, "--browser", "off"), start(t, nil, "--browser", "off")
		if finish(t, b, round1(t, a)) {
			t.Fatal("a requestState opened on another process with no key in common: the test cannot tell shared keys")
		}
	})
	t.Run("a state outlives a restart with --data-dir", func(t *testing.T) {
		dir := t.TempDir()
		a := start(t, nil, "--data-dir", dir, "--browser", "off")
		state := round1(t, a)
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatal("aiod did not stop")
		}
		if !finish(t, start(t, nil, "--data-dir", dir, "--browser", "off"), state) {
			t.Fatal("a requestState sealed before the restart was refused after it")
		}
	})
}

// TestSharedPins: two replicas over a real redis-server (--store) with
// upstream pins (--pin-upstreams) read one set of pins from it: a real
// MCP server's tool is withheld on both until `aiod upstream review
// --store URL --accept` (run beside them) pins it, then listed by both.
func TestSharedPins(t *testing.T) {
	defaultEngine(t, "the upstream pins are host-side")
	t.Parallel()
	r := storetest.StartRedis(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "shout", Description: "shouts text"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	servers := fmt.Sprintf(`{"up":{"url":%q,"prefix":"up"}}`, srv.URL+"/mcp")
	pins := filepath.Join(t.TempDir(), "pins.json") // none yet: every tool withheld
	env := []string{"EXTRA_MCP_SERVERS=" + servers}
	args := []string{"--store", r.URL(), "--pin-upstreams", pins, "--browser", "off"}
	reps := []*aiod{start(t, env, args...), start(t, env, args...)}
	listed := func(a *aiod) bool {
		_, body := post(t, a.URL, listBody, nil)
		return strings.Contains(body, `"up_shout"`)
	}
	for i, a := range reps {
		if listed(a) {
			t.Fatalf("replica %d lists up_shout before it is pinned", i)
		}
	}
	bin, _ := binaries(t)
	out, err := exec.Command(bin, "upstream", "review", "--store", r.URL(), "--mcp-servers", servers, "--accept").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "accepted 1 changes into the store (redis "+r.Addr()+")") {
		t.Fatalf("aiod upstream review --store --accept: %v\n%s", err, out)
	}
	for i, a := range reps {
		deadline := time.Now().Add(10 * time.Second)
		for !listed(a) {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d does not list up_shout 10 s after it was accepted in the store", i)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if _, err := os.Stat(pins); err == nil {
		t.Error("the accept wrote the pin file: the store holds the pins")
	}
}
