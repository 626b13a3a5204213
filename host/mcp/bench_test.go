package mcp

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// echoServer loads build/plugins (the echo plugin) into a Server, skipping
// when `make plugins` has not run.
var (
	benchServer *Server
	benchReg    *plugin.Registry
)

func echoServer(tb testing.TB) *Server {
	tb.Helper()
	if benchServer == nil {
		benchServer = NewServer(echoRegistry(tb), Options{}) // kept for the whole run
	}
	return benchServer
}

// echoRegistry loads build/plugins once for the whole run.
func echoRegistry(tb testing.TB) *plugin.Registry {
	tb.Helper()
	if benchReg != nil {
		return benchReg
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "build", "plugins")
	if _, err := os.Stat(filepath.Join(dir, "echo", "manifest.json")); err != nil {
		tb.Skip("build/plugins/echo is missing: run `make plugins`")
	}
	ctx := context.Background()
	eng, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()}) // compiled once per machine
	if err != nil {
		tb.Fatal(err)
	}
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if reg == nil {
		tb.Fatal(err)
	}
	benchReg = reg
	return reg
}

const (
	legacyEcho = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	modernEcho = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`
)

func benchServe(b *testing.B, s *Server, h mapHeaders, body string) {
	ctx := context.Background()
	ex := &Exchange{Method: "POST", Header: h, Body: []byte(body)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := s.Serve(ctx, ex)
		if r.Status != 200 || r.Stream != nil {
			b.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
}

// The three modes of the echo call: legacy without a session, legacy in a
// session, 2026-07-28 with its headers and _meta.
func BenchmarkEchoLegacySessionless(b *testing.B) {
	benchServe(b, echoServer(b), mapHeaders{"accept": "application/json, text/event-stream"}, legacyEcho)
}

func BenchmarkEchoLegacySession(b *testing.B) {
	s := echoServer(b)
	sess, _ := s.sessions.create("default", "2025-11-25", clientCaps{}, nil)
	benchServe(b, s, mapHeaders{"accept": "application/json, text/event-stream", "mcp-session-id": sess.id, "mcp-protocol-version": "2025-11-25"}, legacyEcho)
}

func BenchmarkEchoModern(b *testing.B) {
	benchServe(b, echoServer(b), mapHeaders{"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
		"mcp-method": "tools/call", "mcp-name": "echo"}, modernEcho)
}

// A session whose client declared elicitation and sampling: a tool may ask
// it for input, so the call runs in the background, ready to stream.
func BenchmarkEchoLegacySessionInputCapable(b *testing.B) {
	s := echoServer(b)
	sess, _ := s.sessions.create("default", "2025-11-25", parseClientCaps([]byte(`{"elicitation":{},"sampling":{}}`)), nil)
	benchServe(b, s, mapHeaders{"accept": "application/json, text/event-stream", "mcp-session-id": sess.id, "mcp-protocol-version": "2025-11-25"}, legacyEcho)
}

// BenchmarkDecodeMessage: one tools/call request as a client sends it,
// decoded (validated, the envelope and the params the methods read).
func BenchmarkDecodeMessage(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world","n":3,"tags":["a","b"],"opts":{"deep":true}},"_meta":{"progressToken":"p-17","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req message
		var p params
		if err := decodeMessage(body, &req, &p); err != nil || p.Name == nil {
			b.Fatal(err)
		}
	}
}
