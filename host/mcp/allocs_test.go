package mcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestEchoAllocs: an echo call through the JSON-RPC layer (the C echo, so
// that every allocation counted is the host's) allocates 5 times in the
// legacy era (the body's copy, the request's state, the call's deadline,
// the guest's output, the answer's envelope) and 9 in 2026-07-28 with its
// headers and _meta: the message, its params' strings, its call and its
// response in one allocation, the strings without escapes not copied out
// of the body, the context values kept in the call (RATIONALE, "The call
// path's allocations"). The answers are checked too.
func TestEchoAllocs(t *testing.T) {
	if raceEnabled {
		t.Log("under the race detector allocations are not counted")
		return
	}
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo-c", nil, nil)
	ctx := context.Background()
	eng := testplugins.Engine(t)
	t.Cleanup(func() { eng.Close(ctx) })
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	s := NewServer(reg, Options{})
	for _, c := range []struct {
		name string
		h    foldHeaders
		body string
		max  float64
	}{
		{"legacy", foldHeaders{{"Accept", "application/json, text/event-stream"}}, legacyEcho, 5},
		{"2026-07-28", foldHeaders{{"Accept", "application/json, text/event-stream"}, {"MCP-Protocol-Version", "2026-07-28"},
			{"Mcp-Method", "tools/call"}, {"Mcp-Name", "echo"}}, modernEcho, 9},
	} {
		ex := &Exchange{Method: "POST", Header: c.h, Body: []byte(c.body)}
		serve := func() {
			r := s.Serve(ctx, ex)
			if r.Status != 200 || r.Stream != nil || !containsAll(r.Body, `"id":1`, `"text":"hi"`, `"isError":false`) {
				t.Fatalf("%s: status %d: %s", c.name, r.Status, r.Body)
			}
		}
		serve() // the instance, warm
		n := testing.AllocsPerRun(200, serve)
		if n > c.max {
			t.Errorf("%s echo: %.1f allocations a call, want at most %.0f", c.name, n, c.max)
		}
		t.Logf("%s echo: %.1f allocations a call", c.name, n)
	}
}

func containsAll(b []byte, parts ...string) bool {
	for _, p := range parts {
		if !bytes.Contains(b, []byte(p)) {
			return false
		}
	}
	return true
}

// foldHeaders are request headers as a transport holds them, looked up
// without allocating (mapHeaders lowers each name it is asked for).
type foldHeaders [][2]string

func (h foldHeaders) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}
