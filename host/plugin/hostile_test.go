package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// filesStub lets the importer test plugin be described (its aiod:files
// import linked to a stub that is never called).
type filesStub struct{}

func (filesStub) Name() abi.Family { return abi.FamilyFiles }
func (filesStub) Defs() []hostfn.Def {
	return []hostfn.Def{hostfn.ReqResp("aiod:files", "read", nil)}
}

type result struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func call(t testing.TB, reg *plugin.Registry, name, args string) result {
	t.Helper()
	out, err := reg.CallTool(context.Background(), plugin.CallRequest{Name: name, Args: []byte(args)})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("call %s: bad result %q: %v", name, out, err)
	}
	return r
}

func text(r result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// editManifest returns an edit function applying f to the decoded manifest.
func editManifest(f func(m map[string]any)) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			panic(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return out
	}
}

func keepTools(m map[string]any, names ...string) {
	var kept []any
	for _, t := range m["tools"].([]any) {
		for _, n := range names {
			if t.(map[string]any)["name"] == n {
				kept = append(kept, t)
			}
		}
	}
	m["tools"] = kept
}

func hostileRegistry(t *testing.T, eng runtime.Engine) *plugin.Registry {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, dir, "host/plugin/testdata/hostile", nil, editManifest(func(m map[string]any) {
		keepTools(m, "ok", "grow", "panic", "trap", "fail", "sleep")
		m["limits"] = map[string]any{"timeout_ms": 60000, "memory_mib": 64, "max_instances": 4}
	}))
	// more packages of the same module: "big" may use more memory, "loop"
	// has a short deadline
	for _, v := range []struct {
		name, tool string
		limits     map[string]any
	}{
		{"hostile-big", "big", map[string]any{"memory_mib": 1024}},
		{"hostile-loop", "loop", map[string]any{"timeout_ms": 2000}},
	} {
		tmp := t.TempDir()
		testplugins.Package(t, tmp, "host/plugin/testdata/hostile", nil, editManifest(func(m map[string]any) {
			keepTools(m, v.tool)
			m["name"], m["limits"] = v.name, v.limits
		}))
		if err := os.Rename(filepath.Join(tmp, "hostile"), filepath.Join(dir, v.name)); err != nil {
			t.Fatal(err)
		}
	}
	return newRegistryOn(t, eng, dir)
}

// testHostileContained (TestHostileContained, on every engine) runs each misbehaving tool and checks it is
// contained with a clear isError, that the host keeps serving, and that
// the plugin's pool still serves healthy calls afterwards.
func testHostileContained(t *testing.T, eng runtime.Engine) {
	reg := hostileRegistry(t, eng)
	cases := []struct {
		tool, args string
		want       string
		within     time.Duration
	}{
		{"loop", `{}`, "exceeded its time limit (timeout 2s)", 8 * time.Second},
		{"grow", `{}`, "exceeded its memory limit (memory_mib=64)", 40 * time.Second},
		{"big", `{"mb":100}`, "result exceeds the limit max_result_bytes=16777216", 30 * time.Second},
		{"panic", `{}`, "tool panic failed", 5 * time.Second},
		{"trap", `{}`, "tool trap failed", 5 * time.Second},
		{"fail", `{}`, "it went wrong", 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			start := time.Now()
			r := call(t, reg, tc.tool, tc.args)
			if !r.IsError {
				t.Fatalf("%s: want isError, got %+v", tc.tool, r)
			}
			if got := text(r); !strings.Contains(got, tc.want) {
				t.Fatalf("%s: text %q does not contain %q", tc.tool, got, tc.want)
			}
			if d := time.Since(start); d > tc.within {
				t.Fatalf("%s: took %s, want under %s", tc.tool, d, tc.within)
			}
			// the host keeps serving, and the same plugin's pool is healthy
			for i := 0; i < 3; i++ {
				if r := call(t, reg, "ok", `{}`); r.IsError || text(r) != "fine" {
					t.Fatalf("after %s: ok returned %+v", tc.tool, r)
				}
			}
			if r := call(t, reg, "echo", `{"text":"still here"}`); text(r) != "still here" {
				t.Fatalf("after %s: echo returned %+v", tc.tool, r)
			}
			p := reg.Catalog().Lookup("ok").Plugin
			if n := p.IdleInstances(plugin.DefaultOwner); n < 1 || n > 4 {
				t.Fatalf("after %s: %d idle instances, want 1..4", tc.tool, n)
			}
		})
	}
}

// testLoadRefused (TestLoadRefused, on every engine) checks each bad package is refused at load with an error
// naming the problem, while a good plugin beside it still loads.
func testLoadRefused(t *testing.T, eng runtime.Engine) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
		tool  string // a tool that must not be served
	}{
		{"not wasm", func(t *testing.T, dir string) {
			d := testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
				m["name"], m["tools"].([]any)[0].(map[string]any)["name"] = "notwasm", "notwasm_echo"
				delete(m, "sha256")
			}))
			os.WriteFile(filepath.Join(d, "plugin.wasm"), []byte("#!/bin/sh\necho not wasm\n"), 0o644)
			os.Rename(d, filepath.Join(dir, "notwasm"))
		}, "is not a wasm module", "notwasm_echo"},
		{"ghost tool", func(t *testing.T, dir string) {
			d := testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
				m["name"] = "ghost"
				m["tools"] = []any{map[string]any{"name": "ghost_tool", "inputSchema": map[string]any{"type": "object"}}}
			}))
			os.Rename(d, filepath.Join(dir, "ghost"))
		}, `manifest names tool "ghost_tool", which the module does not list`, "ghost_tool"},
		{"module abi 2", func(t *testing.T, dir string) {
			d := filepath.Join(dir, "badabi")
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "plugin.wasm"), testplugins.Wasm(t, "host/plugin/testdata/badabi"), 0o644)
			os.WriteFile(filepath.Join(d, "manifest.json"), []byte(`{"name":"badabi","version":"1","abi":1,"tools":[{"name":"bad_tool","inputSchema":{"type":"object"}}],"capabilities":{},"limits":{}}`), 0o644)
		}, "module implements abi version 2, this host speaks abi 1", "bad_tool"},
		{"manifest abi 2", func(t *testing.T, dir string) {
			d := testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
				m["name"], m["abi"] = "abi2", 2
				m["tools"].([]any)[0].(map[string]any)["name"] = "abi2_echo"
			}))
			os.Rename(d, filepath.Join(dir, "abi2"))
		}, "abi 2 is not supported", "abi2_echo"},
		{"ungranted import", func(t *testing.T, dir string) {
			testplugins.Package(t, dir, "host/plugin/testdata/importer", []hostfn.Family{filesStub{}}, nil)
		}, `plugin importer imports aiod:files.read, but capability "files" is not granted`, "peek"},
		{"digest mismatch", func(t *testing.T, dir string) {
			d := testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
				m["name"], m["sha256"] = "pinned", strings.Repeat("0", 64)
				m["tools"].([]any)[0].(map[string]any)["name"] = "pinned_echo"
			}))
			os.Rename(d, filepath.Join(dir, "pinned"))
		}, "does not match the manifest's sha256", "pinned_echo"},
		{"unknown manifest field", func(t *testing.T, dir string) {
			d := testplugins.Package(t, dir, "plugins/examples/echo", nil, editManifest(func(m map[string]any) {
				m["name"], m["allowed_hosts"] = "lenient", []string{"*"}
				m["tools"].([]any)[0].(map[string]any)["name"] = "lenient_echo"
			}))
			os.Rename(d, filepath.Join(dir, "lenient"))
		}, `unknown field "allowed_hosts"`, "lenient_echo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp := t.TempDir()
			tc.setup(t, tmp)
			ents, _ := os.ReadDir(tmp)
			for _, e := range ents {
				os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(dir, e.Name()))
			}
			testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
			reg, err := plugin.New(context.Background(), plugin.Options{Engine: eng, Policy: &caps.Policy{}, Dir: dir, Logger: quiet()})
			if reg == nil {
				t.Fatalf("registry: %v", err)
			}
			defer reg.Close(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load error %v, want it to contain %q", err, tc.want)
			}
			if reg.Catalog().Lookup(tc.tool) != nil {
				t.Fatalf("tool %s is served", tc.tool)
			}
			if r := call(t, reg, "echo", `{"text":"ok"}`); text(r) != "ok" {
				t.Fatalf("echo beside the bad plugin: %+v", r)
			}
		})
	}
}

// TestGrantedImportLinks is the allowed twin of "ungranted import": with
// files granted by policy, the importer loads.
func TestGrantedImportLinks(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "host/plugin/testdata/importer", []hostfn.Family{filesStub{}}, nil)
	policy := &caps.Policy{Plugins: map[string]abi.Capabilities{
		"importer": {Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "/tmp", Mode: abi.ReadOnly}}}},
	}}
	reg, err := plugin.New(context.Background(), plugin.Options{Engine: engine(t), Policy: policy,
		Env: caps.Env{Tmp: "/tmp"}, Dir: dir, Logger: quiet(),
		Families: func(g *caps.Grant) []hostfn.Family {
			if g.Has(abi.FamilyFiles) {
				return []hostfn.Family{filesStub{}}
			}
			return nil
		}})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer reg.Close(context.Background())
	if reg.Catalog().Lookup("peek") == nil {
		t.Fatal("peek not served")
	}
}

// TestConcurrentCalls makes 64 concurrent calls to one plugin; each must get
// its own answer.
func TestConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	reg := newRegistry(t, dir)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprintf("caller %d says %q", i, strings.Repeat("é", i))
			args, _ := json.Marshal(map[string]string{"text": want})
			for j := 0; j < 5; j++ {
				out, err := reg.CallTool(context.Background(), plugin.CallRequest{Name: "echo", Args: args})
				if err != nil {
					errs <- err
					return
				}
				var r result
				if err := json.Unmarshal(out, &r); err != nil || r.IsError || text(r) != want {
					errs <- fmt.Errorf("caller %d got %s", i, out)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := reg.Catalog().Lookup("echo").Plugin.IdleInstances(plugin.DefaultOwner); n > caps.DefaultMaxInstances {
		t.Fatalf("%d idle instances, over the bound %d", n, caps.DefaultMaxInstances)
	}
}

// TestReloadInFlight swaps the catalogue while a call runs: the call
// finishes on the generation it started on, then the tool is gone.
func TestReloadInFlight(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	hdir := testplugins.Package(t, dir, "host/plugin/testdata/hostile", nil, editManifest(func(m map[string]any) {
		keepTools(m, "sleep")
	}))
	reg := newRegistry(t, dir)
	gen := reg.Catalog().Generation
	done := make(chan result, 1)
	go func() { done <- call(t, reg, "sleep", `{"ms":700}`) }()
	time.Sleep(200 * time.Millisecond)
	if err := os.RemoveAll(hdir); err != nil {
		t.Fatal(err)
	}
	if err := reg.Reload(context.Background()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if reg.Catalog().Generation != gen+1 {
		t.Fatalf("generation %d, want %d", reg.Catalog().Generation, gen+1)
	}
	if reg.Catalog().Lookup("sleep") != nil {
		t.Fatal("sleep still listed after reload")
	}
	r := <-done
	if r.IsError || text(r) != "slept" {
		t.Fatalf("in-flight call: %+v", r)
	}
	if _, err := reg.CallTool(context.Background(), plugin.CallRequest{Name: "sleep"}); err != plugin.ErrUnknownTool {
		t.Fatalf("after reload: err %v, want ErrUnknownTool", err)
	}
	// echo was carried over warm: same plugin object
	if r := call(t, reg, "echo", `{"text":"x"}`); text(r) != "x" {
		t.Fatalf("echo after reload: %+v", r)
	}
}

// TestGrantedButUnimplementedImport: a family the policy grants but the
// host does not implement (no family linked for it) is refused at load as
// not implemented, not as "not granted".
func TestGrantedButUnimplementedImport(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "host/plugin/testdata/importer", []hostfn.Family{filesStub{}}, nil)
	policy := &caps.Policy{Plugins: map[string]abi.Capabilities{
		"importer": {Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "/tmp", Mode: abi.ReadOnly}}}},
	}}
	reg, err := plugin.New(context.Background(), plugin.Options{Engine: engine(t), Policy: policy,
		Env: caps.Env{Tmp: "/tmp"}, Dir: dir, Logger: quiet(),
		Families: func(*caps.Grant) []hostfn.Family { return nil }})
	if reg == nil {
		t.Fatalf("registry: %v", err)
	}
	defer reg.Close(context.Background())
	want := `plugin importer imports aiod:files.read, but this host does not implement the "files" family`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("load error %v, want it to contain %q", err, want)
	}
	if reg.Catalog().Lookup("peek") != nil {
		t.Fatal("peek is served")
	}
}
