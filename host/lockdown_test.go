package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// echoPackage puts the echo plugin in a fresh plugins directory and
// returns the directory and the module's sha256.
func echoPackage(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	pdir := testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	b, err := os.ReadFile(filepath.Join(pdir, "plugin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return dir, hex.EncodeToString(sum[:])
}

func writePolicy(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLockdownRefusesToStart(t *testing.T) {
	plugins, digest := echoPackage(t)
	data := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pinned := writePolicy(t, `{"plugins": {"echo": {"sha256": "`+digest+`"}}}`)
	wrong := writePolicy(t, `{"plugins": {"echo": {"sha256": "`+strings.Repeat("0", 64)+`"}}}`)
	tests := []struct {
		name string
		cfg  host.Config
		want []string
	}{
		{"no authentication", host.Config{}, []string{"authentication: set --api-key"}},
		{"no data dir", host.Config{APIKey: "k", LockdownConfig: host.LockdownConfig{Lockdown: true}}, []string{"--data-dir"}},
		{"unpinned plugin", host.Config{APIKey: "k", PluginsDir: plugins},
			[]string{`plugin echo: not pinned by the policy: add "plugins": {"echo": {"sha256": "` + digest + `"}}`}},
		{"wrong pin", host.Config{APIKey: "k", PluginsDir: plugins, PolicyFile: wrong}, []string{"plugin echo: not pinned by the policy: its module's sha256 " + digest + " does not match the pin"}},
		{"everything at once", host.Config{PluginsDir: plugins, Workspace: t.TempDir(), AllowUnauthenticated: true},
			[]string{"authentication", "--allow-unauthenticated is not allowed", "--workspace is not used", "plugin echo"}},
		{"plugins dir among the tenants'", host.Config{APIKey: "k", PluginsDir: filepath.Join(data, "tenants", "alice", "workspace")},
			[]string{"and the plugins directory (" + filepath.Join(data, "tenants", "alice", "workspace") + ") overlap"}},
		{"cache dir holding the tenants'", host.Config{APIKey: "k", PolicyFile: pinned, CacheDir: data},
			[]string{"and the cache directory (" + data + ") overlap"}},
		{"no audit log", host.Config{APIKey: "k", PolicyFile: pinned}, []string{"an audit log: set --audit-log FILE"}},
		{"audit log among the tenants'", host.Config{APIKey: "k", PolicyFile: pinned, TenancyConfig: host.TenancyConfig{AuditLog: filepath.Join(data, "tenants", "a", "audit.log")}},
			[]string{"and the audit log"}},
		{"tenant workspace holding the plugins", host.Config{APIKey: "k", PluginsDir: plugins, PolicyFile: writePolicy(t, `{"plugins": {"echo": {"sha256": "`+digest+`"}}, "tenants": {"eve": {"keys": [], "workspace": "`+filepath.Dir(plugins)+`"}}}`)},
			[]string{`tenant "eve"'s workspace (` + filepath.Dir(plugins) + `) and the plugins directory`}},
		{"two tenants, one workspace", host.Config{APIKey: "k", PolicyFile: writePolicy(t, `{"tenants": {"a": {"keys": [], "workspace": "/srv/w"}, "b": {"keys": [], "workspace": "/srv/w/b"}}}`)},
			[]string{`tenants "a" and "b" have overlapping workspaces`}},
		{"unpinned command server", host.Config{APIKey: "k", PolicyFile: writePolicy(t, `{"upstreams": {"cmd": {"command": "/bin/cat"}, "ok": {"command": "/bin/cat", "sha256": "`+strings.Repeat("a", 64)+`"}}}`)},
			[]string{`upstream MCP server "cmd": a command server must be pinned`}},
		{"policy file in a tenant's workspace", host.Config{APIKey: "k", PolicyFile: filepath.Join(data, "tenants", "bob", "workspace", "policy.json")},
			[]string{"and the policy file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Lockdown, cfg.Logger = true, quiet
			if cfg.DataDir == "" && tc.name != "no data dir" {
				cfg.DataDir = data
			}
			if cfg.CacheDir == "" {
				cfg.CacheDir = "-"
			}
			if cfg.PolicyFile != "" && strings.Contains(cfg.PolicyFile, "tenants") {
				if err := os.MkdirAll(filepath.Dir(cfg.PolicyFile), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(cfg.PolicyFile, []byte(`{}`), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if cfg.PluginsDir != "" {
				if err := os.MkdirAll(cfg.PluginsDir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			h, err := host.New(context.Background(), cfg)
			if err == nil {
				h.Close(context.Background())
				t.Fatal("started")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestLockdownStarts: with everything in place a locked-down host starts,
// serves a pinned plugin, and refuses an unpinned one added later.
func TestLockdownStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the plugin under bubblewrap: make test runs it, make test-short does not")
	}
	plugins, digest := echoPackage(t)
	data := t.TempDir()
	policy := writePolicy(t, `{"plugins": {"echo": {"sha256": "`+digest+`"}}}`)
	h, _, _ := runHost(t, host.Config{APIKey: "k", PluginsDir: plugins, PolicyFile: policy,
		LockdownConfig: host.LockdownConfig{Lockdown: true, DataDir: data},
		TenancyConfig:  host.TenancyConfig{AuditLog: filepath.Join(t.TempDir(), "audit.log")}})
	out, err := h.Registry().CallTool(context.Background(), plugin.CallRequest{Owner: "alice", Name: "echo", Args: []byte(`{"text":"hi"}`)})
	if err != nil || !strings.Contains(string(out), "hi") {
		t.Fatalf("echo: %s %v", out, err)
	}
	for _, d := range []string{"run", "check/workspace"} {
		if _, err := os.Stat(filepath.Join(data, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	// A package added later that the policy does not pin is refused at
	// the reload, naming the pin to add; the pinned one keeps serving.
	testplugins.Package(t, plugins, "plugins/examples/hash", nil, nil)
	_ = h.Reload(context.Background())
	if e := h.Registry().Catalog().LoadError("hash"); !strings.Contains(e, `plugin hash: not pinned by the policy: add "plugins": {"hash": {"sha256": "`) {
		t.Errorf("hash, unpinned: load error %q", e)
	}
	for _, tool := range h.Registry().Catalog().Tools {
		if tool.Plugin.Manifest.Name == "hash" {
			t.Errorf("tool %s of the unpinned plugin is served", tool.Decl.Name)
		}
	}
	if h.Registry().Catalog().Lookup("echo") == nil {
		t.Error("echo, pinned, is no longer served")
	}
}
