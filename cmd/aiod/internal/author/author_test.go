package author

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aiodhq/aiod/host/caps"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", ".."))
}

func TestParseLang(t *testing.T) {
	for in, want := range map[string]Lang{"go": Go, "C": C, "rs": Rust, "rust": Rust, "as": AssemblyScript, "assemblyscript": AssemblyScript} {
		if got, err := ParseLang(in); err != nil || got != want {
			t.Errorf("ParseLang(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseLang("cobol"); err == nil || !strings.Contains(err.Error(), "go, c, rust, assemblyscript") {
		t.Errorf("ParseLang(cobol): %v", err)
	}
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		files []string
		want  Lang
		err   string
	}{
		{[]string{"main.go", "go.mod"}, Go, ""},
		{[]string{"main.c", "aiod.h"}, C, ""},
		{[]string{"main.rs"}, Rust, ""},
		{[]string{"main.ts", "package.json"}, AssemblyScript, ""},
		{[]string{"README.md"}, "", "no plugin source"},
		{[]string{"main.c", "main.rs"}, "", "more than one language"},
	} {
		dir := t.TempDir()
		for _, f := range c.files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Detect(dir)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Detect(%v) = %q, %v; want %q, %q", c.files, got, err, c.want, c.err)
		}
	}
}

// fakeTool writes an executable shell script name into dir.
func fakeTool(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestToolchainErrors: a missing compiler, and a compiler that fails for
// want of a known package, are ErrToolchain errors naming what to install.
func TestToolchainErrors(t *testing.T) {
	empty := t.TempDir()
	noLib := t.TempDir()
	fakeTool(t, noLib, "clang", `echo "wasm-ld: error: cannot open /usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a: No such file or directory" >&2; exit 1`)
	noLibc := t.TempDir()
	fakeTool(t, noLibc, "clang", `echo "./aiod.h:28:10: fatal error: 'stdint.h' file not found" >&2; exit 1`)
	noStd := t.TempDir()
	sysroot := t.TempDir()
	fakeTool(t, noStd, "rustc", `echo `+sysroot)
	noNode := t.TempDir()
	fakeTool(t, noNode, "asc", `exit 0`)
	for _, c := range []struct {
		name string
		lang Lang
		path string
		want []string
	}{
		{"go missing", Go, empty, []string{"go not found", "Go 1.24"}},
		{"clang missing", C, empty, []string{"clang not found", "clang, lld, wasi-libc and libclang-rt-14-dev-wasm32"}},
		{"compiler runtime missing", C, noLib, []string{"install the Debian package libclang-rt-14-dev-wasm32", "libclang_rt.builtins-wasm32.a"}},
		{"wasi-libc missing", C, noLibc, []string{"install the Debian package wasi-libc"}},
		{"rustc missing", Rust, empty, []string{"rustc not found", "rustc and libstd-rust-dev-wasm32"}},
		{"wasm32-wasi std missing", Rust, noStd, []string{"no wasm32-wasi standard library", "libstd-rust-dev-wasm32"}},
		{"asc missing", AssemblyScript, empty, []string{"asc not found", "npm package assemblyscript"}},
		{"node missing", AssemblyScript, noNode, []string{"node not found", "nodejs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Tools{Path: c.path}.Compile(context.Background(), dir, c.lang, filepath.Join(dir, "out.wasm"))
			if !errors.Is(err, ErrToolchain) {
				t.Fatalf("error %v is not ErrToolchain", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	for _, l := range Langs {
		t.Run(string(l), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			files, err := New("my-tool", dir, NewOptions{Lang: l, GoSDK: repoRoot()})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{".gitignore", "README.md", "build.sh", "examples.json", toolchains[l].main}
			for _, w := range want {
				if !slices.Contains(files, w) {
					t.Errorf("%s not written (got %v)", w, files)
				}
			}
			if got, err := Detect(dir); err != nil || got != l {
				t.Errorf("Detect = %q, %v", got, err)
			}
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if i := strings.Index(string(b), "__"); i >= 0 && f != "aiod.h" && f != "aiod.rs" && f != "aiod.ts" {
					end := min(i+20, len(b))
					t.Errorf("%s: placeholder left: %q", f, b[i:end])
				}
			}
			ex, err := ReadExamples(filepath.Join(dir, ExamplesFile))
			if err != nil || len(ex) != 2 || ex[0].Tool != "my-tool" || *ex[0].Expect != "Hello, Ada!" || !ex[1].ExpectError {
				t.Errorf("examples: %+v, %v", ex, err)
			}
			sh, _ := os.ReadFile(filepath.Join(dir, "build.sh"))
			if !strings.Contains(string(sh), BuildCommand(l, "build/plugin.wasm")) {
				t.Errorf("build.sh does not run the build command:\n%s", sh)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		o         NewOptions
		want      string
	}{
		{"Bad Name", filepath.Join(t.TempDir(), "a"), NewOptions{Lang: C}, "plugin name"},
		{"ok", full, NewOptions{Lang: C}, "not empty"},
		{"ok", filepath.Join(t.TempDir(), "a"), NewOptions{Lang: Go}, "--sdk"},
		{"ok", filepath.Join(t.TempDir(), "a"), NewOptions{Lang: Go, GoSDK: t.TempDir()}, "not an aiod source tree"},
	} {
		if _, err := New(c.name, c.dir, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, %+v): %v; want %q", c.name, c.o, err, c.want)
		}
	}
}

// TestGoSDKModules: the modules a Go plugin's packages come from (the SDK
// and its families, for wasip1) are aiod and goSDKModules, which a new
// project's go.mod requires.
func TestGoSDKModules(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}",
		"./sdk", "./sdk/files", "./sdk/process", "./sdk/state", "./sdk/cdp", "./sdk/upstream")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var mods []string
	for _, m := range strings.Fields(string(out)) {
		if m != "github.com/aiodhq/aiod" && !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	if !slices.Equal(mods, goSDKModules) {
		t.Errorf("the SDK's packages come from %v; goSDKModules is %v", mods, goSDKModules)
	}
}

// module assembles a core wasm module with function imports (module,
// name pairs, all of type 0) and function exports.
func module(imports [][2]string, exports ...string) []byte {
	leb := func(n int) []byte {
		var b []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n != 0 {
				b = append(b, c|0x80)
				continue
			}
			return append(b, c)
		}
	}
	name := func(s string) []byte { return append(leb(len(s)), s...) }
	section := func(id byte, body []byte) []byte { return append(append([]byte{id}, leb(len(body))...), body...) }
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, section(1, []byte{1, 0x60, 0, 0})...) // one type () -> ()
	var im []byte
	im = append(im, leb(len(imports))...)
	for _, i := range imports {
		im = append(append(append(im, name(i[0])...), name(i[1])...), 0, 0)
	}
	out = append(out, section(2, im)...)
	var ex []byte
	ex = append(ex, leb(len(exports))...)
	for i, e := range exports {
		ex = append(append(ex, name(e)...), 0)
		ex = append(ex, leb(i)...)
	}
	return append(out, section(7, ex)...)
}

func TestParseModule(t *testing.T) {
	m, err := parseModule(module([][2]string{{"aiod:core", "input_read"}, {"aiod:state", "get"}}, "aiod_call", "aiod_abi_version"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.imports) != 2 || m.imports[1] != (Import{Module: "aiod:state", Name: "get", Kind: "func"}) || m.form() != "reactor" {
		t.Errorf("parsed %+v, form %s", m, m.form())
	}
	if m, _ := parseModule(module(nil, "_start")); m.form() != "command" {
		t.Errorf("a _start module is %s", m.form())
	}
	good := module([][2]string{{"a", "b"}}, "x")
	for _, bad := range [][]byte{nil, []byte("\x7fELF...."), []byte("\x00asm\x0d\x00\x01\x00"), good[:len(good)-2]} {
		if _, err := parseModule(bad); err == nil {
			t.Errorf("parseModule(%q) accepted it", bad)
		}
	}
}

// pkg writes a package: a module with imports and a manifest asking for
// capabilities caps, its sha256 pinned (or pin, if set).
func pkg(t *testing.T, imports [][2]string, capsJSON, pin string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p1")
	wasm := module(imports, "aiod_call", "aiod_abi_version")
	sum := sha256.Sum256(wasm)
	if pin == "" {
		pin = hex.EncodeToString(sum[:])
	}
	m := map[string]any{"name": "p1", "version": "1", "abi": 1, "module": "plugin.wasm", "sha256": pin,
		"tools":        []any{map[string]any{"name": "t1", "inputSchema": map[string]any{"type": "object"}}, map[string]any{"name": "sandbox_x", "inputSchema": map[string]any{"type": "object"}}},
		"capabilities": json.RawMessage(capsJSON), "limits": map[string]any{"timeout_ms": 5000}}
	mb, _ := json.Marshal(m)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestVerify(t *testing.T) {
	state := [][2]string{{"aiod:core", "input_read"}, {"aiod:state", "get"}}
	policy := func(s string) *caps.Policy {
		p, err := caps.ParsePolicy([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	builtins := fstest.MapFS{"sandbox_x/manifest.json": {Data: []byte(`{"name":"sandbox_x","version":"1","abi":1,"tools":[{"name":"sandbox_x","inputSchema":{"type":"object"}}],"capabilities":{},"limits":{}}`)}}
	for _, c := range []struct {
		name     string
		dir      string
		policy   *caps.Policy
		loads    bool
		granted  bool
		why      string
		refused  string
		timeout  int64
		warnings int
	}{
		{"no policy", pkg(t, state, `{"state":{}}`, ""), nil, false, false, "no policy has no entry for plugin p1 and no default", `plugin p1 imports aiod:state.get, but capability "state" is not granted`, 5000, 1},
		{"granted", pkg(t, state, `{"state":{"max_bytes":100}}`, ""), policy(`{"plugins":{"p1":{"state":{}}}}`), true, true, "", "", 5000, 1},
		{"entry without state", pkg(t, state, `{"state":{}}`, ""), policy(`{"plugins":{"p1":{}}}`), false, false, "the entry for plugin p1 does not allow state", "not granted", 5000, 1},
		{"default without state", pkg(t, state, `{"state":{}}`, ""), policy(`{"default":{"files":{"paths":[{"path":"$TMP","mode":"ro"}]}}}`), false, false, "its default (plugin p1 has no entry) does not allow state", "not granted", 5000, 1},
		{"digest mismatch", pkg(t, nil, `{}`, strings.Repeat("0", 64)), nil, false, false, "", "digest mismatch", 5000, 1},
		{"unknown import module", pkg(t, [][2]string{{"env", "abort"}}, `{}`, ""), nil, false, false, "", `imports env.abort: module "env" is neither WASI nor aiod`, 5000, 1},
		{"import not requested", pkg(t, state, `{}`, ""), policy(`{"default":{"state":{}}}`), false, false, "", `capability "state" is not granted`, 5000, 1},
		{"timeout capped", pkg(t, nil, `{}`, ""), policy(`{"limits":{"max_timeout_ms":1000}}`), true, false, "", "", 1000, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := Verify(context.Background(), c.dir, VerifyOptions{Policy: c.policy, PolicyName: "policy P", Builtins: builtins})
			if err != nil {
				t.Fatal(err)
			}
			if v.Loads != c.loads {
				t.Errorf("loads %v, want %v (refused %q)", v.Loads, c.loads, v.Refused)
			}
			if c.why != "" || c.granted {
				if len(v.Families) != 1 || v.Families[0].Granted != c.granted || !strings.Contains(v.Families[0].Why, c.why) {
					t.Errorf("families %+v; want granted %v, why %q", v.Families, c.granted, c.why)
				}
			}
			if c.refused != "" && !slices.ContainsFunc(v.Refused, func(r string) bool { return strings.Contains(r, c.refused) }) {
				t.Errorf("refused %q; want one saying %q", v.Refused, c.refused)
			}
			if c.refused == "" && len(v.Refused) > 0 {
				t.Errorf("refused %q", v.Refused)
			}
			if len(v.Warnings) != c.warnings || !strings.Contains(v.Warnings[0], "built-in plugin sandbox_x") {
				t.Errorf("warnings %q", v.Warnings)
			}
			if v.Limits.TimeoutMs != c.timeout {
				t.Errorf("timeout %d, want %d", v.Limits.TimeoutMs, c.timeout)
			}
		})
	}
	if _, err := Verify(context.Background(), t.TempDir(), VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "not a plugin package") {
		t.Errorf("Verify of an empty directory: %v", err)
	}
}

func TestReadExamples(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, err string }{
		{`[{"tool":"a"}]`, ""},
		{`[{"tool":""}]`, "has no tool"},
		{`[{"tool":"a","argument":{}}]`, "unknown field"},
		{`{"tool":"a"}`, "cannot unmarshal"},
	} {
		f := filepath.Join(dir, "e.json")
		if err := os.WriteFile(f, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		ex, err := ReadExamples(f)
		if c.err == "" {
			if err != nil || string(ex[0].Arguments) != "{}" {
				t.Errorf("%s: %+v, %v", c.body, ex, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v; want %q", c.body, err, c.err)
		}
	}
}
