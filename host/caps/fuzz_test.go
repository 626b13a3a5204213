package caps_test

import (
	"encoding/json"
	"github.com/aiodhq/aiod/host/internal/pathx"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

// schemaGap reports whether a ParseManifest error is one of the rules the
// schema cannot express (spec/manifest/v1/README.md §9; TestSchemaGaps).
func schemaGap(err error) bool {
	for _, s := range []string{"declared twice", "unbalanced braces", "cannot unmarshal number", "duplicate field"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// FuzzParseManifest: ParseManifest never panics; what it accepts re-encodes
// and re-parses to the same value, and its encoding passes the schema; what
// the schema accepts, ParseManifest accepts too, but for the known gaps.
func FuzzParseManifest(f *testing.F) {
	for _, kind := range []string{"valid", "invalid"} {
		names, _ := filepath.Glob(filepath.Join(examplesDir, kind, "*.json"))
		for _, n := range names {
			f.Add(readFile(f, n))
		}
	}
	f.Add([]byte(`{"name":"p","abi":1,"tools":[{"name":"t","inputSchema":{"type":"object","x":"<&>"}}],"NAME":"q"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := caps.ParseManifest(data)
		schemaErr := validateSchema(t, data)
		if err != nil {
			if m != nil {
				t.Fatal("a manifest returned with an error")
			}
			if schemaErr == nil && !schemaGap(err) {
				t.Fatalf("the schema accepts what ParseManifest refuses: %v\n%s", err, data)
			}
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		m2, err := caps.ParseManifest(b)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, b)
		}
		b2, err := json.Marshal(m2)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("encodings differ (%v):\n%s\n%s", err, b, b2)
		}
		normalize(reflect.ValueOf(m))
		normalize(reflect.ValueOf(m2))
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", m, m2)
		}
		if err := validateSchema(t, b); err != nil {
			t.Fatalf("the schema refuses the encoding of an accepted manifest: %v\n%s", err, b)
		}
		if schemaErr != nil && !nullInReserved(data) {
			t.Fatalf("the schema refuses what ParseManifest accepts: %v\n%s", schemaErr, data)
		}
	})
}

// nullInReserved reports whether a manifest has null in the reserved
// cdp.endpoints or upstream.servers lists, which the host reads as "" and
// the schema refuses (README §9).
func nullInReserved(data []byte) bool {
	var doc struct {
		Capabilities struct {
			CDP      struct{ Methods []any } `json:"cdp"`
			Upstream struct{ Servers []any } `json:"upstream"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(data, &doc)
	return slices.Contains(doc.Capabilities.CDP.Methods, nil) || slices.Contains(doc.Capabilities.Upstream.Servers, nil)
}

// FuzzParsePolicy: ParsePolicy never panics; what it accepts round-trips;
// and the grants it gives the golden manifests keep the grant invariants.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"plugins":{"notes":{"files":{"paths":[{"path":"$HOME/notes","mode":"rw"}]},"process":{"commands":["git"],"cwd":["$HOME/notes"]}}},"default":{"state":{"max_bytes":65536}}}`,
		`{"default":{"files":{"paths":[{"path":"$SANDBOX","mode":"rw"}]},"process":{"commands":["*"],"cwd":["$SANDBOX"],"shell":true},"state":{"max_bytes":67108864}}}`,
		`{"default":{"process":{"commands":["python3"],"tools":true}},"plugins":{"code":{"process":{"commands":["*"],"tools":false}}}}`,
		`{"default":{"files":{"paths":[{"path":"/","mode":"ro"},{"path":"$SANDBOX/..","mode":"rw"}]},"cdp":{"methods":["*"]},"upstream":{"servers":["*"]}}}`,
		`{"limits":{"default_timeout_ms":9000,"max_timeout_ms":5000,"default_memory_mib":8192,"max_memory_mib":99999,"max_instances":-1}}`,
		`{"plugins":{"p":null,"q":{}},"default":null,"limits":null}`,
		`{"tenants":{"a":{"keys":[],"upstreams":["*"]}},"upstreams":{"docs":{"url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer ${T}"},"tenants":["a"]},"fs":{"command":"npx","args":["-y","x"],"env":["HOME"],"sha256":"` + strings.Repeat("ab", 32) + `"}}}`,
	} {
		f.Add([]byte(s))
	}
	var manifests []*abi.Manifest
	names, _ := filepath.Glob(filepath.Join(examplesDir, "valid", "*.json"))
	for _, n := range names {
		m, err := caps.ParseManifest(readFile(f, n))
		if err != nil {
			f.Fatal(err)
		}
		manifests = append(manifests, m)
	}
	envs := []caps.Env{ada, adaWS, {}, {Home: "/", Tmp: "/tmp"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := caps.ParsePolicy(data)
		if err != nil {
			if p != nil {
				t.Fatal("a policy returned with an error")
			}
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		p2, err := caps.ParsePolicy(b)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, b)
		}
		normalize(reflect.ValueOf(p))
		normalize(reflect.ValueOf(p2))
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("round trip changed the policy:\n%+v\n%+v", p, p2)
		}
		for _, m := range manifests {
			for _, env := range envs {
				checkGrant(t, p, m, env)
			}
		}
	})
}

// FuzzGrantScope drives one requested and one allowed scope path through
// Resolve and Allow in arbitrary environments: resolved paths are absolute
// and clean; every granted tree lies within both a requested and an allowed
// tree; nested pairs are never lost. It also checks Within against
// filepath.Rel.
func FuzzGrantScope(f *testing.F) {
	f.Add("$SANDBOX", "$SANDBOX", true, true, "/home/ada", "/tmp", "", "/home/ada/x", "/home/ada")
	f.Add("$HOME/..", "$SANDBOX/x", true, false, "/home/ada", "/tmp", "/home/ada/w", "/home/adam", "/home/ada")
	f.Add("/", "$WORKSPACE", false, true, "ada", "", "/w", "/", "/")
	f.Add("$TMP/../etc", "/etc", true, true, "", "/tmp/", "rel", "/etc/passwd", "/etc")
	f.Fuzz(func(t *testing.T, req, allow string, reqRW, allowRW bool, home, tmp, ws, p, root string) {
		if filepath.IsAbs(p) && filepath.IsAbs(root) && filepath.Clean(p) == p && filepath.Clean(root) == root {
			rel, err := filepath.Rel(root, p)
			want := err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
			if got := pathx.Within(p, root); got != want {
				t.Fatalf("Within(%q, %q) = %v, want %v", p, root, got, want)
			}
		}
		env := caps.Env{Home: home, Tmp: tmp, Workspace: ws}
		for _, s := range []string{req, allow} {
			for _, r := range env.Resolve(s) {
				if !filepath.IsAbs(r) || filepath.Clean(r) != r {
					t.Fatalf("%+v Resolve(%q) gives %q", env, s, r)
				}
			}
		}
		mode := func(rw bool) abi.Mode {
			if rw {
				return abi.ReadWrite
			}
			return abi.ReadOnly
		}
		m := &abi.Manifest{Name: "p", ABI: 1, Tools: []abi.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Capabilities: abi.Capabilities{
				Files:   &abi.FilesScope{Paths: []abi.PathScope{{Path: req, Mode: mode(reqRW)}}},
				Process: &abi.ProcessScope{Commands: []string{"git"}, Cwd: []string{req}},
			}}
		if caps.ValidateManifest(m) != nil {
			return
		}
		pb, _ := json.Marshal(map[string]any{"default": abi.Capabilities{
			Files:   &abi.FilesScope{Paths: []abi.PathScope{{Path: allow, Mode: mode(allowRW)}}},
			Process: &abi.ProcessScope{Commands: []string{"*"}, Cwd: []string{allow}},
		}})
		pol, err := caps.ParsePolicy(pb)
		if err != nil {
			return
		}
		allow = pol.Default.Files.Paths[0].Path // JSON turned invalid UTF-8 into U+FFFD
		g := checkGrant(t, pol, m, env)
		for _, rp := range env.Resolve(req) {
			for _, ap := range env.Resolve(allow) {
				var inner string
				switch {
				case pathx.Within(rp, ap):
					inner = rp
				case pathx.Within(ap, rp):
					inner = ap
				default:
					continue
				}
				if !slices.ContainsFunc(g.FileRoots, func(r caps.Root) bool { return r.Path == inner }) {
					t.Fatalf("%+v: %q and %q share %q, but the grant has %v", env, req, allow, inner, g.FileRoots)
				}
				if !slices.Contains(g.CwdRoots, inner) {
					t.Fatalf("%+v: cwd %q and %q share %q, but the grant has %v", env, req, allow, inner, g.CwdRoots)
				}
			}
		}
	})
}

// checkGrant computes p.Allow(m, env) and checks that it gives nothing the
// manifest did not request and the policy did not allow.
func checkGrant(t *testing.T, p *caps.Policy, m *abi.Manifest, env caps.Env) *caps.Grant {
	t.Helper()
	g := p.Allow(m, env)
	var allowed abi.Capabilities
	if c, ok := p.Plugins[m.Name]; ok {
		allowed = c
	} else if p.Default != nil {
		allowed = *p.Default
	}
	req := m.Capabilities
	for _, f := range abi.Families {
		if g.Has(f) && !(req.Has(f) && allowed.Has(f)) {
			t.Fatalf("%s granted, requested %v, allowed %v", f, req.Has(f), allowed.Has(f))
		}
	}
	if g.Has(abi.FamilyFiles) != (len(g.FileRoots) > 0) {
		t.Fatalf("Has(files) = %v with roots %v", g.Has(abi.FamilyFiles), g.FileRoots)
	}
	covers := func(scopes []abi.PathScope, path string, needRW bool) bool {
		for _, s := range scopes {
			if needRW && s.Mode != abi.ReadWrite {
				continue
			}
			for _, r := range env.Resolve(s.Path) {
				if pathx.Within(path, r) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range g.FileRoots {
		if !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
			t.Fatalf("root %q is not absolute and clean", r.Path)
		}
		if req.Files == nil || allowed.Files == nil {
			t.Fatalf("root %q without a files request and allowance", r.Path)
		}
		// A tree inside an rw request and an rw allowance, each covering it,
		// is writable only if one pair is rw on both sides: check the
		// weaker, per-side property, and the stronger one per pair below.
		if !covers(req.Files.Paths, r.Path, r.Writable) || !covers(allowed.Files.Paths, r.Path, r.Writable) {
			t.Fatalf("root %+v escapes the request %+v or the allowance %+v (env %+v)", r, req.Files.Paths, allowed.Files.Paths, env)
		}
		if r.Writable && !writablePair(req.Files.Paths, allowed.Files.Paths, r.Path, env) {
			t.Fatalf("root %+v is writable, but no rw request and rw allowance both hold it", r)
		}
	}
	if len(g.Commands) > 0 || len(g.CwdRoots) > 0 || g.Shell || g.Tools {
		if req.Process == nil || allowed.Process == nil {
			t.Fatal("process scope without a process request and allowance")
		}
		for _, c := range g.Commands {
			if !slices.Contains(req.Process.Commands, c) && !slices.Contains(req.Process.Commands, "*") ||
				!slices.Contains(allowed.Process.Commands, c) && !slices.Contains(allowed.Process.Commands, "*") {
				t.Fatalf("command %q: requested %v, allowed %v", c, req.Process.Commands, allowed.Process.Commands)
			}
		}
		cwd := func(dirs []string) []abi.PathScope {
			if len(dirs) == 0 {
				dirs = []string{"$SANDBOX"}
			}
			var out []abi.PathScope
			for _, d := range dirs {
				out = append(out, abi.PathScope{Path: d, Mode: abi.ReadWrite})
			}
			return out
		}
		for _, d := range g.CwdRoots {
			if !filepath.IsAbs(d) || filepath.Clean(d) != d ||
				!covers(cwd(req.Process.Cwd), d, false) || !covers(cwd(allowed.Process.Cwd), d, false) {
				t.Fatalf("cwd %q escapes the request %v or the allowance %v (env %+v)", d, req.Process.Cwd, allowed.Process.Cwd, env)
			}
		}
		if g.Shell && !(req.Process.Shell && allowed.Process.Shell) {
			t.Fatal("shell granted without both sides")
		}
		if g.Tools && !(req.Process.Tools && allowed.Process.Tools) {
			t.Fatal("tools granted without both sides")
		}
	}
	if g.Timeout <= 0 || g.MemoryPages == 0 || g.MemoryPages > 65536 || g.MaxResultBytes <= 0 || g.MaxInstances <= 0 {
		t.Fatalf("limits out of range: timeout %v, pages %d, result %d, instances %d", g.Timeout, g.MemoryPages, g.MaxResultBytes, g.MaxInstances)
	}
	return g
}

func writablePair(req, allow []abi.PathScope, path string, env caps.Env) bool {
	for _, r := range req {
		for _, a := range allow {
			if r.Mode != abi.ReadWrite || a.Mode != abi.ReadWrite {
				continue
			}
			for _, rp := range env.Resolve(r.Path) {
				for _, ap := range env.Resolve(a.Path) {
					if pathx.Within(path, rp) && pathx.Within(path, ap) {
						return true
					}
				}
			}
		}
	}
	return false
}

// normalize makes two decodings of one document comparable: empty slices
// and maps become nil, raw JSON is re-encoded canonically.
func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			var x any
			if json.Unmarshal(v.Bytes(), &x) == nil {
				b, _ := json.Marshal(x)
				v.SetBytes(b)
			}
			return
		}
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			normalize(e)
			v.SetMapIndex(k, e)
		}
	}
}

func readFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzParseMachineTools: any bytes as a Machine Mode registration
// (--machine-tools, the policy's machine_tools) either fail with no value,
// or give registrations that hold the rules (an absolute clean program,
// names and prefixes of their pattern, no variable that makes a program
// run code, unique prefixes) and survive a round trip.
func FuzzParseMachineTools(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`,
		`{"docs":{"command":["/opt/docs/bin/docs"],"env":["DOCS_TOKEN"]}}`,
		`{"n":{"command":["/usr/bin/python3","/opt/notes.py"],"prefix":"notes","sha256":"` + strings.Repeat("ab", 32) + `","timeout_ms":1000,"max_output_bytes":1024}}`,
		`{"a":{"command":["/a"]},"b":{"command":["/b"],"prefix":"a"}}`,
		`{"a":{"command":["rel"]}}`, `{"a":{"command":["/a"],"env":["LD_PRELOAD"]}}`, `{"a":{"command":["/a"]},"a":{"command":["/b"]}}`,
		`{"a":{"command":["/a/../b"]}}`, `{"a":{"command":["/a"],"extra":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := caps.ParseMachineTools(data)
		if err != nil {
			if m != nil {
				t.Fatal("registrations returned with an error")
			}
			return
		}
		prefixes := map[string]bool{}
		for name, r := range m {
			if len(r.Command) == 0 || !filepath.IsAbs(r.Command[0]) || filepath.Clean(r.Command[0]) != r.Command[0] {
				t.Fatalf("%s: command %q", name, r.Command)
			}
			for _, e := range r.Env {
				if strings.HasPrefix(e, "LD_") || e == "BASH_ENV" || strings.ContainsAny(e, "=\x00") {
					t.Fatalf("%s: env %q", name, e)
				}
			}
			p := r.Prefix
			if p == "" {
				p = name
			}
			if prefixes[p] {
				t.Fatalf("prefix %q twice", p)
			}
			prefixes[p] = true
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := caps.ParseMachineTools(b)
		b2, _ := json.Marshal(m2)
		if err != nil || len(m) > 0 && string(b) != string(b2) {
			t.Fatalf("round trip: %v\n%s\n%s", err, b, b2)
		}
	})
}
