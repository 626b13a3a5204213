package plugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
)

func TestCheckedRecords(t *testing.T) { onEngines(t, testCheckedRecords) }

// testCheckedRecords: a plugin that passed its load check is listed by the
// next start of the same program (CheckedKey) dormant, without a compile,
// and answers; another program's key, a record that does not parse, or a
// changed manifest compile and check again; a plugin that fails its check
// leaves no record; KeepCompiled ignores the records.
func testCheckedRecords(t *testing.T, eng runtime.Engine) {
	ctx := context.Background()
	dir, records := t.TempDir(), t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	start := func(key string, keep bool) (*plugin.Registry, *plugin.Plugin) {
		t.Helper()
		reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet(),
			CheckedDir: records, CheckedKey: key, KeepCompiled: keep})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close(ctx) })
		return reg, reg.Catalog().Lookup("echo").Plugin
	}
	files := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(records, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	reg, p := start("build-a", false)
	if p.Dormant() {
		t.Fatal("dormant at the first start: nothing recorded yet")
	}
	if got := files(); len(got) != 1 {
		t.Fatalf("records after the first start: %v, want one", got)
	}
	reg.Close(ctx)

	reg, p = start("build-a", false)
	if !p.Dormant() {
		t.Fatal("the same program with the same plugin: compiled at start, want dormant")
	}
	if got := text(call(t, reg, "echo", `{"text":"woken"}`)); got != "woken" {
		t.Fatalf("first call of a dormant start: %q", got)
	}
	if p.Dormant() {
		t.Fatal("dormant after its first call")
	}
	reg.Close(ctx)

	if _, p = start("build-b", false); p.Dormant() {
		t.Fatal("another program's record was used")
	}
	if _, p = start("build-a", true); p.Dormant() {
		t.Fatal("KeepCompiled: started dormant")
	}
	// a record planted under build-b's name that names build-a
	byProgram := map[string]string{}
	for _, f := range files() {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Program string }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		byProgram[r.Program] = f
	}
	if len(byProgram) != 2 {
		t.Fatalf("records by program: %v, want build-a's and build-b's", byProgram)
	}
	a, err := os.ReadFile(byProgram["build-a"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(byProgram["build-b"], a, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, p = start("build-b", false); p.Dormant() {
		t.Fatal("a record naming another program was used")
	}

	for _, f := range files() {
		if err := os.WriteFile(f, []byte(`{"program":`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, p = start("build-b", false); p.Dormant() {
		t.Fatal("a record that does not parse was used")
	}
	if _, p = start("build-b", false); !p.Dormant() {
		t.Fatal("the record was not written again after the check passed")
	}

	// a changed manifest is another plugin key
	testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
		m["version"] = "9.9.9"
	}))
	if _, p = start("build-b", false); p.Dormant() {
		t.Fatal("a changed manifest was not checked again")
	}
}

// TestCheckedRecordsNotForFailures: a plugin whose check fails writes no
// record, and fails again at the next start.
func TestCheckedRecordsNotForFailures(t *testing.T) {
	ctx := context.Background()
	dir, records := t.TempDir(), t.TempDir()
	d := testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
		m["name"] = "ghost"
		m["tools"] = []any{map[string]any{"name": "ghost_tool", "inputSchema": map[string]any{"type": "object"}}}
	}))
	if err := os.Rename(d, filepath.Join(dir, "ghost")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet(),
			CheckedDir: records, CheckedKey: "build-a"})
		if err == nil || !strings.Contains(err.Error(), `manifest names tool "ghost_tool", which the module does not list`) {
			if reg != nil {
				reg.Close(ctx)
			}
			t.Fatalf("a plugin that fails its check: %v", err)
		}
		if m, _ := filepath.Glob(filepath.Join(records, "*.json")); len(m) != 0 {
			t.Fatalf("records of a failed check: %v", m)
		}
	}
}

// TestRestedAfterWake: a wake's compile is followed by one Rested (the
// host returns the compile's garbage to the OS), also for a plugin that
// started dormant, whose start-up load put nothing to sleep.
func TestRestedAfterWake(t *testing.T) {
	ctx := context.Background()
	dir, records := t.TempDir(), t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	rested := make(chan struct{}, 8)
	start := func() *plugin.Registry {
		reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet(),
			CheckedDir: records, CheckedKey: "build-a", Rested: func() { rested <- struct{}{} }})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	start().Close(ctx) // records the check
	reg := start()
	defer reg.Close(ctx)
	if !reg.Catalog().Lookup("echo").Plugin.Dormant() {
		t.Fatal("not dormant at the second start")
	}
	select {
	case <-rested:
		t.Fatal("Rested before any wake")
	case <-time.After(300 * time.Millisecond):
	}
	for range 3 { // one wake, then warm calls
		if got := text(call(t, reg, "echo", `{"text":"x"}`)); got != "x" {
			t.Fatalf("echo: %q", got)
		}
	}
	select {
	case <-rested:
	case <-time.After(5 * time.Second):
		t.Fatal("no Rested after a wake")
	}
	select {
	case <-rested:
		t.Fatal("Rested twice for one wake")
	case <-time.After(500 * time.Millisecond):
	}
}
