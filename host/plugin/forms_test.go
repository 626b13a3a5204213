package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestCommandForm runs a WASI command plugin: a fresh instance per call,
// JSON on stdin, the result on stdout, exit codes as tool errors.
func TestCommandForm(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "cmdecho")
	os.MkdirAll(d, 0o755)
	wasm := testplugins.Command(t, "host/plugin/testdata/cmdecho")
	testplugins.Warm(t, wasm)
	os.WriteFile(filepath.Join(d, "plugin.wasm"), wasm, 0o644)
	os.WriteFile(filepath.Join(d, "manifest.json"), []byte(`{"name":"cmdecho","version":"1","abi":1,"form":"command",
		"tools":[{"name":"cmd_echo","description":"echo as a command","inputSchema":{"type":"object"}}],
		"capabilities":{},"limits":{"max_result_bytes":4096}}`), 0o644)
	reg := newRegistry(t, dir)
	if r := call(t, reg, "cmd_echo", `{"text":"hi"}`); r.IsError || text(r) != "tools/call cmd_echo: hi" {
		t.Fatalf("command: %+v", r)
	}
	if r := call(t, reg, "cmd_echo", `{"exit":3}`); !r.IsError || !strings.Contains(text(r), "exited with code 3 for tool cmd_echo: asked to fail") {
		t.Fatalf("exit code: %+v", r)
	}
	if r := call(t, reg, "cmd_echo", `{"text":"`+strings.Repeat("x", 5000)+`"}`); !r.IsError || !strings.Contains(text(r), "max_result_bytes=4096") {
		t.Fatalf("output cap: %+v", r)
	}
}

// TestNameClash: a tool name is served once. Built-ins win over the
// directory; between directory plugins the first (by name) wins; the
// refused plugin's other tools are still served.
func TestNameClash(t *testing.T) {
	builtins, dir := t.TempDir(), t.TempDir()
	testplugins.Package(t, builtins, "plugins/examples/echo", nil, nil)
	for _, v := range []struct {
		name  string
		tools []string
	}{{"echo2", nil}, {"h1", []string{"ok", "sleep"}}, {"h2", []string{"ok", "fail"}}} {
		tmp := t.TempDir()
		pkg := "host/plugin/testdata/hostile"
		if v.name == "echo2" {
			pkg = "plugins/examples/echo"
		}
		d := testplugins.Package(t, tmp, pkg, nil, editManifest(func(m map[string]any) {
			m["name"] = v.name
			if v.tools != nil {
				keepTools(m, v.tools...)
			}
		}))
		if err := os.Rename(d, filepath.Join(dir, v.name)); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := plugin.New(context.Background(), plugin.Options{Engine: engine(t), Policy: &caps.Policy{},
		Builtins: os.DirFS(builtins), Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	cat := reg.Catalog()
	if tl := cat.Lookup("echo"); tl == nil || !tl.Plugin.Builtin || tl.Plugin.Manifest.Name != "echo" {
		t.Fatalf("echo must be the built-in's, got %+v", tl)
	}
	if tl := cat.Lookup("ok"); tl == nil || tl.Plugin.Manifest.Name != "h1" {
		t.Fatalf("ok must be h1's")
	}
	if tl := cat.Lookup("fail"); tl == nil || tl.Plugin.Manifest.Name != "h2" {
		t.Fatalf("fail (h2's other tool) must be served")
	}
	var names []string
	for _, tl := range cat.Tools {
		names = append(names, tl.Decl.Name)
	}
	if strings.Join(names, ",") != "echo,ok,sleep,fail" {
		t.Fatalf("catalogue order %v", names)
	}
}

// TestIdleEviction: idle instances are closed after the idle timeout,
// keeping one warm for the default owner.
func TestIdleEviction(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	reg, err := plugin.New(context.Background(), plugin.Options{Engine: engine(t), Policy: &caps.Policy{},
		Dir: dir, Logger: quiet(), IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	p := reg.Catalog().Lookup("echo").Plugin
	// make several instances exist at once
	done := make(chan struct{})
	for i := 0; i < 6; i++ {
		go func() { call(t, reg, "echo", `{"text":"x"}`); done <- struct{}{} }()
	}
	for i := 0; i < 6; i++ {
		<-done
	}
	call(t, reg, "echo", `{"text":"x"}`)
	if _, err := reg.CallTool(context.Background(), plugin.CallRequest{Owner: "tenant-a", Name: "echo", Args: []byte(`{"text":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	if p.IdleInstances("tenant-a") != 1 {
		t.Fatalf("tenant-a has %d idle instances, want 1", p.IdleInstances("tenant-a"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if p.IdleInstances(plugin.DefaultOwner) == 1 && p.IdleInstances("tenant-a") == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after idle timeout: default owner %d idle (want 1), tenant-a %d (want 0)",
		p.IdleInstances(plugin.DefaultOwner), p.IdleInstances("tenant-a"))
}
