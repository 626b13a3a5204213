package fsroot

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/sdk/abi"
)

const secret = "SECRET-OUTSIDE"

// env is a test tree:
//
//	base/rw/            writable root
//	  file.txt          "hello\nworld\n"
//	  sub/inner.txt     "inner"
//	  okrel -> file.txt           (relative, inside)
//	  okdir -> sub                (relative dir, inside)
//	  rel -> ../outside/secret.txt (relative, escapes)
//	  abs -> base/outside/secret.txt (absolute, escapes)
//	  absin -> base/rw/file.txt   (absolute, points inside: refused)
//	  dirlink -> ../outside       (symlinked dir, escapes)
//	  absdir -> base/outside      (absolute symlinked dir)
//	base/ro/ro.txt      read-only root
//	base/outside/secret.txt
type env struct {
	base, rw, ro, out string
	set               *Set
}

func newEnv(t testing.TB) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{base: base, rw: filepath.Join(base, "rw"), ro: filepath.Join(base, "ro"), out: filepath.Join(base, "outside")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{e.rw, e.ro, e.out, filepath.Join(e.rw, "sub")} {
		must(os.MkdirAll(d, 0o755))
	}
	must(os.WriteFile(filepath.Join(e.rw, "file.txt"), []byte("hello\nworld\n"), 0o644))
	must(os.WriteFile(filepath.Join(e.rw, "sub", "inner.txt"), []byte("inner"), 0o644))
	must(os.WriteFile(filepath.Join(e.ro, "ro.txt"), []byte("read only"), 0o644))
	must(os.WriteFile(filepath.Join(e.out, "secret.txt"), []byte(secret), 0o644))
	for name, target := range map[string]string{
		"okrel":   "file.txt",
		"okdir":   "sub",
		"rel":     "../outside/secret.txt",
		"abs":     filepath.Join(e.out, "secret.txt"),
		"absin":   filepath.Join(e.rw, "file.txt"),
		"dirlink": "../outside",
		"absdir":  e.out,
	} {
		must(os.Symlink(target, filepath.Join(e.rw, name)))
	}
	e.set, err = New([]caps.Root{{Path: e.rw, Writable: true}, {Path: e.ro}}, Options{})
	must(err)
	t.Cleanup(func() { e.set.Close() })
	return e
}

// checkOutside fails the test if the outside tree changed.
func (e *env) checkOutside(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.out, "secret.txt"))
	if err != nil || string(b) != secret {
		t.Fatalf("outside secret changed: %q %v", b, err)
	}
	ents, _ := os.ReadDir(e.out)
	if len(ents) != 1 {
		t.Fatalf("outside dir changed: %v", ents)
	}
}

func asErr(t *testing.T, err error) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	return fe
}

var ctx = context.Background()

func i64(n int64) *int64   { return &n }
func u32(n uint32) *uint32 { return &n }

func TestMissingFileStructuredError(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.rw, "agent-missing.txt")
	_, err := e.set.Read(ctx, &ReadRequest{Path: p})
	fe := asErr(t, err)
	want := Error{
		Code: abi.NotFound, Errno: 2, ErrnoName: "ENOENT", ErrorType: "not_found", ExceptionType: "FileNotFoundError",
		Message:   "Failed to read file: No such file or directory (os error 2)",
		Operation: "read", Path: p, Retryable: false,
	}
	got := *fe
	got.Err = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields\n got %#v\nwant %#v", got, want)
	}
	if fe.Code != abi.NotFound || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("code %v, Is(ErrNotExist) %v", fe.Code, errors.Is(err, fs.ErrNotExist))
	}
}

func TestRead(t *testing.T) {
	e := newEnv(t)
	big := filepath.Join(e.rw, "lines.txt")
	if err := os.WriteFile(big, []byte("l0\nl1\nl2\nl3\nlast"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  ReadRequest
		want string
	}{
		{"whole", ReadRequest{Path: e.rw + "/file.txt"}, "hello\nworld\n"},
		{"unclean path", ReadRequest{Path: e.rw + "//sub/../file.txt"}, "hello\nworld\n"},
		{"through inside link", ReadRequest{Path: e.rw + "/okrel"}, "hello\nworld\n"},
		{"through inside dir link", ReadRequest{Path: e.rw + "/okdir/inner.txt"}, "inner"},
		{"read-only root", ReadRequest{Path: e.ro + "/ro.txt"}, "read only"},
		{"lines 1-3", ReadRequest{Path: big, StartLine: i64(1), EndLine: i64(3)}, "l1\nl2\n"},
		{"lines from 3", ReadRequest{Path: big, StartLine: i64(3)}, "l3\nlast"},
		{"lines to 1", ReadRequest{Path: big, EndLine: i64(1)}, "l0\n"},
		{"lines past end", ReadRequest{Path: big, StartLine: i64(9), EndLine: i64(12)}, ""},
		{"lines empty range", ReadRequest{Path: big, StartLine: i64(2), EndLine: i64(2)}, ""},
		{"bytes offset", ReadRequest{Path: big, Offset: 3}, "l1\nl2\nl3\nlast"},
		{"bytes offset length", ReadRequest{Path: big, Offset: 3, Length: i64(2)}, "l1"},
		{"bytes past end", ReadRequest{Path: big, Offset: 100}, ""},
		{"max_bytes fits", ReadRequest{Path: big, MaxBytes: 16}, "l0\nl1\nl2\nl3\nlast"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.set.Read(ctx, &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name    string
		req     ReadRequest
		code    abi.Code
		errno   string
		errType string
		msg     string
	}{
		{"relative", ReadRequest{Path: "rw/file.txt"}, abi.Invalid, "EINVAL", "invalid_path", "Failed to read file: path must be absolute"},
		{"empty", ReadRequest{Path: ""}, abi.Invalid, "EINVAL", "invalid_path", "Failed to read file: path is required"},
		{"directory", ReadRequest{Path: e.rw + "/sub"}, abi.Invalid, "EISDIR", "invalid_path", "Failed to read file: Is a directory (os error 21)"},
		{"not a dir", ReadRequest{Path: e.rw + "/file.txt/x"}, abi.Invalid, "ENOTDIR", "invalid_path", "Failed to read file: Not a directory (os error 20)"},
		{"over max_bytes", ReadRequest{Path: e.rw + "/file.txt", MaxBytes: 5}, abi.TooLarge, "EFBIG", "bad_request", "file exceeds the 5 bytes buffered text limit"},
		{"lines over max_bytes", ReadRequest{Path: e.rw + "/file.txt", StartLine: i64(0), MaxBytes: 7}, abi.TooLarge, "EFBIG", "bad_request", "file exceeds the 7 bytes buffered text limit"},
		{"lines and bytes", ReadRequest{Path: e.rw + "/file.txt", StartLine: i64(0), Offset: 1}, abi.Invalid, "EINVAL", "bad_request", "Failed to read file: a line range and a byte range cannot be combined"},
		{"negative line", ReadRequest{Path: e.rw + "/file.txt", StartLine: i64(-1)}, abi.Invalid, "EINVAL", "bad_request", "Failed to read file: start_line and end_line must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.set.Read(ctx, &tc.req)
			fe := asErr(t, err)
			if fe.Code != tc.code || fe.ErrnoName != tc.errno || fe.ErrorType != tc.errType || fe.Message != tc.msg || fe.Operation != "read" || fe.Path != tc.req.Path {
				t.Fatalf("got %v %s %s %q op=%s path=%s", fe.Code, fe.ErrnoName, fe.ErrorType, fe.Message, fe.Operation, fe.Path)
			}
		})
	}
}

func TestReadLargeSparseFileFailsFast(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.rw, "huge.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, req := range map[string]*ReadRequest{
		"whole":  {Path: p},
		"lines":  {Path: p, StartLine: i64(0)},
		"range":  {Path: p, StartLine: i64(0), EndLine: i64(3)}, // streamed: no newline, the first line alone is too large
		"length": {Path: p, Offset: 10, Length: i64(1 << 29)},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := e.set.Read(ctx, req)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %v", d)
			}
			fe := asErr(t, err)
			if fe.Code != abi.TooLarge || fe.Message != "file exceeds the 16 MiB buffered text limit" || fe.Errno != 27 {
				t.Fatalf("got %v %q %d", fe.Code, fe.Message, fe.Errno)
			}
		})
	}
	// A range of it within the limit is fine.
	b, err := e.set.Read(ctx, &ReadRequest{Path: p, Offset: 1 << 29, Length: i64(4096)})
	if err != nil || len(b) != 4096 {
		t.Fatalf("range: %d %v", len(b), err)
	}
}

func TestReadFIFORefusedWithoutBlocking(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.rw, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.set.Read(ctx, &ReadRequest{Path: p})
		done <- err
	}()
	select {
	case err := <-done:
		if fe := asErr(t, err); fe.ErrorType != abi.FilesBadRequest || !strings.Contains(fe.Message, "not a regular file") {
			t.Fatalf("got %v", *fe)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read of a FIFO blocked")
	}
	_, err := e.set.Write(ctx, &WriteRequest{Path: p}, []byte("x"))
	if fe := asErr(t, err); !strings.Contains(fe.Message, "not a regular file") {
		t.Fatalf("write: %v", *fe)
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	e := newEnv(t)
	data := make([]byte, 0, 256+70000)
	for i := range 256 {
		data = append(data, byte(i))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 70000 {
		data = append(data, byte(r.Uint32()))
	}
	p := filepath.Join(e.rw, "new", "deep", "bin.dat")
	res, err := e.set.Write(ctx, &WriteRequest{Path: p}, data)
	if err != nil || res.BytesWritten != int64(len(data)) {
		t.Fatalf("write: %v %v", res, err)
	}
	got, err := e.set.Read(ctx, &ReadRequest{Path: p})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back differs: %d bytes, %v", len(got), err)
	}
	if _, err := e.set.Write(ctx, &WriteRequest{Path: p, Append: true}, []byte{0, 0xff}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.set.Read(ctx, &ReadRequest{Path: p})
	if !bytes.Equal(got, append(data, 0, 0xff)) {
		t.Fatal("append differs")
	}
}

func TestWrite(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.rw, "w.txt")
	if _, err := e.set.Write(ctx, &WriteRequest{Path: p}, []byte("long content")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.set.Write(ctx, &WriteRequest{Path: p}, []byte("short")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "short" {
		t.Fatalf("truncate: %q", b)
	}
	if _, err := e.set.Write(ctx, &WriteRequest{Path: p, Mode: u32(0o600)}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	_, err := e.set.Write(ctx, &WriteRequest{Path: p, Exclusive: true}, []byte("x"))
	if fe := asErr(t, err); fe.Code != abi.Exists || fe.ExceptionType != "FileExistsError" || fe.Message != "Failed to write file: File exists (os error 17)" {
		t.Fatalf("exclusive: %v", *fe)
	}
	_, err = e.set.Write(ctx, &WriteRequest{Path: p, Mode: u32(0o4755)}, []byte("x"))
	if fe := asErr(t, err); fe.Code != abi.Invalid {
		t.Fatalf("setuid mode: %v", *fe)
	}
	_, err = e.set.Write(ctx, &WriteRequest{Path: e.rw + "/sub"}, []byte("x"))
	if fe := asErr(t, err); fe.ErrnoName != "EISDIR" || fe.ExceptionType != "IsADirectoryError" {
		t.Fatalf("dir: %v", *fe)
	}
	_, err = e.set.Write(ctx, &WriteRequest{Path: e.rw + "/file.txt/x"}, []byte("x"))
	if fe := asErr(t, err); fe.ErrnoName != "ENOTDIR" {
		t.Fatalf("under file: %v", *fe)
	}
	// Through an inside link: writes the target.
	if _, err := e.set.Write(ctx, &WriteRequest{Path: e.rw + "/okrel"}, []byte("via link")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.rw + "/file.txt"); string(b) != "via link" {
		t.Fatalf("link target: %q", b)
	}
}

func TestStatExists(t *testing.T) {
	e := newEnv(t)
	info, err := e.set.Stat(ctx, &StatRequest{Path: e.rw + "/file.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "file.txt" || info.Path != e.rw+"/file.txt" || !info.IsFile || info.IsDirectory || info.Size != 12 || info.Mode != 0o644 || info.ModeString != "-rw-r--r--" || info.ModifiedTime.IsZero() {
		t.Fatalf("stat: %+v", info)
	}
	info, err = e.set.Stat(ctx, &StatRequest{Path: e.rw + "/okdir"})
	if err != nil || !info.IsDirectory || info.IsSymlink {
		t.Fatalf("stat follows: %+v %v", info, err)
	}
	info, err = e.set.Stat(ctx, &StatRequest{Path: e.rw + "/okdir", Lstat: true})
	if err != nil || !info.IsSymlink || info.SymlinkTarget != "sub" || info.IsDirectory {
		t.Fatalf("lstat: %+v %v", info, err)
	}
	// lstat of an escaping link reports the link, without following it.
	info, err = e.set.Stat(ctx, &StatRequest{Path: e.rw + "/abs", Lstat: true})
	if err != nil || !info.IsSymlink || info.SymlinkTarget != e.out+"/secret.txt" {
		t.Fatalf("lstat abs: %+v %v", info, err)
	}
	for path, want := range map[string]ExistsResult{
		e.rw + "/file.txt":    {Exists: true, IsFile: true},
		e.rw + "/sub":         {Exists: true, IsDirectory: true},
		e.rw + "/nope":        {},
		e.rw + "/file.txt/x":  {},
		e.rw + "/nope/deeper": {},
		e.ro:                  {Exists: true, IsDirectory: true},
	} {
		got, err := e.set.Exists(ctx, &ExistsRequest{Path: path})
		if err != nil || *got != want {
			t.Errorf("exists %s: %+v %v", path, got, err)
		}
	}
}

func TestList(t *testing.T) {
	e := newEnv(t)
	res, err := e.set.List(ctx, &ListRequest{Path: e.rw})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range res.Entries {
		names = append(names, en.Name)
	}
	want := []string{"abs", "absdir", "absin", "dirlink", "file.txt", "okdir", "okrel", "rel", "sub"}
	if !reflect.DeepEqual(names, want) || res.TotalCount != 9 || res.Truncated || res.Path != e.rw {
		t.Fatalf("list: %v total %d truncated %v", names, res.TotalCount, res.Truncated)
	}
	byName := map[string]Entry{}
	for _, en := range res.Entries {
		byName[en.Name] = en
	}
	if en := byName["sub"]; !en.IsDirectory || en.IsSymlink || en.Path != e.rw+"/sub" {
		t.Fatalf("sub: %+v", en)
	}
	if en := byName["file.txt"]; en.IsDirectory || en.Size != 12 || en.ModifiedTime.IsZero() {
		t.Fatalf("file: %+v", en)
	}
	if en := byName["dirlink"]; !en.IsSymlink || en.IsDirectory {
		t.Fatalf("dirlink: %+v", en)
	}

	// A big directory: the alphabetically first max_entries, and the total.
	d := filepath.Join(e.rw, "many")
	os.Mkdir(d, 0o755)
	for i := 99; i >= 0; i-- {
		os.WriteFile(filepath.Join(d, string(rune('a'+i/10))+string(rune('a'+i%10))), nil, 0o644)
	}
	res, err = e.set.List(ctx, &ListRequest{Path: d, MaxEntries: 5})
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, en := range res.Entries {
		names = append(names, en.Name)
	}
	if !reflect.DeepEqual(names, []string{"aa", "ab", "ac", "ad", "ae"}) || res.TotalCount != 100 || !res.Truncated {
		t.Fatalf("many: %v %d %v", names, res.TotalCount, res.Truncated)
	}
	// The cap holds even if a larger max_entries is asked.
	small, _ := New([]caps.Root{{Path: e.rw}}, Options{MaxListEntries: 3})
	defer small.Close()
	res, err = small.List(ctx, &ListRequest{Path: d, MaxEntries: 50})
	if err != nil || len(res.Entries) != 3 || !res.Truncated {
		t.Fatalf("cap: %d %v", len(res.Entries), err)
	}

	_, err = e.set.List(ctx, &ListRequest{Path: e.rw + "/file.txt"})
	if fe := asErr(t, err); fe.ErrnoName != "ENOTDIR" || fe.Message != "Failed to list directory: Not a directory (os error 20)" {
		t.Fatalf("list file: %v", *fe)
	}
	_, err = e.set.List(ctx, &ListRequest{Path: e.rw + "/missing"})
	if fe := asErr(t, err); fe.ErrnoName != "ENOENT" || fe.Operation != "list" {
		t.Fatalf("list missing: %v", *fe)
	}
}

func TestWalk(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.rw, "sub", "d2", "d3"), 0o755)
	os.WriteFile(filepath.Join(e.rw, "sub", "d2", "d3", "f3"), nil, 0o644)
	paths := func(r *WalkResult) []string {
		var out []string
		for _, en := range r.Entries {
			out = append(out, strings.TrimPrefix(en.Path, e.rw+"/"))
		}
		return out
	}
	all := []string{"abs", "absdir", "absin", "dirlink", "file.txt", "okdir", "okrel", "rel",
		"sub", "sub/d2", "sub/d2/d3", "sub/d2/d3/f3", "sub/inner.txt"}
	tests := []struct {
		name          string
		req           WalkRequest
		want          []string
		trunc, dlimit bool
	}{
		{"all", WalkRequest{Path: e.rw}, all, false, false},
		{"depth 1", WalkRequest{Path: e.rw, MaxDepth: 1}, all[:9], false, true},
		{"depth 2", WalkRequest{Path: e.rw, MaxDepth: 2}, append(all[:10:10], "sub/inner.txt"), false, true},
		{"max entries", WalkRequest{Path: e.rw, MaxEntries: 10}, all[:10], true, false},
		{"exact entries", WalkRequest{Path: e.rw, MaxEntries: len(all)}, all, false, false},
		{"subtree", WalkRequest{Path: e.rw + "/sub/d2"}, []string{"sub/d2/d3", "sub/d2/d3/f3"}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := e.set.Walk(ctx, &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(r); !reflect.DeepEqual(got, tc.want) || r.Truncated != tc.trunc || r.DepthLimited != tc.dlimit || len(r.Errors) != 0 {
				t.Fatalf("got %v trunc %v dlimit %v errors %v", got, r.Truncated, r.DepthLimited, r.Errors)
			}
		})
	}
	r, _ := e.set.Walk(ctx, &WalkRequest{Path: e.rw})
	for _, en := range r.Entries {
		if en.Name == "f3" && en.Depth != 4 {
			t.Fatalf("depth of f3: %d", en.Depth)
		}
	}
	if os.Geteuid() != 0 {
		locked := filepath.Join(e.rw, "sub", "locked")
		os.Mkdir(locked, 0)
		defer os.Chmod(locked, 0o755)
		r, err := e.set.Walk(ctx, &WalkRequest{Path: e.rw + "/sub"})
		if err != nil || len(r.Errors) != 1 || r.Errors[0].ErrnoName != "EACCES" || r.Errors[0].Path != locked {
			t.Fatalf("unreadable subdir: %v %v", r.Errors, err)
		}
	}
}

func TestMkdirRemoveRename(t *testing.T) {
	e := newEnv(t)
	p := e.rw + "/a/b/c"
	_, err := e.set.Mkdir(ctx, &MkdirRequest{Path: p})
	if fe := asErr(t, err); fe.ErrnoName != "ENOENT" || fe.Message != "Failed to create directory: No such file or directory (os error 2)" {
		t.Fatalf("mkdir without parents: %v", *fe)
	}
	if r, err := e.set.Mkdir(ctx, &MkdirRequest{Path: p, Parents: true}); err != nil || !r.Created {
		t.Fatalf("mkdir -p: %v %v", r, err)
	}
	if r, err := e.set.Mkdir(ctx, &MkdirRequest{Path: p, Parents: true}); err != nil || r.Created {
		t.Fatalf("mkdir -p again: %v %v", r, err)
	}
	_, err = e.set.Mkdir(ctx, &MkdirRequest{Path: p})
	if fe := asErr(t, err); fe.Code != abi.Exists {
		t.Fatalf("mkdir existing: %v", *fe)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Fatal("not created")
	}

	os.WriteFile(p+"/f", []byte("x"), 0o644)
	_, err = e.set.Remove(ctx, &RemoveRequest{Path: e.rw + "/a"})
	if fe := asErr(t, err); fe.ErrnoName != "ENOTEMPTY" || fe.Message != "Failed to remove path: Directory not empty (os error 39)" {
		t.Fatalf("remove non-empty: %v", *fe)
	}
	if _, err := e.set.Remove(ctx, &RemoveRequest{Path: e.rw + "/a", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.rw + "/a"); !os.IsNotExist(err) {
		t.Fatal("not removed")
	}
	_, err = e.set.Remove(ctx, &RemoveRequest{Path: e.rw + "/a", Recursive: true})
	if fe := asErr(t, err); fe.Code != abi.NotFound {
		t.Fatalf("remove missing: %v", *fe)
	}
	_, err = e.set.Remove(ctx, &RemoveRequest{Path: e.rw, Recursive: true})
	if fe := asErr(t, err); fe.Code != abi.Denied {
		t.Fatalf("remove root: %v", *fe)
	}
	// Removing a link removes the link, not its target.
	if _, err := e.set.Remove(ctx, &RemoveRequest{Path: e.rw + "/okrel"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.rw + "/file.txt"); err != nil {
		t.Fatal("link target removed")
	}

	// Rename.
	if _, err := e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/file.txt", Target: e.rw + "/sub/moved.txt"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.rw + "/sub/moved.txt"); string(b) != "hello\nworld\n" {
		t.Fatalf("moved: %q", b)
	}
	_, err = e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/sub/moved.txt", Target: e.rw + "/sub/inner.txt"})
	if fe := asErr(t, err); fe.Code != abi.Exists || fe.Path != e.rw+"/sub/inner.txt" {
		t.Fatalf("rename onto existing: %v", *fe)
	}
	if _, err := e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/sub/moved.txt", Target: e.rw + "/sub/inner.txt", Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	_, err = e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/sub", Target: e.rw + "/sub/inside"})
	if fe := asErr(t, err); fe.ErrorType != abi.FilesInvalidTarget {
		t.Fatalf("rename into itself: %v", *fe)
	}
	_, err = e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/nope", Target: e.rw + "/x"})
	if fe := asErr(t, err); fe.Code != abi.NotFound {
		t.Fatalf("rename missing: %v", *fe)
	}
	_, err = e.set.Rename(ctx, &RenameRequest{Path: e.rw, Target: e.rw + "2"})
	if fe := asErr(t, err); fe.Code != abi.Denied {
		t.Fatalf("rename root: %v", *fe)
	}
}

func TestRenameAcrossRoots(t *testing.T) {
	e := newEnv(t)
	inner := filepath.Join(e.rw, "sub")
	other := filepath.Join(e.base, "other")
	os.Mkdir(other, 0o755)
	s, err := New([]caps.Root{{Path: e.rw, Writable: true}, {Path: inner, Writable: true}, {Path: other, Writable: true}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Nested roots: the outer one holds both ends.
	if _, err := s.Rename(ctx, &RenameRequest{Path: inner + "/inner.txt", Target: e.rw + "/up.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(ctx, &RenameRequest{Path: e.rw + "/up.txt", Target: inner + "/down.txt"}); err != nil {
		t.Fatal(err)
	}
	// Disjoint roots: EXDEV.
	_, err = s.Rename(ctx, &RenameRequest{Path: inner + "/down.txt", Target: other + "/x"})
	if fe := asErr(t, err); fe.ErrnoName != "EXDEV" || fe.ErrorType != abi.FilesInvalidTarget {
		t.Fatalf("disjoint: %v", *fe)
	}
}

func TestReadOnlyRoot(t *testing.T) {
	e := newEnv(t)
	ro := e.ro + "/ro.txt"
	tests := map[string]func() error{
		"write":     func() error { _, err := e.set.Write(ctx, &WriteRequest{Path: ro}, []byte("x")); return err },
		"write new": func() error { _, err := e.set.Write(ctx, &WriteRequest{Path: e.ro + "/new"}, []byte("x")); return err },
		"append": func() error {
			_, err := e.set.Write(ctx, &WriteRequest{Path: ro, Append: true}, []byte("x"))
			return err
		},
		"mkdir":  func() error { _, err := e.set.Mkdir(ctx, &MkdirRequest{Path: e.ro + "/d", Parents: true}); return err },
		"remove": func() error { _, err := e.set.Remove(ctx, &RemoveRequest{Path: ro}); return err },
		"rename from": func() error {
			_, err := e.set.Rename(ctx, &RenameRequest{Path: ro, Target: e.rw + "/stolen"})
			return err
		},
		"rename to": func() error {
			_, err := e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/file.txt", Target: e.ro + "/x"})
			return err
		},
		"rename within": func() error { _, err := e.set.Rename(ctx, &RenameRequest{Path: ro, Target: e.ro + "/y"}); return err },
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			fe := asErr(t, fn())
			if fe.Code != abi.Denied || fe.ErrorType != abi.FilesPermissionDenied || fe.Errno != 13 || fe.ExceptionType != "PermissionError" || !strings.Contains(fe.Message, "read-only root") {
				t.Fatalf("got %v", *fe)
			}
		})
	}
	if b, _ := os.ReadFile(ro); string(b) != "read only" {
		t.Fatalf("ro file changed: %q", b)
	}
	if ents, _ := os.ReadDir(e.ro); len(ents) != 1 {
		t.Fatalf("ro dir changed: %v", ents)
	}
	if _, err := os.Stat(e.rw + "/file.txt"); err != nil {
		t.Fatal("rw file moved")
	}
}

func TestResolve(t *testing.T) {
	s, err := New([]caps.Root{{Path: "/a/b", Writable: true}, {Path: "/a/b/c/"}, {Path: "/x"}, {Path: "/a/b", Writable: false}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Roots()) != 3 {
		t.Fatalf("duplicates not merged: %v", s.Roots())
	}
	tests := []struct {
		path, root, rel string
		code            abi.Code
	}{
		{"/a/b", "/a/b", ".", 0},
		{"/a/b/", "/a/b", ".", 0},
		{"/a/b/f", "/a/b", "f", 0},
		{"/a/b/c", "/a/b/c", ".", 0},
		{"/a/b/c/d/e", "/a/b/c", "d/e", 0},
		{"/a/b/cc", "/a/b", "cc", 0},
		{"/a/b/c/../f", "/a/b", "f", 0},
		{"/x/../a/b/g", "/a/b", "g", 0},
		{"/a/bb", "", "", abi.Denied},
		{"/a", "", "", abi.Denied},
		{"/a/b/..", "", "", abi.Denied},
		{"/a/b/../../etc/passwd", "", "", abi.Denied},
		{"/", "", "", abi.Denied},
		{"a/b", "", "", abi.Invalid},
		{"", "", "", abi.Invalid},
		{"/a/b/\x00", "", "", abi.Invalid},
	}
	for _, tc := range tests {
		root, rel, err := s.Resolve(tc.path)
		if tc.code != 0 {
			fe := asErr(t, err)
			if fe.Code != tc.code {
				t.Errorf("%q: code %v want %v", tc.path, fe.Code, tc.code)
			}
			if tc.code == abi.Denied && fe.Message != "Failed to resolve: "+tc.path+" is outside the plugin's granted roots" {
				t.Errorf("%q: message %q", tc.path, fe.Message)
			}
			continue
		}
		if err != nil || root != tc.root || rel != tc.rel {
			t.Errorf("%q: got %q %q %v want %q %q", tc.path, root, rel, err, tc.root, tc.rel)
		}
	}
	if !s.Writable("/a/b/f") || s.Writable("/a/b/c/f") || s.Writable("/x/f") || s.Writable("/etc") {
		t.Error("Writable")
	}
	// The filesystem root as a grant.
	all, _ := New([]caps.Root{{Path: "/"}}, Options{})
	if root, rel, err := all.Resolve("/etc/passwd"); err != nil || root != "/" || rel != "etc/passwd" {
		t.Errorf("root /: %q %q %v", root, rel, err)
	}
	if _, err := New([]caps.Root{{Path: "rel"}}, Options{}); err == nil {
		t.Error("relative root accepted")
	}
}

func TestClose(t *testing.T) {
	e := newEnv(t)
	if _, err := e.set.Read(ctx, &ReadRequest{Path: e.rw + "/file.txt"}); err != nil {
		t.Fatal(err)
	}
	if err := e.set.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.set.Close(); err != nil {
		t.Fatal("second close:", err)
	}
	_, err := e.set.Read(ctx, &ReadRequest{Path: e.rw + "/file.txt"})
	if fe := asErr(t, err); fe.Code != abi.Unavailable {
		t.Fatalf("after close: %v", *fe)
	}
}

func TestMissingRootOpensLater(t *testing.T) {
	base := t.TempDir()
	later := filepath.Join(base, "later")
	s, _ := New([]caps.Root{{Path: later, Writable: true}}, Options{})
	defer s.Close()
	_, err := s.Read(ctx, &ReadRequest{Path: later + "/f"})
	if fe := asErr(t, err); fe.Code != abi.NotFound {
		t.Fatalf("missing root: %v", *fe)
	}
	os.Mkdir(later, 0o755)
	os.WriteFile(later+"/f", []byte("ok"), 0o644)
	if b, err := s.Read(ctx, &ReadRequest{Path: later + "/f"}); err != nil || string(b) != "ok" {
		t.Fatalf("after creation: %q %v", b, err)
	}
}
