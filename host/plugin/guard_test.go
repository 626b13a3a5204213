package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/sdk/abi"
)

// TestCallGuardNoInstance: when no instance of a guard can be had before
// the call's deadline, CallGuard fails with an error. It used to answer a
// tool call's isError result ({"content":[...],"isError":true}) as if the
// guard had written it, which the hook chain then refused as "an answer
// that is not a hook answer: json: unknown field \"content\"" (seen when
// a guard's first instance took longer than its timeout on a loaded
// machine). A tool call in the same case still answers an isError result.
func TestCallGuardNoInstance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, dir, "host/hooks/testdata/testguard", nil, nil)
	reg := newRegistryOn(t, testplugins.Engine(t), dir)
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer lcancel()
	if err := reg.WaitLoaded(lctx); err != nil {
		t.Fatal(err)
	}
	// a deadline already past: no instance is idle (none was called yet),
	// and none can be made in time
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	ev := []byte(`{"tenant":"default","tool":"echo","arguments":{"text":"hi"},"config":{"before":"allow"}}`)
	for _, op := range []uint64{abi.OpHookBefore, abi.OpHookAfter} {
		out, err := reg.CallGuard(past, "testguard", op, "", "echo", ev)
		if err == nil || out != nil {
			t.Errorf("op %d: answer %q, error %v; want no answer and an error", op, out, err)
		} else if !strings.Contains(err.Error(), "no instance became free before the deadline") {
			t.Errorf("op %d: error %v, want it to say no instance became free", op, err)
		}
	}
	// a tool call answers the same failure as an isError result
	res, err := reg.CallTool(past, plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hi"}`)})
	if err != nil || !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "no instance became free") {
		t.Errorf("tool call: %s, %v; want an isError result", res, err)
	}
	// and the guard still answers once there is time
	out, err := reg.CallGuard(context.Background(), "testguard", abi.OpHookBefore, "", "echo", ev)
	if err != nil || string(out) != `{"action":"allow"}` {
		t.Errorf("guard with time: %q, %v", out, err)
	}
}

// TestGuardWakesBeforeDeadline: a dormant guard's first call compiles its
// module again before the call's deadline starts. The wake (a second or
// two under -race on a loaded machine) used to count against the guard's
// timeout, and the call failed closed with "no instance became free
// before the deadline" (TestGuardPlugins beside TestCodeToolsGuarded).
// Not parallel: it slows every wake of the process.
func TestGuardWakesBeforeDeadline(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "host/hooks/testdata/testguard", nil, editManifest(func(m map[string]any) {
		m["limits"] = map[string]any{"timeout_ms": 1000}
	}))
	reg := newRegistryOn(t, testplugins.Engine(t), dir)
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer lcancel()
	if err := reg.WaitLoaded(lctx); err != nil {
		t.Fatal(err)
	}
	if n := reg.Rest(); n != 1 {
		t.Fatalf("%d modules went dormant, want 1", n)
	}
	defer plugin.SetWakeDelay(1500 * time.Millisecond)()
	ev := []byte(`{"tenant":"default","tool":"echo","arguments":{"text":"hi"},"config":{"before":"allow"}}`)
	out, err := reg.CallGuard(context.Background(), "testguard", abi.OpHookBefore, "", "echo", ev)
	if err != nil || string(out) != `{"action":"allow"}` {
		t.Fatalf("first call of a dormant guard: %q, %v", out, err)
	}
}
