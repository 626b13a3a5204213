package plugin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/filedigest"
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

// TestPrewake: a module a call woke is noted awake in its record; the next
// start with Prewake compiles it in the background without a call, and the
// end of the start-up load (Rest) leaves it awake; the idle timeout puts
// it to sleep and notes that, and a start after that leaves it dormant, as
// does a start without Prewake.
func TestPrewake(t *testing.T) {
	ctx := context.Background()
	dir, records := t.TempDir(), t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	eng := engine(t)
	start := func(prewake bool, idle time.Duration) (*plugin.Registry, *plugin.Plugin) {
		t.Helper()
		reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet(),
			CheckedDir: records, CheckedKey: "build-a", Prewake: prewake, IdleTimeout: idle})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close(ctx) })
		return reg, reg.Catalog().Lookup("echo").Plugin
	}
	// awake reads the record's state (one plugin, one record)
	awake := func() bool {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(records, "*.json"))
		if err != nil || len(m) != 1 {
			t.Fatalf("records: %v %v, want one", m, err)
		}
		b, err := os.ReadFile(m[0])
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Awake bool }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r.Awake
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(end) {
				t.Fatalf("waited 10 s for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stays := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if !cond() {
				t.Fatalf("%s: no longer so", what)
			}
		}
	}

	reg, _ := start(true, 0) // checks and records it
	reg.Close(ctx)
	if awake() {
		t.Fatal("noted awake before any call")
	}

	reg, p := start(true, 0)
	if !p.Dormant() {
		t.Fatal("not dormant at the second start")
	}
	stays("dormant without a call when not noted awake", p.Dormant)
	if got := text(call(t, reg, "echo", `{"text":"x"}`)); got != "x" {
		t.Fatalf("echo: %q", got)
	}
	waitFor("the wake noted in the record", awake)
	reg.Close(ctx)

	reg, p = start(true, 0)
	waitFor("the prewake", func() bool { return !p.Dormant() })
	if n := reg.Rest(); n != 0 || p.Dormant() {
		t.Fatalf("the end of the start-up load put %d modules to sleep, echo dormant %v: want a prewoken module kept", n, p.Dormant())
	}
	if got := text(call(t, reg, "echo", `{"text":"y"}`)); got != "y" {
		t.Fatalf("echo after a prewake: %q", got)
	}
	reg.Close(ctx)

	_, p = start(false, 0)
	stays("dormant without Prewake", p.Dormant)
	if !awake() {
		t.Fatal("a start without Prewake changed the record")
	}

	reg, p = start(true, 200*time.Millisecond)
	waitFor("the prewake", func() bool { return !p.Dormant() })
	waitFor("the idle timeout's sleep", p.Dormant)
	waitFor("the sleep noted in the record", func() bool { return !awake() })
	reg.Close(ctx)

	_, p = start(true, 0)
	stays("dormant once noted asleep", p.Dormant)
}

// TestPrewakeNotedAtClose: a module compiled at start (no wake) and called
// is noted awake when its registry closes, and the next start prewakes it;
// one only checked at its load is not.
func TestPrewakeNotedAtClose(t *testing.T) {
	ctx := context.Background()
	dir, records := t.TempDir(), t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	eng := engine(t)
	start := func() (*plugin.Registry, *plugin.Plugin) {
		t.Helper()
		reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet(),
			CheckedDir: records, CheckedKey: "build-a", Prewake: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close(ctx) })
		return reg, reg.Catalog().Lookup("echo").Plugin
	}
	reg, p := start()
	if p.Dormant() {
		t.Fatal("dormant at the first start")
	}
	reg.Close(ctx) // checked only
	reg, p = start()
	time.Sleep(300 * time.Millisecond)
	if !p.Dormant() {
		t.Fatal("prewoken after a run that only checked it")
	}
	reg.Close(ctx)

	if err := os.RemoveAll(records); err != nil {
		t.Fatal(err)
	}
	reg, p = start() // compiled and checked again, then called
	if p.Dormant() {
		t.Fatal("dormant without a record")
	}
	if got := text(call(t, reg, "echo", `{"text":"x"}`)); got != "x" {
		t.Fatalf("echo: %q", got)
	}
	reg.Close(ctx)
	_, p = start()
	for end := time.Now().Add(10 * time.Second); p.Dormant(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("not prewoken after a run that called it without a wake")
		}
	}
}

// TestDigestsAcrossStarts: a start keeps the module digests it hashed
// beside the records, so the next start lists an unchanged plugin and
// wakes it without hashing its module; a module whose file changed (its
// bytes written again: a new change time) is hashed again, and one whose
// bytes changed is refused for its pinned digest, not served from the
// saved one.
func TestDigestsAcrossStarts(t *testing.T) {
	defer func(s time.Duration) { filedigest.Settle = s }(filedigest.Settle)
	filedigest.Settle = 0 // the package was written just now
	ctx := context.Background()
	dir, records := t.TempDir(), t.TempDir()
	pkg := testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	eng := engine(t)
	start := func() (*plugin.Registry, error) {
		t.Helper()
		reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet(),
			CheckedDir: records, CheckedKey: "build-a"})
		t.Cleanup(func() { reg.Close(ctx) })
		return reg, err
	}
	hashes := func(what string, want int64, answer bool) {
		t.Helper()
		n := plugin.ModuleHashes()
		reg, err := start()
		if answer {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := text(call(t, reg, "echo", `{"text":"x"}`)); got != "x" {
				t.Fatalf("%s: echo: %q", what, got)
			}
		}
		reg.Close(ctx)
		if got := plugin.ModuleHashes() - n; got != want {
			t.Errorf("%s: %d modules hashed, want %d", what, got, want)
		}
	}
	hashes("first start", 1, true)
	hashes("unchanged", 0, true)
	mod := filepath.Join(pkg, "plugin.wasm")
	b, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(mod, b, 0o644); err != nil {
		t.Fatal(err)
	}
	hashes("written again", 1, true)
	hashes("unchanged again", 0, true)
	// the manifest pins the module's digest, and it still decides: other
	// bytes are refused
	sum := sha256.Sum256(b)
	if m, _ := os.ReadFile(filepath.Join(pkg, "manifest.json")); !bytes.Contains(m, []byte(hex.EncodeToString(sum[:]))) {
		t.Fatal("the package's manifest does not pin its module")
	}
	if err := os.WriteFile(mod, append(b, 0, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	n := plugin.ModuleHashes()
	reg, err := start()
	if err == nil || !strings.Contains(err.Error(), "does not match") || reg.Catalog().Lookup("echo") != nil {
		t.Fatalf("changed bytes under a pinned digest: %v", err)
	}
	if plugin.ModuleHashes() == n {
		t.Fatal("the changed module was not hashed")
	}
}
