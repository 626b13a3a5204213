package layers

import (
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// root is the module's root directory.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// platforms are the builds the rules hold for: the host's, and the
// plugins' (sdk/ and plugins/ compile for wasip1, with other files).
var platforms = []struct {
	name string
	env  []string
}{
	{"native", nil},
	{"wasip1", []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}},
}

// TestLayers: the module's import graph breaks no rule of Rules, on any
// platform. Every violation is printed with its import chain.
func TestLayers(t *testing.T) {
	for _, p := range platforms {
		g, err := List(root(), p.env, "./...")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := g[m("host/runtime/wazero")]; p.name == "native" && !ok {
			t.Fatalf("%s: the graph has no %s: go list listed %d packages", p.name, m("host/runtime/wazero"), len(g))
		}
		for _, v := range Check(g, Rules) {
			t.Errorf("%s: %s", p.name, v)
		}
	}
}

// TestPlanted: the checker run through go list over two fixture modules
// (testdata/, with the module's own path): the clean one passes, and each
// violation planted in the other is reported with its chain, every one of
// them, and nothing else.
func TestPlanted(t *testing.T) {
	clean, err := List(filepath.Join("testdata", "clean"), []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if len(clean) < 10 {
		t.Fatalf("the clean fixture lists %d packages", len(clean))
	}
	if v := Check(clean, Rules); len(v) != 0 {
		t.Errorf("the clean fixture breaks rules: %v", v)
	}
	planted, err := List(filepath.Join("testdata", "planted"), []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "./...")
	if err != nil {
		t.Fatal(err)
	}
	const (
		engine   = "an engine sees only the host function contract: "
		contract = "the host function contract names no family: "
		mcp      = "host/mcp owns its types and does not import the plugin registry: "
		sdk      = "the SDK does not depend on the host: "
		deploy   = "host/deploy does not depend on the HTTP server: "
	)
	want := []string{
		// the contract leans on what a family stands on: every engine
		// inherits it through the contract
		engine + "host/runtime -> host/hostfn -> host/browser",
		engine + "host/runtime/wazero -> host/hostfn/cdp",
		engine + "host/runtime/wazero -> host/runtime -> host/hostfn -> host/browser",
		contract + "host/hostfn -> host/browser",
		mcp + "host/mcp -> host/plugin",
		sdk + "sdk/abi -> host/caps",
		// sdktest's exception covers host/caps and the files family, not
		// what the planted contract drags in, nor the registry
		sdk + "sdk/sdktest -> host/hostfn/files -> host/hostfn -> host/browser",
		sdk + "sdk/sdktest -> host/plugin",
		deploy + "host/deploy -> host/server",
	}
	var got []string
	for _, v := range Check(planted, Rules) {
		got = append(got, strings.ReplaceAll(v.String(), Module+"/", ""))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations in the planted fixture:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestRulesOnGraphs: each rule on a synthetic graph, the edge cases the
// fixtures do not have: third-party modules, the register exemption,
// a violation reached only past another (reported once, at the first).
func TestRulesOnGraphs(t *testing.T) {
	tests := []struct {
		name string
		g    Graph
		want []string
	}{
		{"engine on chromedp through a family, reported at the family", Graph{
			m("host/runtime/wasmtime"): {m("host/hostfn/cdp")},
			m("host/hostfn/cdp"):       {"github.com/chromedp/cdproto/target"},
		}, []string{"an engine sees only the host function contract: " + m("host/runtime/wasmtime") + " -> " + m("host/hostfn/cdp")}},
		{"engine on the go-sdk directly", Graph{
			m("host/runtime/wazero/interrupt"): {"github.com/modelcontextprotocol/go-sdk/mcp"},
		}, []string{"an engine sees only the host function contract: " + m("host/runtime/wazero/interrupt") + " -> github.com/modelcontextprotocol/go-sdk/mcp"}},
		{"runtimetest on the registry", Graph{
			m("host/runtime/runtimetest"):  {m("host/internal/testplugins")},
			m("host/internal/testplugins"): {m("host/plugin")},
		}, []string{"an engine sees only the host function contract: " + m("host/runtime/runtimetest") + " -> " + m("host/internal/testplugins") + " -> " + m("host/plugin")}},
		{"the wasmtime registration may import the root", Graph{
			m("host/runtime/wasmtime/register"): {m("host"), m("host/runtime/wasmtime")},
			m("host"):                           {m("host/hostfn/cdp")},
		}, nil},
		{"deploy on Fiber", Graph{
			m("host/deploy"):     {m("host/internal/x")},
			m("host/internal/x"): {"github.com/gofiber/fiber/v2"},
		}, []string{"host/deploy does not depend on the HTTP server: " + m("host/deploy") + " -> " + m("host/internal/x") + " -> github.com/gofiber/fiber/v2"}},
		{"sdktest within its exception", Graph{
			m("sdk/sdktest"):         {m("host/hostfn/process"), m("sdk/abi")},
			m("host/hostfn/process"): {m("host/proc"), m("host/hostfn")},
			m("host/proc"):           {m("host/internal/pathx")},
		}, nil},
		{"another sdk package on an allowed host package", Graph{
			m("sdk/files"): {m("host/fsroot")},
		}, []string{"the SDK does not depend on the host: " + m("sdk/files") + " -> " + m("host/fsroot")}},
		{"a family may stand on the browser", Graph{
			m("host/hostfn/cdp"): {m("host/browser"), m("host/hostfn")},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range Check(tt.g, Rules) {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
