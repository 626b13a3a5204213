package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
)

func TestDormant(t *testing.T) { onEngines(t, testDormant) }

// testDormant: Rest drops the code of a module without instances; its next
// call compiles it again and answers as before; a module with a live
// instance is not put to sleep.
func testDormant(t *testing.T, eng runtime.Engine) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	reg := newRegistryOn(t, eng, dir)
	p := reg.Catalog().Lookup("echo").Plugin
	if p.Dormant() {
		t.Fatal("dormant before Rest")
	}
	if n := reg.Rest(); n != 1 {
		t.Fatalf("Rest put %d modules to sleep, want 1", n)
	}
	if !p.Dormant() {
		t.Fatal("not dormant after Rest")
	}
	for i := range 3 {
		if got := text(call(t, reg, "echo", `{"text":"again"}`)); got != "again" {
			t.Fatalf("call %d after Rest: %q", i, got)
		}
	}
	if p.Dormant() {
		t.Fatal("dormant after a call")
	}
	// the call's instance is pooled: live, so the module stays awake
	if n := reg.Rest(); n != 0 || p.Dormant() {
		t.Fatalf("Rest with a pooled instance: put %d to sleep, dormant %v", n, p.Dormant())
	}
}

// TestDormantKeepCompiled: with KeepCompiled nothing sleeps.
func TestDormantKeepCompiled(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet(), KeepCompiled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	if n := reg.Rest(); n != 0 || reg.Catalog().Lookup("echo").Plugin.Dormant() {
		t.Fatalf("KeepCompiled: Rest put %d to sleep", n)
	}
}

// TestDormantAfterIdle: the janitor puts a module to sleep once its last
// instance (a tenant's, evicted when idle) has been gone the idle timeout.
func TestDormantAfterIdle(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet(), IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	p := reg.Catalog().Lookup("echo").Plugin
	out, err := reg.CallTool(ctx, plugin.CallRequest{Name: "echo", Owner: "tenant-a", Args: []byte(`{"text":"t"}`)})
	if err != nil || !strings.Contains(string(out), `"t"`) {
		t.Fatalf("call: %s %v", out, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.Dormant() {
		if time.Now().After(deadline) {
			t.Fatalf("not dormant 10 s after its only instance went idle (idle instances %d)", p.IdleInstances("tenant-a"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := text(call(t, reg, "echo", `{"text":"woken"}`)); got != "woken" {
		t.Fatalf("call after the janitor's sleep: %q", got)
	}
}

// TestDormantFreesCode: a dormant module's machine code leaves the process
// (the engine unmaps it): the anonymous executable mappings, where wazero
// puts compiled code, shrink. Closing only the runtime of a compiled module
// kept its code in the engine its cache shares, for good. (Counting every
// mapping of the process instead failed once: the Go heap and the race
// detector map memory of their own at any time.)
func TestDormantFreesCode(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	reg := newRegistry(t, dir)
	awake := codeBytes(t)
	if awake == 0 {
		t.Fatal("no anonymous executable mapping with echo compiled: nothing to measure")
	}
	if reg.Rest() != 1 {
		t.Fatal("Rest put nothing to sleep")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		goruntime.GC()
		if n := codeBytes(t); n < awake {
			t.Logf("anonymous executable mappings: %d KiB awake, %d KiB dormant", awake>>10, n>>10)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("anonymous executable mappings %d bytes after Rest, %d before: the module's code is still mapped", codeBytes(t), awake)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := text(call(t, reg, "echo", `{"text":"x"}`)); got != "x" {
		t.Fatalf("after the code was unmapped: %q", got)
	}
}

// codeBytes sums the process's anonymous executable mappings (/proc/self/maps
// lines with an x permission and no path).
func codeBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || !strings.Contains(f[1], "x") { // a sixth field is the path
			continue
		}
		var lo, hi int64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err == nil {
			n += hi - lo
		}
	}
	return n
}

// TestDormantKeptVersionWakes: a version that keeps serving after a broken
// new one was refused (its module overwritten in place) wakes from the
// bytes it was loaded with, not the broken file.
func TestDormantKeptVersionWakes(t *testing.T) {
	dir := t.TempDir()
	pkg := testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	reg := newRegistry(t, dir)
	if err := os.WriteFile(filepath.Join(pkg, "plugin.wasm"), []byte("\x00asm\x01\x00\x00\x00broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := reg.ReloadReport(context.Background())
	if err == nil {
		t.Fatalf("reload of a broken module succeeded: %+v", rep)
	}
	if b, _ := json.Marshal(rep.Kept); !strings.Contains(string(b), "echo") {
		t.Fatalf("kept %s, want echo", b)
	}
	if reg.Rest() != 1 {
		t.Fatal("Rest put nothing to sleep")
	}
	if got := text(call(t, reg, "echo", `{"text":"kept"}`)); got != "kept" {
		t.Fatalf("the kept version after a wake: %q", got)
	}
}
