package mcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestEchoAllocs: an echo call through the JSON-RPC layer (the C echo, so
// that every allocation counted is the host's) allocates at most 10 times
// in the legacy era and 16 in 2026-07-28 with its headers and _meta: the
// message, its params' strings, its call and its response in one
// allocation, the strings without escapes not copied out of the body, the
// context values kept in the call (RATIONALE, "The call path's
// allocations"). The answers are checked too.
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
		h    mapHeaders
		body string
		max  float64
	}{
		{"legacy", mapHeaders{"accept": "application/json, text/event-stream"}, legacyEcho, 10},
		{"2026-07-28", mapHeaders{"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
			"mcp-method": "tools/call", "mcp-name": "echo"}, modernEcho, 16},
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
