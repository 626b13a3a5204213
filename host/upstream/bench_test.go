package upstream

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// BenchmarkForward is one forwarded tools/call (Set.Call) to an in-process
// go-sdk server, 2026-07-28 stateless: the client side's cost (the fast path
// or the go-sdk client with the guard, HTTP) plus the server's, in one
// process.
func BenchmarkForward(b *testing.B) {
	// fast-asking: the fast path for a caller whose client can be asked
	// (what every MCP client's call to a server of the policy is)
	for _, path := range []string{"fast", "fast-asking", "go-sdk"} {
		b.Run(path, func(b *testing.B) {
			up := newSDKUpstream(b, true, "echo")
			s := newSet(b, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DefaultTTL: time.Hour},
				Server{Name: "sdk", URL: up.url(), Prefix: "p"})
			ctx := context.Background()
			args := json.RawMessage(`{"text":"hi"}`)
			s.Tools(ctx) // a client lists first: the fast path needs the list
			if path == "go-sdk" {
				s.ups[0].fast.Store(nil) // until the next tools/list, an hour away
			}
			if _, err := s.Call(ctx, "p_echo", args, nil); err != nil {
				b.Fatal(err)
			}
			var in Asker
			if path == "fast-asking" {
				in = func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) { return nil, nil }
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.CallAsking(ctx, "p_echo", args, nil, in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if fast := s.ups[0].fastCalls.Load() > 0; fast != (path != "go-sdk") {
				b.Fatalf("%s: fast path taken %v", path, fast)
			}
		})
	}
}

// BenchmarkAnswer is taking a 2026-07-28 go-sdk server's envelope off its
// tools/call result (envelope.go), the cost Set.Call adds to a call.
func BenchmarkAnswer(b *testing.B) {
	res := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"sdk-upstream","version":"1"}},"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`)
	u := &upstream{srv: Server{Name: "sdk"}}
	b.ReportAllocs()
	for b.Loop() {
		if len(u.answer(res)) != len(`{"content":[{"type":"text","text":"hi"}]}`) {
			b.Fatal("envelope left on")
		}
	}
}

// BenchmarkForwardKinds is one forwarded tools/call (Set.Call, echo) to a
// go-sdk server reached three ways: in-process over Streamable HTTP
// (stateless, the go-sdk client path: the baseline), the Go stdio server
// of testdata run as a command server in its bubblewrap jail, and the
// go-sdk's 2024-11-05 SSE handler.
func BenchmarkForwardKinds(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hi"}`)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, kind := range []string{"http", "stdio", "sse"} {
		b.Run(kind, func(b *testing.B) {
			var srv Server
			switch kind {
			case "http":
				srv = Server{Name: "k", URL: newSDKUpstream(b, true, "echo").url(), Prefix: "k"}
			case "stdio":
				srv = stdioServer("k", stdioServerBin(b))
			case "sse":
				srv = sseServer("k", newSSEUpstream(b).URL, TransportSSE)
			}
			s := newSet(b, Options{Logger: quiet, DefaultTTL: time.Hour, StdioDir: b.TempDir(), ListTimeout: 20 * time.Second}, srv)
			s.Tools(ctx)
			s.ups[0].fast.Store(nil)
			if raw, err := s.Call(ctx, "k_echo", args, nil); err != nil || !strings.Contains(string(raw), "hi") {
				b.Fatalf("%s %v", raw, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Call(ctx, "k_echo", args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
