package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/wazero"
	"github.com/aiodhq/aiod/sdk/abi"
)

// TestPluginAdd packs an Extism plugin built with the Extism Go PDK as it
// is, and the host loads and calls the package.
func TestPluginAdd(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "Hello World.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", file, "./v2")
	cmd.Dir = filepath.Join("..", "..", "host", "plugin", "testdata", "extism")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=vendor")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	into := filepath.Join(tmp, "plugins")
	// the compile cache the repository's tests share (a race build compiles
	// a 3 MB module slowly)
	cache := filepath.Join("..", "..", "build", "cache", "wazero")
	args := []string{file, "--cache-dir", cache, "--form", "extism", "--into", into, "--allow-http", "127.0.0.1", "--config", "greeting=hi", "--version", "1.2.3"}
	if code := pluginAdd(args); code != 0 {
		t.Fatalf("plugin add: exit %d", code)
	}
	b, err := os.ReadFile(filepath.Join(into, "hello-world", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := caps.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	wasm, _ := os.ReadFile(file)
	sum := sha256.Sum256(wasm)
	var tools []string
	for _, tl := range m.Tools {
		tools = append(tools, tl.Name)
	}
	if m.Name != "hello-world" || m.Form != abi.FormExtism || m.Version != "1.2.3" || m.SHA256 != hex.EncodeToString(sum[:]) ||
		m.Config["greeting"] != "hi" || m.Capabilities.HTTP == nil || m.Capabilities.HTTP.Hosts[0] != "127.0.0.1" ||
		strings.Join(tools, ",") != "x_echo,x_count,x_config,x_fetch,x_fail,x_log" || len(m.Prompts) != 1 || len(m.Resources) != 1 {
		t.Fatalf("manifest: %s", b)
	}
	if got, _ := os.ReadFile(filepath.Join(into, "hello-world", "plugin.wasm")); string(got) != string(wasm) {
		t.Fatal("the module was not packed as it is")
	}
	if ents, _ := os.ReadDir(into); len(ents) != 1 {
		t.Fatalf("plugins dir holds %d entries, want the package only", len(ents))
	}

	// the package loads and serves
	ctx := context.Background()
	eng, err := wazero.New(wazero.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Dir: into, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	out, err := reg.CallTool(ctx, plugin.CallRequest{Name: "x_config"})
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err != nil || json.Unmarshal(out, &r) != nil || len(r.Content) != 1 || r.Content[0].Text != "hi" {
		t.Fatalf("x_config: %s, %v", out, err)
	}

	// the module's imports, as plugin add reads them to warn about HTTP
	imps := wasmImports(wasm)
	for _, want := range []string{"extism:host/env.http_request", "extism:host/env.output_set", "wasi_snapshot_preview1.fd_write"} {
		if !slices.Contains(imps, want) {
			t.Errorf("imports %v lack %s", imps, want)
		}
	}
	if wasmImports([]byte("not wasm")) != nil {
		t.Error("imports of a non-module")
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{file, "--cache-dir", cache, "--form", "extism", "--into", into}, 1},            // hello-world exists
		{[]string{file, "--cache-dir", cache, "--form", "extism", "--into", into, "--force"}, 0}, // replaced
		{[]string{file, "--form", "reactor", "--into", into, "--name", "x"}, 2},
		{[]string{"--form", "extism", "--into", into}, 2},
		{[]string{file, "--form", "extism", "--into", into, "--name", "bad", "--config", "novalue"}, 2},
	} {
		if code := pluginAdd(tc.args); code != tc.code {
			t.Errorf("plugin add %q: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}
