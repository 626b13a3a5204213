package files

import (
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/sdk/abi"

	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/fsroot"
)

type filesEnv struct {
	base, rw, ro, out string
	fam               *Family
	defs              map[string]hostfn.Def
	call              *hostfn.Call
	grant             *caps.Grant
}

// newFilesEnv makes base/{rw,ro,outside}, a grant of rw (read-write) and
// ro (read-only), and rw/dirlink -> ../outside.
func newFilesEnv(t *testing.T) *filesEnv {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &filesEnv{base: base, rw: base + "/rw", ro: base + "/ro", out: base + "/outside", fam: New(fsroot.Options{}), defs: map[string]hostfn.Def{}}
	for _, d := range []string{e.rw + "/sub", e.ro, e.out} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(e.rw+"/file.txt", []byte("hello\nworld\n"), 0o644)
	os.WriteFile(e.ro+"/ro.txt", []byte("read only"), 0o644)
	os.WriteFile(e.out+"/secret.txt", []byte("SECRET"), 0o644)
	os.Symlink("../outside", e.rw+"/dirlink")
	os.Symlink(e.out+"/secret.txt", e.rw+"/abs")
	e.grant = grantFiles(abi.PathScope{Path: e.rw, Mode: abi.ReadWrite}, abi.PathScope{Path: e.ro, Mode: abi.ReadOnly})
	if len(e.grant.FileRoots) != 2 {
		t.Fatalf("grant: %+v", e.grant.FileRoots)
	}
	e.call = &hostfn.Call{Plugin: "t", Grant: e.grant}
	for _, d := range e.fam.Defs() {
		e.defs[d.Name] = d
	}
	t.Cleanup(func() { e.fam.Close() })
	return e
}

func grantFiles(paths ...abi.PathScope) *caps.Grant {
	p := &caps.Policy{Default: &abi.Capabilities{Files: &abi.FilesScope{Paths: paths}}}
	m := &abi.Manifest{Name: "t", Capabilities: abi.Capabilities{Files: &abi.FilesScope{Paths: paths}}}
	return p.Allow(m, caps.Env{Tmp: "/tmp"})
}

// invoke runs function name with the raw request, as a guest would: the
// request in memory, the packed result, then aiod:core.response_read.
func (e *filesEnv) invoke(t *testing.T, name string, req []byte) (abi.Code, []byte) {
	t.Helper()
	return invokeDef(t, e.defs[name], e.call, req)
}

func invokeDef(t *testing.T, d hostfn.Def, c *hostfn.Call, req []byte) (abi.Code, []byte) {
	t.Helper()
	const reqAt = 16
	mem := make(hostfntest.Mem, reqAt+len(req)+(17<<20))
	copy(mem[reqAt:], req)
	stack := []uint64{reqAt, uint64(len(req))}
	d.Fn(context.Background(), c, mem, stack)
	code, n := abi.Code(stack[0]>>32), uint32(stack[0])
	if n == 0 {
		return code, nil
	}
	respAt := uint32(reqAt + len(req))
	hostfntest.ResponseRead().Fn(context.Background(), c, mem, []uint64{uint64(respAt)})
	return code, append([]byte(nil), mem[respAt:respAt+n]...)
}

func js(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func writeReq(hdr any, content []byte) []byte {
	h := js(hdr)
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(h)))
	return append(append(b, h...), content...)
}

func decodeObj(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response %q: %v", b, err)
	}
	return m
}

func TestFilesDefs(t *testing.T) {
	fam := New(fsroot.Options{})
	if fam.Name() != abi.FamilyFiles {
		t.Fatalf("name %q", fam.Name())
	}
	var names []string
	for _, d := range fam.Defs() {
		names = append(names, d.Name)
		if d.Module != "aiod:files" || !reflect.DeepEqual(d.Params, []hostfn.ValueType{hostfn.I32, hostfn.I32}) || !reflect.DeepEqual(d.Results, []hostfn.ValueType{hostfn.I64}) {
			t.Errorf("%s: %s %v %v", d.Name, d.Module, d.Params, d.Results)
		}
	}
	want := []string{"read", "write", "stat", "exists", "list", "walk", "mkdir", "remove", "rename"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("defs %v", names)
	}
}

func TestFilesHappyPaths(t *testing.T) {
	e := newFilesEnv(t)
	steps := []struct {
		name string
		fn   string
		req  []byte
		// check the response
		check func(t *testing.T, resp []byte)
	}{
		{"read", "read", js(map[string]any{"path": e.rw + "/file.txt"}), func(t *testing.T, r []byte) {
			if string(r) != "hello\nworld\n" {
				t.Fatalf("%q", r)
			}
		}},
		{"read lines", "read", js(map[string]any{"path": e.rw + "/file.txt", "start_line": 1, "end_line": 2}), func(t *testing.T, r []byte) {
			if string(r) != "world\n" {
				t.Fatalf("%q", r)
			}
		}},
		{"read ro", "read", js(map[string]any{"path": e.ro + "/ro.txt"}), func(t *testing.T, r []byte) {
			if string(r) != "read only" {
				t.Fatalf("%q", r)
			}
		}},
		{"write", "write", writeReq(map[string]any{"path": e.rw + "/new/dir/f.txt"}, []byte("data")), func(t *testing.T, r []byte) {
			if m := decodeObj(t, r); m["bytes_written"] != 4.0 {
				t.Fatalf("%s", r)
			}
			if b, _ := os.ReadFile(e.rw + "/new/dir/f.txt"); string(b) != "data" {
				t.Fatalf("on disk %q", b)
			}
		}},
		{"append", "write", writeReq(map[string]any{"path": e.rw + "/new/dir/f.txt", "append": true, "mode": 0o600}, []byte("+more")), func(t *testing.T, r []byte) {
			if b, _ := os.ReadFile(e.rw + "/new/dir/f.txt"); string(b) != "data+more" {
				t.Fatalf("on disk %q", b)
			}
			if fi, _ := os.Stat(e.rw + "/new/dir/f.txt"); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v", fi.Mode())
			}
		}},
		{"stat", "stat", js(map[string]any{"path": e.rw + "/file.txt"}), func(t *testing.T, r []byte) {
			m := decodeObj(t, r)
			if m["name"] != "file.txt" || m["size"] != 12.0 || m["is_file"] != true || m["is_directory"] != false || m["mode"] != 420.0 {
				t.Fatalf("%s", r)
			}
			if _, err := time.Parse(time.RFC3339Nano, m["modified_time"].(string)); err != nil {
				t.Fatal(err)
			}
		}},
		{"lstat", "stat", js(map[string]any{"path": e.rw + "/dirlink", "lstat": true}), func(t *testing.T, r []byte) {
			if m := decodeObj(t, r); m["is_symlink"] != true || m["symlink_target"] != "../outside" {
				t.Fatalf("%s", r)
			}
		}},
		{"exists", "exists", js(map[string]any{"path": e.rw + "/sub"}), func(t *testing.T, r []byte) {
			if string(r) != `{"exists":true,"is_directory":true,"is_file":false}` {
				t.Fatalf("%s", r)
			}
		}},
		{"exists not", "exists", js(map[string]any{"path": e.rw + "/nope"}), func(t *testing.T, r []byte) {
			if string(r) != `{"exists":false,"is_directory":false,"is_file":false}` {
				t.Fatalf("%s", r)
			}
		}},
		{"list", "list", js(map[string]any{"path": e.rw}), func(t *testing.T, r []byte) {
			var l struct {
				Path    string
				Entries []struct {
					Name        string `json:"name"`
					Path        string `json:"path"`
					IsDirectory bool   `json:"is_directory"`
					IsSymlink   bool   `json:"is_symlink"`
				}
				TotalCount int  `json:"total_count"`
				Truncated  bool `json:"truncated"`
			}
			json.Unmarshal(r, &l)
			var names []string
			for _, en := range l.Entries {
				names = append(names, en.Name)
			}
			if l.Path != e.rw || !reflect.DeepEqual(names, []string{"abs", "dirlink", "file.txt", "new", "sub"}) || l.TotalCount != 5 || l.Truncated {
				t.Fatalf("%s", r)
			}
			if !l.Entries[1].IsSymlink || !l.Entries[4].IsDirectory || l.Entries[2].Path != e.rw+"/file.txt" {
				t.Fatalf("%s", r)
			}
		}},
		{"walk", "walk", js(map[string]any{"path": e.rw, "max_entries": 100}), func(t *testing.T, r []byte) {
			m := decodeObj(t, r)
			ents := m["entries"].([]any)
			var paths []string
			for _, en := range ents {
				paths = append(paths, strings.TrimPrefix(en.(map[string]any)["path"].(string), e.rw+"/"))
			}
			want := []string{"abs", "dirlink", "file.txt", "new", "new/dir", "new/dir/f.txt", "sub"}
			if !reflect.DeepEqual(paths, want) || m["truncated"] != false || m["depth_limited"] != false || len(m["errors"].([]any)) != 0 {
				t.Fatalf("%s", r)
			}
		}},
		{"mkdir", "mkdir", js(map[string]any{"path": e.rw + "/m/n", "parents": true}), func(t *testing.T, r []byte) {
			if string(r) != `{"created":true}` {
				t.Fatalf("%s", r)
			}
			if fi, err := os.Stat(e.rw + "/m/n"); err != nil || !fi.IsDir() {
				t.Fatal("not created")
			}
		}},
		{"rename", "rename", js(map[string]any{"path": e.rw + "/m", "target": e.rw + "/sub/m2"}), func(t *testing.T, r []byte) {
			if string(r) != `{}` {
				t.Fatalf("%s", r)
			}
			if _, err := os.Stat(e.rw + "/sub/m2/n"); err != nil {
				t.Fatal("not renamed")
			}
		}},
		{"remove", "remove", js(map[string]any{"path": e.rw + "/sub/m2", "recursive": true}), func(t *testing.T, r []byte) {
			if string(r) != `{}` {
				t.Fatalf("%s", r)
			}
			if _, err := os.Stat(e.rw + "/sub/m2"); !os.IsNotExist(err) {
				t.Fatal("not removed")
			}
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			code, resp := e.invoke(t, st.fn, st.req)
			if code != abi.OK {
				t.Fatalf("code %v: %s", code, resp)
			}
			st.check(t, resp)
		})
	}
}

func TestFilesMissingFileError(t *testing.T) {
	e := newFilesEnv(t)
	p := e.rw + "/agent-missing.txt"
	code, resp := e.invoke(t, "read", js(map[string]any{"path": p}))
	if code != abi.NotFound {
		t.Fatalf("code %v", code)
	}
	want := `{"code":"not_found","errno":2,"errno_name":"ENOENT","error_type":"not_found",` +
		`"exception_type":"FileNotFoundError","message":"Failed to read file: No such file or directory (os error 2)",` +
		`"operation":"read","path":` + string(js(p)) + `,"retryable":false}`
	if string(resp) != want {
		t.Fatalf("\n got %s\nwant %s", resp, want)
	}
}

func TestFilesErrors(t *testing.T) {
	e := newFilesEnv(t)
	sparse := e.rw + "/huge"
	f, _ := os.Create(sparse)
	f.Truncate(1 << 30)
	f.Close()
	tests := []struct {
		name    string
		fn      string
		req     []byte
		code    abi.Code
		errType string
		msg     string // substring
	}{
		{"outside", "read", js(map[string]any{"path": "/etc/passwd"}), abi.Denied, "permission_denied", "Failed to read file: /etc/passwd is outside the plugin's granted roots"},
		{"dotdot", "stat", js(map[string]any{"path": e.rw + "/../outside/secret.txt"}), abi.Denied, "permission_denied", "outside the plugin's granted roots"},
		{"relative", "read", js(map[string]any{"path": "file.txt"}), abi.Invalid, "invalid_path", "path must be absolute"},
		{"directory", "read", js(map[string]any{"path": e.rw + "/sub"}), abi.Invalid, "invalid_path", "Failed to read file: Is a directory (os error 21)"},
		{"too large", "read", js(map[string]any{"path": sparse}), abi.TooLarge, "bad_request", "file exceeds the 16 MiB buffered text limit"},
		{"unknown field", "read", js(map[string]any{"path": e.rw + "/file.txt", "startLine": 1}), abi.Invalid, "bad_request", `unknown field "startLine"`},
		{"trailing", "stat", []byte(`{"path":"/x"} {}`), abi.Invalid, "bad_request", "trailing data"},
		{"wrong case", "stat", []byte(`{"PATH":"/x"}`), abi.Invalid, "bad_request", `unknown field "PATH"`},
		{"duplicate field", "stat", []byte(`{"path":"/x","path":"/y"}`), abi.Invalid, "bad_request", `duplicate field "path"`},
		{"not json", "list", []byte(`nope`), abi.Invalid, "bad_request", "bad request"},
		{"short write", "write", []byte{1, 0}, abi.Invalid, "bad_request", "4-byte header length"},
		{"bad header length", "write", []byte{200, 0, 0, 0, '{', '}'}, abi.Invalid, "bad_request", "header length exceeds"},
		{"ro write", "write", writeReq(map[string]any{"path": e.ro + "/ro.txt"}, []byte("x")), abi.Denied, "permission_denied", "read-only root"},
		{"ro mkdir", "mkdir", js(map[string]any{"path": e.ro + "/d"}), abi.Denied, "permission_denied", "read-only root"},
		{"ro remove", "remove", js(map[string]any{"path": e.ro + "/ro.txt"}), abi.Denied, "permission_denied", "read-only root"},
		{"ro rename", "rename", js(map[string]any{"path": e.ro + "/ro.txt", "target": e.rw + "/x"}), abi.Denied, "permission_denied", "read-only root"},
		{"exists", "mkdir", js(map[string]any{"path": e.rw + "/sub"}), abi.Exists, "already_exists", "Failed to create directory: File exists (os error 17)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, resp := e.invoke(t, tc.fn, tc.req)
			if time.Since(start) > 2*time.Second {
				t.Fatal("slow")
			}
			m := decodeObj(t, resp)
			if code != tc.code || m["code"] != tc.code.String() || m["error_type"] != tc.errType || !strings.Contains(m["message"].(string), tc.msg) {
				t.Fatalf("code %v: %s", code, resp)
			}
			for _, k := range []string{"errno", "errno_name", "exception_type", "operation", "path", "retryable"} {
				if _, ok := m[k]; !ok {
					t.Fatalf("no %s in %s", k, resp)
				}
			}
			if m["operation"] != tc.fn {
				t.Fatalf("operation %v", m["operation"])
			}
		})
	}
	if b, _ := os.ReadFile(e.ro + "/ro.txt"); string(b) != "read only" {
		t.Fatal("ro changed")
	}
}

// TestFilesEscapesEveryFunction: every function, through a symlinked dir
// and an absolute link to the outside, is denied and changes nothing.
func TestFilesEscapesEveryFunction(t *testing.T) {
	e := newFilesEnv(t)
	through := e.rw + "/dirlink"
	reqs := map[string][]byte{
		"read":          js(map[string]any{"path": through + "/secret.txt"}),
		"read abs link": js(map[string]any{"path": e.rw + "/abs"}),
		"write":         writeReq(map[string]any{"path": through + "/secret.txt"}, []byte("pwned")),
		"write link":    writeReq(map[string]any{"path": e.rw + "/abs"}, []byte("pwned")),
		"stat":          js(map[string]any{"path": through + "/secret.txt"}),
		"exists":        js(map[string]any{"path": through + "/secret.txt"}),
		"list":          js(map[string]any{"path": through}),
		"walk":          js(map[string]any{"path": through}),
		"mkdir":         js(map[string]any{"path": through + "/d", "parents": true}),
		"remove":        js(map[string]any{"path": through + "/secret.txt", "recursive": true}),
		"rename":        js(map[string]any{"path": through + "/secret.txt", "target": e.rw + "/stolen"}),
		"rename target": js(map[string]any{"path": e.rw + "/file.txt", "target": through + "/planted", "overwrite": true}),
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			fn, _, _ := strings.Cut(name, " ")
			code, resp := e.invoke(t, fn, req)
			m := decodeObj(t, resp)
			if code != abi.Denied || m["errno"] != 13.0 || m["errno_name"] != "EACCES" || m["exception_type"] != "PermissionError" || m["error_type"] != "permission_denied" {
				t.Fatalf("%s: code %v %s", name, code, resp)
			}
			if bytes.Contains(resp, []byte("SECRET")) {
				t.Fatal("leaked")
			}
			if b, _ := os.ReadFile(e.out + "/secret.txt"); string(b) != "SECRET" {
				t.Fatal("outside changed")
			}
			if ents, _ := os.ReadDir(e.out); len(ents) != 1 {
				t.Fatal("outside dir changed")
			}
		})
	}
}

func TestFilesBinaryRoundTrip(t *testing.T) {
	e := newFilesEnv(t)
	data := make([]byte, 3*256)
	for i := range data {
		data[i] = byte(i * 7)
	}
	data = append(data, []byte(`{"not":"json"}`)...)
	p := e.rw + "/bin.dat"
	if code, resp := e.invoke(t, "write", writeReq(map[string]any{"path": p}, data)); code != abi.OK {
		t.Fatalf("write %v %s", code, resp)
	}
	code, resp := e.invoke(t, "read", js(map[string]any{"path": p}))
	if code != abi.OK || !bytes.Equal(resp, data) {
		t.Fatalf("read %v: %d bytes", code, len(resp))
	}
	// An empty file reads as an empty response.
	e.invoke(t, "write", writeReq(map[string]any{"path": p}, nil))
	if code, resp := e.invoke(t, "read", js(map[string]any{"path": p})); code != abi.OK || len(resp) != 0 {
		t.Fatalf("empty: %v %q", code, resp)
	}
}

func TestFilesGrantRequired(t *testing.T) {
	e := newFilesEnv(t)
	for name, tc := range map[string]struct {
		g   *caps.Grant
		why string
	}{
		"nil grant":   {nil, "the plugin has no files grant"},
		"no files":    {(&caps.Policy{}).Allow(&abi.Manifest{Name: "t"}, caps.Env{Tmp: "/tmp"}), "the plugin has no files grant"},
		"other grant": {grantFiles(abi.PathScope{Path: e.ro, Mode: abi.ReadOnly}), "outside the plugin's granted roots"},
	} {
		t.Run(name, func(t *testing.T) {
			c := &hostfn.Call{Grant: tc.g}
			code, resp := invokeDef(t, e.defs["read"], c, js(map[string]any{"path": e.rw + "/file.txt"}))
			m := decodeObj(t, resp)
			if code != abi.Denied || m["error_type"] != "permission_denied" || m["path"] != e.rw+"/file.txt" || !strings.Contains(m["message"].(string), tc.why) {
				t.Fatalf("%v %s", code, resp)
			}
		})
	}
}

func TestFilesSetCachedPerGrant(t *testing.T) {
	e := newFilesEnv(t)
	s1, err := e.fam.Set(e.grant)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := e.fam.Set(e.grant)
	if s1 != s2 {
		t.Fatal("not cached")
	}
	other := grantFiles(abi.PathScope{Path: e.rw, Mode: abi.ReadWrite})
	if s3, _ := e.fam.Set(other); s3 == s1 {
		t.Fatal("shared across grants")
	}
	if root, rel, err := s1.Resolve(e.rw + "/a/b"); err != nil || root != e.rw || rel != "a/b" {
		t.Fatalf("resolve %q %q %v", root, rel, err)
	}
	e.fam.Release(e.grant)
	if s4, _ := e.fam.Set(e.grant); s4 == s1 {
		t.Fatal("release kept the set")
	}
	// The family still serves after a release.
	if code, resp := e.invoke(t, "read", js(map[string]any{"path": e.rw + "/file.txt"})); code != abi.OK || string(resp) != "hello\nworld\n" {
		t.Fatalf("%v %s", code, resp)
	}
}

func TestFilesRequestOutOfBoundsTraps(t *testing.T) {
	e := newFilesEnv(t)
	defer func() {
		if recover() == nil {
			t.Fatal("no trap")
		}
	}()
	e.defs["read"].Fn(context.Background(), e.call, make(hostfntest.Mem, 8), []uint64{4, 100})
}
