package sandboxtest

import (
	"strings"
	"testing"
)

// The cost of lockdown on `sandbox_execute_bash echo hi`: the same call
// through the registry (no HTTP, so that only the process path differs)
// on a host without lockdown and on a locked-down one, in the shared
// session (its shell started once, then reused) and in a new session each
// call (a shell, and under lockdown a bubblewrap sandbox, started per
// call).

func benchEcho(b *testing.B, call func(args map[string]any) *toolResult, newSession bool) {
	args := map[string]any{"cmd": "echo hi"}
	if newSession {
		args["new_session"] = true
	}
	if r := call(args); r.IsError || !strings.Contains(r.Text(), "hi") { // warm the session
		b.Fatal(r.Text())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := call(args); r.IsError || !strings.Contains(r.Text(), "hi") {
			b.Fatal(r.Text())
		}
	}
}

func plainHost(b *testing.B) *lockHost {
	return &lockHost{s: sharedServer(b, "")}
}

func BenchmarkEchoHiSession(b *testing.B) {
	l := plainHost(b)
	benchEcho(b, func(a map[string]any) *toolResult { return l.call(b, "default", "sandbox_execute_bash", a) }, false)
}

func BenchmarkLockdownEchoHiSession(b *testing.B) {
	l := startLockdown(b)
	benchEcho(b, func(a map[string]any) *toolResult { return l.call(b, "default", "sandbox_execute_bash", a) }, false)
}

func BenchmarkEchoHiNewSession(b *testing.B) {
	l := plainHost(b)
	benchEcho(b, func(a map[string]any) *toolResult { return l.call(b, "default", "sandbox_execute_bash", a) }, true)
}

func BenchmarkLockdownEchoHiNewSession(b *testing.B) {
	l := startLockdown(b)
	benchEcho(b, func(a map[string]any) *toolResult { return l.call(b, "default", "sandbox_execute_bash", a) }, true)
}
