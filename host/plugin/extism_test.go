package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	"github.com/aiodhq/aiod/sdk/abi"
)

// extismPackage packs the Extism test plugin pkg as `aiod plugin add`
// does (plugin.DescribeExtism) into parent/name, with edit applied to the
// manifest.
func extismPackage(t *testing.T, eng runtime.Engine, parent, pkg, name string, want abi.Capabilities, edit func(*abi.Manifest)) {
	t.Helper()
	wasm := testplugins.Extism(t, pkg)
	testplugins.Warm(t, wasm)
	m, b, err := plugin.DescribeExtism(context.Background(), eng, wasm, name, want)
	if err != nil {
		t.Fatalf("describe %s: %v", pkg, err)
	}
	if edit != nil {
		edit(m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExtismForm(t *testing.T) {
	t.Parallel()
	onEngines(t, testExtismForm)
}

func testExtismForm(t *testing.T, eng runtime.Engine) {
	ctx := context.Background()
	// the server a granted fetch reaches, and one redirecting off the grant
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, strings.Replace("http://"+r.Host, "127.0.0.1", "localhost", 1)+"/", http.StatusFound)
			return
		}
		fmt.Fprint(w, "pong")
	}))
	defer srv.Close()
	dir := t.TempDir()
	wantHTTP := abi.Capabilities{HTTP: &abi.HTTPScope{Hosts: []string{"127.0.0.1"}}}
	extismPackage(t, eng, dir, "v2", "extv2", wantHTTP, func(m *abi.Manifest) { m.Config = map[string]string{"greeting": "hola"} })
	extismPackage(t, eng, dir, "v1", "extv1", abi.Capabilities{}, nil)
	extismPackage(t, eng, dir, "hostile", "exthostile", abi.Capabilities{}, nil)
	policy := &caps.Policy{Plugins: map[string]abi.Capabilities{"extv2": {HTTP: &abi.HTTPScope{Hosts: []string{"127.0.0.1"}}}}}
	reg, err := plugin.New(ctx, plugin.Options{Engine: eng, Policy: policy, Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	if g := reg.Catalog().Lookup("x_echo").Plugin.Grant; !g.Has(abi.FamilyHTTP) || g.HostAllowed("localhost") {
		t.Fatalf("extv2 grant: http %v, localhost allowed %v", g.Has(abi.FamilyHTTP), g.HostAllowed("localhost"))
	}

	// results come back as the plugin wrote them
	out, err := reg.CallTool(ctx, plugin.CallRequest{Name: "x_echo", Args: []byte(`{"text":"hi"}`)})
	if err != nil || string(out) != `{"content":[{"text":"hi","type":"text"}]}` {
		t.Fatalf("x_echo: %s, %v", out, err)
	}
	for _, tc := range []struct {
		tool, args, owner string
		isError           bool
		want              string // the result's text, or a part of it for errors
	}{
		{"v1_echo", `{"text":"hi"}`, "", false, "v1_echo: hi"},
		{"x_config", `{}`, "", false, "hola"},
		{"x_count", `{}`, "", false, "1"},
		{"x_count", `{}`, "", false, "2"},
		{"x_count", `{}`, "tenant-b", false, "1"}, // vars are per owner
		{"x_fail", `{}`, "", true, "plugin extv2 failed x_fail: asked to fail"},
		{"x_fetch", `{"url":"` + srv.URL + `/"}`, "", false, "200 pong"},
		{"x_fetch", `{"url":"` + srv.URL + `/away"}`, "", true, `host "localhost" is not in plugin extv2's http grant`},
		{"h_load", `{}`, "", true, "extism:host/env.load_u64: offset 1099511627776 (+8 bytes) is outside the plugin's Extism memory"},
		{"h_store", `{}`, "", true, "extism:host/env.store_u8: offset 5 (+1 bytes) is outside the plugin's Extism memory"},
		{"h_output", `{}`, "", true, "extism:host/env.output_set: offset 4096 (+1073741824 bytes) is outside the plugin's Extism memory"},
		{"h_var", `{}`, "", true, "extism:host/env.var_set: offset 12345 is not an allocated block"},
		{"h_alloc", `{}`, "", true, "plugin exthostile failed h_alloc: alloc refused"},
		{"h_ok", `{}`, "", false, "still fine"},
	} {
		out, err := reg.CallTool(ctx, plugin.CallRequest{Name: tc.tool, Owner: tc.owner, Args: []byte(tc.args)})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		var r result
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %s: %v", tc.tool, out, err)
		}
		if r.IsError != tc.isError || (!tc.isError && text(r) != tc.want) || !strings.Contains(text(r), tc.want) {
			t.Errorf("%s %s: isError %v %q, want isError %v %q", tc.tool, tc.args, r.IsError, text(r), tc.isError, tc.want)
		}
	}

	// the same plugin under a policy that grants no http: its request is
	// refused, and the plugin serves on
	nohttp := newRegistryOn(t, eng, dir)
	for _, tc := range []struct{ tool, args, want string }{
		{"x_fetch", `{"url":"` + srv.URL + `/"}`, `extism:host/env.http_request: plugin extv2 is not granted capability "http"`},
		{"x_echo", `{"text":"still here"}`, "still here"},
	} {
		r := call(t, nohttp, tc.tool, tc.args)
		if r.IsError != (tc.tool == "x_fetch") || !strings.Contains(text(r), tc.want) {
			t.Errorf("without the grant, %s: isError %v %q, want %q", tc.tool, r.IsError, text(r), tc.want)
		}
	}

	// logs reach aiod's log and the client as notifications
	var mu sync.Mutex
	var notes []string
	if _, err := reg.CallTool(ctx, plugin.CallRequest{Name: "x_log", Notify: func(kind string, p any) {
		mu.Lock()
		notes = append(notes, fmt.Sprint(kind, p))
		mu.Unlock()
	}}); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "hello from extism") {
		t.Errorf("x_log notifications: %q", notes)
	}

	// the v2 interface's prompts
	if tl := reg.Catalog(); len(tl.Prompts) != 1 || tl.Prompts[0].Decl.Name != "x_greet" {
		t.Fatalf("prompts: %+v", tl.Prompts)
	}
	pr, err := reg.GetPrompt(ctx, plugin.CallRequest{Name: "x_greet", Args: []byte(`{"who":"ada"}`)})
	if err != nil || !strings.Contains(string(pr), `"text":"hello ada"`) {
		t.Fatalf("get_prompt: %s, %v", pr, err)
	}
	// its resources and completions (hyper-mcp's reference type names)
	rr, err := reg.ReadResource(ctx, plugin.CallRequest{Name: "x://motd"})
	if err != nil || string(rr) != `{"contents":[{"mimeType":"text/plain","text":"message of the day","uri":"x://motd"}]}` {
		t.Fatalf("read_resource: %s, %v", rr, err)
	}
	co, err := reg.Complete(ctx, plugin.CallRequest{Args: []byte(`{"ref":{"type":"ref/prompt","name":"x_greet"},"argument":{"name":"who","value":"ad"}}`)})
	if err != nil || string(co) != `{"completion":{"values":["prompt:x_greet:ad!"]}}` {
		t.Fatalf("complete: %s, %v", co, err)
	}
	// a prompt no plugin declares is not asked for
	if _, err := reg.GetPrompt(ctx, plugin.CallRequest{Name: "nope"}); err == nil {
		t.Fatal("unknown prompt answered")
	}
}

// TestExtismRefused: a module of form extism that is no Extism MCP plugin,
// and a manifest naming a tool the module does not list, are refused at
// load with the reason.
func TestExtismRefused(t *testing.T) {
	eng := engine(t)
	dir := t.TempDir()
	extismPackage(t, eng, dir, "v1", "extv1", abi.Capabilities{}, func(m *abi.Manifest) {
		m.Tools = append(m.Tools, abi.Tool{Name: "ghost", InputSchema: json.RawMessage(`{"type":"object"}`)})
	})
	testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) { m["form"] = "extism" }))
	reg, err := plugin.New(context.Background(), plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet()})
	if err == nil {
		t.Fatal("no load error")
	}
	defer reg.Close(context.Background())
	for name, want := range map[string]string{
		"extv1": `plugin extv1: manifest names tool "ghost", which the module does not list`,
		"echo":  "plugin echo: module exports neither call_tool (hyper-mcp's interface) nor describe and call (the older one): not an Extism MCP plugin",
	} {
		if got := reg.Catalog().LoadError(name); got != want {
			t.Errorf("%s: load error %q, want %q", name, got, want)
		}
	}
}

// BenchmarkExtismEcho measures a warm call of an Extism plugin's tool
// (hyper-mcp's call_tool through the Extism host ABI) on each engine, to
// compare with BenchmarkCallEcho (the aiod ABI).
func BenchmarkExtismEcho(b *testing.B) {
	for _, e := range runtimetest.Engines() {
		b.Run(e.Name, func(b *testing.B) {
			eng := e.Shared(b)
			dir := b.TempDir()
			wasm := testplugins.Extism(b, "v2")
			testplugins.Warm(b, wasm)
			_, m, err := plugin.DescribeExtism(context.Background(), eng, wasm, "extv2", abi.Capabilities{})
			if err != nil {
				b.Fatal(err)
			}
			os.MkdirAll(filepath.Join(dir, "extv2"), 0o755)
			os.WriteFile(filepath.Join(dir, "extv2", "plugin.wasm"), wasm, 0o644)
			os.WriteFile(filepath.Join(dir, "extv2", "manifest.json"), m, 0o644)
			reg := newRegistryOn(b, eng, dir)
			ctx := context.Background()
			req := plugin.CallRequest{Name: "x_echo", Args: []byte(`{"text":"hello"}`)}
			b.ResetTimer()
			for b.Loop() {
				if _, err := reg.CallTool(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
