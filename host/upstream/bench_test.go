package upstream

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
)

// BenchmarkForward is one forwarded tools/call (Set.Call) to an in-process
// go-sdk server, 2026-07-28 stateless: the client side's cost (go-sdk
// client, guard, HTTP) plus the server's, in one process.
func BenchmarkForward(b *testing.B) {
	up := newSDKUpstream(b, true, "echo")
	s := newSet(b, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Server{Name: "sdk", URL: up.url(), Prefix: "p"})
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hi"}`)
	if _, err := s.Call(ctx, "p_echo", args, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Call(ctx, "p_echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}
