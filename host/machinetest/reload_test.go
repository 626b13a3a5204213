package machinetest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/machinetools"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestReload: the policy's machine_tools are reloaded with it (a name in
// both is the policy's), discovery runs again at every reload, an
// unchanged result changes nothing, and without registrations the plugin
// is not loaded.
func TestReload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a host (not in -short)")
	}
	_, docs := built(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	writePolicy := func(tools map[string]caps.MachineTool) {
		b, _ := json.Marshal(map[string]any{"machine_tools": tools})
		if err := os.WriteFile(policy, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a copy of the fixture the test can change
	prog := filepath.Join(dir, "aoidocs")
	copyFile(t, docs, prog)

	writePolicy(map[string]caps.MachineTool{"p": {Command: []string{prog, "docs"}, Prefix: "pol"},
		"f": {Command: []string{prog, "docs"}, Prefix: "frompolicy"}})
	f := start(t, map[string]caps.MachineTool{"f": {Command: []string{prog, "docs"}, Prefix: "fromflag"}}, policy)
	prefixes := func() []string {
		seen := map[string]bool{}
		for _, tl := range f.h.Registry().Catalog().Tools {
			p, _, _ := strings.Cut(tl.Decl.Name, "_")
			seen[p] = true
		}
		var out []string
		for p := range seen {
			out = append(out, p)
		}
		sort.Strings(out)
		return out
	}
	if got := prefixes(); !slices.Equal(got, []string{"frompolicy", "pol"}) {
		t.Fatalf("prefixes %v", got)
	}
	adapter := func() *plugin.Plugin {
		for _, p := range f.h.Registry().Catalog().Plugins {
			if p.Manifest.Name == machinetools.Plugin {
				return p
			}
		}
		return nil
	}
	gen, first := f.h.Registry().Catalog().Generation, adapter()
	// a call: the adapter's instance keeps the configuration it read
	// (an instance belongs to one load)
	callMany := func(name string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := f.h.Registry().CallTool(ctx, plugin.CallRequest{Owner: "alice", Name: name, Args: []byte(`{"count":2}`)})
		return string(out), err
	}
	if out, err := callMany("pol_many"); err != nil || !strings.Contains(out, `"isError":false`) || !strings.Contains(out, `"count":2`) {
		t.Fatalf("pol_many: %v %.300s", err, out)
	}

	reload := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.h.Reload(ctx); err != nil {
			t.Fatalf("reload: %v", err)
		}
	}
	// nothing changed: discovery ran again and made the same, so the
	// plugin carries over as it was
	reload()
	cat := f.h.Registry().Catalog()
	if got := prefixes(); !slices.Equal(got, []string{"frompolicy", "pol"}) || cat.Generation != gen+1 || adapter() != first {
		t.Fatalf("after a reload: %v, generation %d (was %d), plugin kept %v", got, cat.Generation, gen, adapter() == first)
	}

	// the policy changes: its tools follow; the flag's entry is back
	writePolicy(map[string]caps.MachineTool{"q": {Command: []string{prog, "docs"}, Prefix: "newpol"}})
	reload()
	if got := prefixes(); !slices.Equal(got, []string{"fromflag", "newpol"}) || adapter() == first {
		t.Fatalf("after the policy changed: %v", got)
	}
	// the new load's calls read the new configuration, not one an
	// instance of the previous load kept
	if out, err := callMany("newpol_many"); err != nil || !strings.Contains(out, `"isError":false`) || !strings.Contains(out, `"count":2`) {
		t.Fatalf("newpol_many after the reload: %v %.300s", err, out)
	}
	if out, err := callMany("pol_many"); err == nil && !strings.Contains(out, `"isError":true`) {
		t.Fatalf("pol_many after its registration went: %.300s", out)
	}

	// the program changes under the same registration: discovery runs
	// again and refuses it (it now answers prose), the rest serve
	script := filepath.Join(dir, "broken.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho not json\n"), 0o755)
	writePolicy(map[string]caps.MachineTool{"q": {Command: []string{prog, "docs"}, Prefix: "newpol"}, "b": {Command: []string{script}}})
	reload()
	if got := prefixes(); !slices.Equal(got, []string{"fromflag", "newpol"}) {
		t.Fatalf("with a broken tool: %v", got)
	}
	var refused []string
	for _, p := range f.h.Registry().Catalog().Plugins {
		for _, r := range p.Refused() {
			refused = append(refused, r.Name+": "+r.Reason)
		}
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0], "b: capabilities: not one JSON object") {
		t.Fatalf("refused %v", refused)
	}
	// a malformed policy is refused as a whole: the previous one applies
	os.WriteFile(policy, []byte(`{"machine_tools": {"x": {"command": ["relative"]}}}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f.h.Reload(ctx)
	if got := prefixes(); !slices.Equal(got, []string{"fromflag", "newpol"}) {
		t.Fatalf("after a malformed policy: %v", got)
	}
	// nothing registered: the plugin is not loaded
	writePolicy(nil)
	f2 := start(t, nil, policy)
	for _, p := range f2.h.Registry().Catalog().Plugins {
		if p.Manifest.Name == machinetools.Plugin {
			t.Fatalf("machine_tools loaded without registrations")
		}
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestNotFromPluginsDir: a configured plugin from --plugins-dir is never
// given the registrations (and their variables), even one called
// machine_tools with the process grant, when no built-in is.
func TestNotFromPluginsDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a host (not in -short)")
	}
	builtins, docs := built(t)
	dir := t.TempDir()
	pkg := filepath.Join(dir, "plugins", machinetools.Plugin)
	os.MkdirAll(pkg, 0o755)
	for _, f := range []string{"manifest.json", "plugin.wasm"} {
		copyFile(t, filepath.Join(builtins, machinetools.Plugin, f), filepath.Join(pkg, f))
	}
	policy := filepath.Join(dir, "policy.json")
	os.WriteFile(policy, []byte(`{"plugins":{"machine_tools":{"process":{"commands":["*"],"cwd":["$SANDBOX"]}}}}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := host.New(ctx, host.Config{PluginsDir: filepath.Join(dir, "plugins"), PolicyFile: policy, Workspace: dir,
		MachineTools: map[string]caps.MachineTool{"docs": {Command: []string{docs, "docs"}, Env: []string{"AIOD_MT_TOKEN"}}},
		Browser:      browser.Config{Mode: browser.Off}, CacheDir: testplugins.CacheDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if err := h.Registry().WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	cat := h.Registry().Catalog()
	if len(cat.Plugins) != 0 || len(cat.Tools) != 0 {
		t.Fatalf("loaded %d plugins, %d tools", len(cat.Plugins), len(cat.Tools))
	}
}
