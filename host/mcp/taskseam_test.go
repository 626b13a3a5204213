package mcp

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestPlainCallSkipsTasks: the tasks extension wraps the call path
// instead of sitting inside it. A plain 2026-07-28 tools/call (of a tool
// that declares no execution.taskSupport) never reaches the extension,
// from a client that declared it or not; a call of a task-capable tool
// does, once.
func TestPlainCallSkipsTasks(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()
	if s.taskCalls == nil {
		t.Fatal("NewServer installed no tasks extension")
	}
	var entered atomic.Int64
	inner := s.taskCalls
	s.taskCalls = func(ctx context.Context, ex *Exchange, rc *rpcCall, support string) *Response {
		entered.Add(1)
		return inner(ctx, ex, rc, support)
	}
	for _, meta := range []string{plainMeta, tasksMeta} {
		_, resp := taskRPC(t, s, "alice", meta, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
		if r := result(t, resp); r["resultType"] != "complete" || r["taskId"] != nil {
			t.Fatalf("echo: %v", r)
		}
	}
	if n := entered.Load(); n != 0 {
		t.Fatalf("two plain tools/calls entered the tasks extension %d times, want 0", n)
	}
	_, resp := taskRPC(t, s, "alice", tasksMeta, "tools/call", `{"name":"slow_compute","arguments":{"seconds":0,"label":"now"}}`)
	if r := result(t, resp); r["resultType"] != "complete" {
		t.Fatalf("slow_compute 0: %v", r)
	}
	if n := entered.Load(); n != 1 {
		t.Fatalf("a task-capable tools/call entered the tasks extension %d times, want 1", n)
	}
}
