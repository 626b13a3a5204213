package lockdown_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/lockdown"
)

// TestStart: lockdown is built from its own section and the host's facts
// (Inputs), not from the host's configuration: off is nothing, a start
// missing a piece is refused naming each, and a complete one defaults the
// upstream pin file into the data directory.
func TestStart(t *testing.T) {
	if l, err := lockdown.Start(lockdown.Config{}, lockdown.Inputs{}); l != nil || err != nil {
		t.Fatalf("off: %v, %v", l, err)
	}
	if _, err := lockdown.Start(lockdown.Config{Lockdown: true}, lockdown.Inputs{}); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("no data dir: %v", err)
	}
	data := t.TempDir()
	_, err := lockdown.Start(lockdown.Config{Lockdown: true, DataDir: data}, lockdown.Inputs{Policy: &caps.Policy{},
		Workspace: t.TempDir(), AllowUnauthenticated: true, CacheDir: filepath.Join(data, "tenants", "cache")})
	for _, want := range []string{"authentication:", "--allow-unauthenticated is not allowed", "--workspace is not used",
		"an audit log:", "and the cache directory (" + filepath.Join(data, "tenants", "cache") + ") overlap"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v lacks %q", err, want)
		}
	}
	l, err := lockdown.Start(lockdown.Config{Lockdown: true, DataDir: data}, lockdown.Inputs{Policy: &caps.Policy{},
		Authenticated: true, AuditLog: filepath.Join(t.TempDir(), "audit.log")})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(data)
	if got, want := l.PinFile(), filepath.Join(real, "upstream-pins.json"); got != want {
		t.Errorf("pin file %s, want %s", got, want)
	}
	if env := l.Env(); env.Home != "/workspace" || env.Tmp != "/tmp" {
		t.Errorf("env %+v", env)
	}
	dirs, err := l.FileDirs("../../etc")
	if err != nil {
		t.Fatal(err)
	}
	if ws := dirs["/workspace"]; !strings.HasPrefix(ws, filepath.Join(real, "tenants", "x-")) {
		t.Errorf("an owner name that climbs: workspace %s", ws)
	}
}
