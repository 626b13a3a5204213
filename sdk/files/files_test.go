//go:build !wasip1

package files_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/files"
	"github.com/aiodhq/aiod/sdk/sdktest"
)

// setup grants base/rw (read-write) and base/ro (read-only).
func setup(t *testing.T) (rw, ro, out string) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rw, ro, out = base+"/rw", base+"/ro", base+"/outside"
	for _, d := range []string{rw, ro, out} {
		os.Mkdir(d, 0o755)
	}
	os.WriteFile(ro+"/ro.txt", []byte("read only"), 0o644)
	os.WriteFile(out+"/secret.txt", []byte("SECRET"), 0o644)
	os.Symlink("../outside", rw+"/dirlink")
	sdktest.New(t, sdktest.WithFiles(sdktest.FilePath{Path: rw}, sdktest.FilePath{Path: ro, ReadOnly: true}))
	return rw, ro, out
}

func TestReadWrite(t *testing.T) {
	rw, ro, _ := setup(t)
	data := []byte{0, 1, 2, 0xff, '\n', 'a', '\n', 'b'}
	p := rw + "/d/e/bin"
	n, err := files.Write(p, data, nil)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("write %d %v", n, err)
	}
	for _, tc := range []struct {
		opts *files.ReadOptions
		want []byte
	}{
		{nil, data},
		{&files.ReadOptions{StartLine: files.Line(1)}, []byte("a\nb")},
		{&files.ReadOptions{StartLine: files.Line(1), EndLine: files.Line(2)}, []byte("a\n")},
		{&files.ReadOptions{Offset: 3, Length: 2}, []byte{0xff, '\n'}},
		{&files.ReadOptions{Offset: 100}, []byte{}},
	} {
		got, err := files.Read(p, tc.opts)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("read %+v: %q %v", tc.opts, got, err)
		}
	}
	if _, err := files.Write(p, []byte("!"), &files.WriteOptions{Append: true, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, append(data, '!')) {
		t.Fatalf("append: %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	_, err = files.Write(p, nil, &files.WriteOptions{Exclusive: true})
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive: %v", err)
	}
	_, err = files.Read(p, &files.ReadOptions{MaxBytes: 4})
	var fe *files.Error
	if !errors.As(err, &fe) || fe.Code != "too_large" || fe.Message != "file exceeds the 4 bytes buffered text limit" {
		t.Fatalf("too large: %#v", err)
	}
	_, err = files.Write(ro+"/ro.txt", []byte("x"), nil)
	if !errors.As(err, &fe) || fe.Code != "denied" || !errors.Is(err, fs.ErrPermission) || !strings.Contains(fe.Message, "read-only root") {
		t.Fatalf("ro: %#v", err)
	}
}

func TestMissingFileErrorPassesThrough(t *testing.T) {
	rw, _, _ := setup(t)
	p := rw + "/agent-missing.txt"
	_, err := files.Read(p, nil)
	var fe *files.Error
	if !errors.As(err, &fe) {
		t.Fatalf("%T %v", err, err)
	}
	if fe.Code != "not_found" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%#v", fe)
	}
	b, _ := json.Marshal(fe)
	want := `{"errno":2,"errno_name":"ENOENT","error_type":"not_found","exception_type":"FileNotFoundError",` +
		`"message":"Failed to read file: No such file or directory (os error 2)","operation":"read","path":"` + p + `","retryable":false}`
	if string(b) != want {
		t.Fatalf("\n got %s\nwant %s", b, want)
	}
	// As a field of a tool's result, by value too.
	b, _ = json.Marshal(struct {
		Error files.Error `json:"error"`
	}{*fe})
	if string(b) != `{"error":`+want+`}` {
		t.Fatalf("by value: %s", b)
	}
	// An error without an errno keeps aiod's nulls.
	b, _ = json.Marshal(&files.Error{ErrorType: "other", Message: "m", Operation: "read", Path: "/p"})
	if string(b) != `{"errno":null,"errno_name":null,"error_type":"other","exception_type":"","message":"m","operation":"read","path":"/p","retryable":false}` {
		t.Fatalf("nulls: %s", b)
	}
}

func TestMetadataAndTree(t *testing.T) {
	rw, _, out := setup(t)
	files.Write(rw+"/a/f.txt", []byte("12345"), nil)
	info, err := files.Stat(rw + "/a/f.txt")
	if err != nil || info.Name != "f.txt" || info.Size != 5 || !info.IsFile || info.ModifiedTime.IsZero() || info.ModeString != "-rw-r--r--" {
		t.Fatalf("stat %+v %v", info, err)
	}
	info, err = files.Lstat(rw + "/dirlink")
	if err != nil || !info.IsSymlink || info.SymlinkTarget != "../outside" {
		t.Fatalf("lstat %+v %v", info, err)
	}
	if _, err := files.Stat(rw + "/dirlink/secret.txt"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("escape: %v", err)
	}
	if ok, err := files.Exists(rw + "/a"); !ok || err != nil {
		t.Fatal("exists", err)
	}
	if ok, err := files.Exists(rw + "/zz"); ok || err != nil {
		t.Fatal("not exists", err)
	}
	if _, err := files.Exists("/etc"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("exists outside: %v", err)
	}
	if created, err := files.Mkdir(rw+"/a/b/c", &files.MkdirOptions{Parents: true}); !created || err != nil {
		t.Fatal("mkdir", err)
	}
	if created, err := files.Mkdir(rw+"/a/b/c", &files.MkdirOptions{Parents: true}); created || err != nil {
		t.Fatal("mkdir again", err)
	}
	l, err := files.List(rw, nil)
	if err != nil || len(l.Entries) != 2 || l.Entries[0].Name != "a" || !l.Entries[0].IsDirectory || !l.Entries[1].IsSymlink || l.TotalCount != 2 {
		t.Fatalf("list %+v %v", l, err)
	}
	l, err = files.List(rw, &files.ListOptions{MaxEntries: 1})
	if err != nil || len(l.Entries) != 1 || !l.Truncated {
		t.Fatalf("list max %+v %v", l, err)
	}
	w, err := files.Walk(rw, &files.WalkOptions{MaxDepth: 2})
	var paths []string
	for _, e := range w.Entries {
		paths = append(paths, strings.TrimPrefix(e.Path, rw+"/"))
	}
	if err != nil || !reflect.DeepEqual(paths, []string{"a", "a/b", "a/f.txt", "dirlink"}) || !w.DepthLimited || w.Truncated || len(w.Errors) != 0 {
		t.Fatalf("walk %v %+v %v", paths, w, err)
	}
	if err := files.Rename(rw+"/a/f.txt", rw+"/a/b/g.txt", nil); err != nil {
		t.Fatal(err)
	}
	files.Write(rw+"/h.txt", nil, nil)
	if err := files.Rename(rw+"/h.txt", rw+"/a/b/g.txt", nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("rename onto: %v", err)
	}
	if err := files.Rename(rw+"/h.txt", rw+"/a/b/g.txt", &files.RenameOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if err := files.Remove(rw+"/a", nil); err == nil {
		t.Fatal("removed a non-empty dir")
	}
	if err := files.Remove(rw+"/a", &files.RemoveOptions{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := files.Remove(rw+"/a", nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("remove missing: %v", err)
	}
	if err := files.Remove(rw+"/dirlink/secret.txt", nil); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("remove through link: %v", err)
	}
	if b, _ := os.ReadFile(out + "/secret.txt"); string(b) != "SECRET" {
		t.Fatal("outside changed")
	}
}
