package machinetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestLockdown: in lockdown a Machine Mode tool must be pinned; it runs
// under bubblewrap as uid 10001, without network, in the calling tenant's
// /workspace, with the sandbox's environment and the named variables;
// its program and the files among its fixed arguments are visible there.
func TestLockdown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tools under bubblewrap (not in -short)")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("no bubblewrap")
	}
	builtins, docs := built(t)
	// outside /tmp: a host path under /tmp is, to a tenant, a path in its
	// own /tmp
	base, err := os.MkdirTemp("/var/tmp", "aiod-machinetest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	bin := filepath.Join(base, "bin")
	os.MkdirAll(bin, 0o755)
	prog := filepath.Join(bin, "aoidocs")
	copyFile(t, docs, prog)
	notes := filepath.Join(bin, "notes.py")
	copyFile(t, filepath.Join("testdata", "notes.py"), notes)
	data := filepath.Join(base, "data")
	regs := map[string]caps.MachineTool{
		"docs":     {Command: []string{prog, "docs"}, SHA256: digest(t, prog), Env: []string{"AIOD_MT_TOKEN"}},
		"n":        {Command: []string{python(t), notes}, Prefix: "notes", SHA256: digest(t, python(t))},
		"unpinned": {Command: []string{prog, "docs"}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := host.New(ctx, host.Config{Builtins: os.DirFS(builtins), MachineTools: regs, APIKey: "lockdown-test-key",
		Browser: browser.Config{Mode: browser.Off}, CacheDir: testplugins.CacheDir(),
		LockdownConfig: host.LockdownConfig{Lockdown: true, DataDir: data},
		TenancyConfig:  host.TenancyConfig{AuditLog: filepath.Join(base, "audit.log")}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	lctx, lcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer lcancel()
	if err := h.Registry().WaitLoaded(lctx); err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, p := range h.Registry().Catalog().Plugins {
		for _, r := range p.Refused() {
			refused = append(refused, r.Name+": "+r.Reason)
		}
	}
	if len(refused) != 1 || refused[0] != "unpinned: "+prog+": lockdown requires a sha256 pin of the program" {
		t.Errorf("refused %q", refused)
	}
	call := func(owner, tool string, args any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(args)
		cctx, ccancel := context.WithTimeout(ctx, time.Minute)
		defer ccancel()
		out, err := h.Registry().CallTool(cctx, plugin.CallRequest{Owner: owner, Name: tool, Args: b})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var r struct {
			Structured map[string]any `json:"structuredContent"`
			IsError    bool           `json:"isError"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.IsError {
			t.Fatalf("%s as %s: %s", tool, owner, out)
		}
		return r.Structured
	}
	for _, owner := range []string{"alice", "bob"} {
		facts := events(call(owner, "docs_inspect", map[string]any{}))[0]
		if facts["uid"] != float64(10001) || facts["cwd"] != "/workspace" || facts["stdin"] != "" {
			t.Errorf("%s: uid %v cwd %v stdin %q", owner, facts["uid"], facts["cwd"], facts["stdin"])
		}
		if nets := anyStrings(facts["net"]); !slices.Equal(nets, []string{"lo"}) {
			t.Errorf("%s: network interfaces %v", owner, nets)
		}
		names := anyStrings(facts["env_names"])
		if !slices.Equal(names, []string{"AIOD_MT_TOKEN", "HOME", "LOGNAME", "PATH", "PWD", "SHELL", "TMPDIR", "USER"}) {
			t.Errorf("%s: environment %v", owner, names)
		}
		env := facts["env"].(map[string]any)
		if env["HOME"] != "/workspace" || env["AIOD_MT_TOKEN"] != "token-for-docs" {
			t.Errorf("%s: environment %v", owner, env)
		}
		if env["PWD"] != "/workspace" {
			t.Errorf("%s: PWD %v", owner, env["PWD"])
		}
		// a fixed argument (the Python script) is visible in the sandbox
		if evs := events(call(owner, "notes_list", map[string]any{"limit": 1})); len(evs) != 1 || evs[0]["text"] != "buy tea" {
			t.Errorf("%s: notes_list %v", owner, evs)
		}
	}
}

func digest(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
