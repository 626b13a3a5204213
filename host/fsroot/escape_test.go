package fsroot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// op runs one operation on path p and returns its error and what it read.
type op struct {
	name string
	run  func(e *env, p string) ([]byte, error)
}

var allOps = []op{
	{"read", func(e *env, p string) ([]byte, error) { return e.set.Read(ctx, &ReadRequest{Path: p}) }},
	{"read lines", func(e *env, p string) ([]byte, error) {
		return e.set.Read(ctx, &ReadRequest{Path: p, StartLine: i64(0)})
	}},
	{"write", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Write(ctx, &WriteRequest{Path: p}, []byte("pwned"))
		return nil, err
	}},
	{"append", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Write(ctx, &WriteRequest{Path: p, Append: true}, []byte("pwned"))
		return nil, err
	}},
	{"stat", func(e *env, p string) ([]byte, error) {
		i, err := e.set.Stat(ctx, &StatRequest{Path: p})
		if i != nil {
			return []byte(i.Name), err
		}
		return nil, err
	}},
	{"exists", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Exists(ctx, &ExistsRequest{Path: p})
		return nil, err
	}},
	{"list", func(e *env, p string) ([]byte, error) {
		r, err := e.set.List(ctx, &ListRequest{Path: p})
		if r != nil {
			return []byte(names(r.Entries)), err
		}
		return nil, err
	}},
	{"walk", func(e *env, p string) ([]byte, error) {
		r, err := e.set.Walk(ctx, &WalkRequest{Path: p})
		if r != nil {
			return []byte(names(r.Entries)), err
		}
		return nil, err
	}},
	{"mkdir", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Mkdir(ctx, &MkdirRequest{Path: p + "/newdir"})
		return nil, err
	}},
	{"mkdir parents", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Mkdir(ctx, &MkdirRequest{Path: p + "/x/y", Parents: true})
		return nil, err
	}},
	{"write below", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Write(ctx, &WriteRequest{Path: p + "/x/new.txt"}, []byte("pwned"))
		return nil, err
	}},
	{"remove", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Remove(ctx, &RemoveRequest{Path: p + "/secret.txt"})
		return nil, err
	}},
	{"remove recursive", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Remove(ctx, &RemoveRequest{Path: p + "/secret.txt", Recursive: true})
		return nil, err
	}},
	{"rename from", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Rename(ctx, &RenameRequest{Path: p + "/secret.txt", Target: e.rw + "/stolen"})
		return nil, err
	}},
	{"rename to", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/sub/inner.txt", Target: p + "/planted", Overwrite: true})
		return nil, err
	}},
	{"rename over", func(e *env, p string) ([]byte, error) {
		_, err := e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/sub/inner.txt", Target: p + "/secret.txt", Overwrite: true})
		return nil, err
	}},
}

func names(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Name + " ")
	}
	return b.String()
}

// TestEscapes runs every operation on every escaping path: each must be
// denied, return nothing of the outside tree, and leave it unchanged.
func TestEscapes(t *testing.T) {
	paths := []struct {
		name string
		path func(e *env) string
		// why is a substring of the denial message.
		why string
	}{
		{"dotdot", func(e *env) string { return e.rw + "/../outside" }, "outside the plugin's granted roots"},
		{"dotdot deep", func(e *env) string { return e.rw + "/sub/../../outside" }, "outside the plugin's granted roots"},
		{"outside absolute", func(e *env) string { return e.out }, "outside the plugin's granted roots"},
		{"root prefix sibling", func(e *env) string { return e.rw + "x" }, "outside the plugin's granted roots"},
		{"relative symlinked dir", func(e *env) string { return e.rw + "/dirlink" }, "escapes the plugin's granted root through a symbolic link"},
		{"absolute symlinked dir", func(e *env) string { return e.rw + "/absdir" }, "escapes the plugin's granted root through a symbolic link"},
		{"inside link to outside dir", func(e *env) string { return e.rw + "/okdir/../dirlink" }, "escapes the plugin's granted root through a symbolic link"},
	}
	for _, pc := range paths {
		for _, o := range allOps {
			t.Run(pc.name+"/"+o.name, func(t *testing.T) {
				e := newEnv(t)
				os.Mkdir(filepath.Join(e.base, "rwx"), 0o755) // for "root prefix sibling"
				os.WriteFile(filepath.Join(e.base, "rwx", "secret.txt"), []byte(secret), 0o644)
				p := pc.path(e)
				got, err := o.run(e, p)
				if err == nil {
					t.Fatalf("%s %s: no error", o.name, p)
				}
				fe := asErr(t, err)
				if fe.Code != abi.Denied || fe.ErrorType != abi.FilesPermissionDenied || fe.Errno != 13 || fe.ErrnoName != "EACCES" || fe.ExceptionType != "PermissionError" {
					t.Fatalf("%s %s: not a denial: %v", o.name, p, *fe)
				}
				if !strings.Contains(fe.Message, pc.why) {
					t.Fatalf("message %q lacks %q", fe.Message, pc.why)
				}
				if strings.Contains(string(got), secret) || strings.Contains(string(got), "secret.txt") {
					t.Fatalf("leaked %q", got)
				}
				e.checkOutside(t)
				if b, _ := os.ReadFile(filepath.Join(e.base, "rwx", "secret.txt")); string(b) != secret {
					t.Fatal("sibling changed")
				}
			})
		}
	}
}

// TestEscapingFileLinks: a link to an outside file, absolute or relative,
// is denied for every operation that follows it; operations on the link
// itself (lstat, remove, rename) act on the link only.
func TestEscapingFileLinks(t *testing.T) {
	follow := []op{allOps[0], allOps[1], allOps[2], allOps[3], allOps[4], allOps[5], allOps[6], allOps[7]}
	for _, link := range []string{"abs", "rel", "absin"} {
		for _, o := range follow {
			t.Run(link+"/"+o.name, func(t *testing.T) {
				e := newEnv(t)
				got, err := o.run(e, e.rw+"/"+link)
				if fe := asErr(t, err); fe.Code != abi.Denied || fe.ErrorType != abi.FilesPermissionDenied {
					t.Fatalf("not denied: %v", *fe)
				}
				if strings.Contains(string(got), secret) {
					t.Fatal("leaked")
				}
				e.checkOutside(t)
			})
		}
	}
	e := newEnv(t)
	if _, err := e.set.Stat(ctx, &StatRequest{Path: e.rw + "/abs", Lstat: true}); err != nil {
		t.Fatal("lstat of link:", err)
	}
	if _, err := e.set.Rename(ctx, &RenameRequest{Path: e.rw + "/abs", Target: e.rw + "/abs2"}); err != nil {
		t.Fatal("rename of link:", err)
	}
	if _, err := e.set.Remove(ctx, &RemoveRequest{Path: e.rw + "/abs2"}); err != nil {
		t.Fatal("remove of link:", err)
	}
	if _, err := e.set.Remove(ctx, &RemoveRequest{Path: e.rw + "/dirlink", Recursive: true}); err != nil {
		t.Fatal("recursive remove of dir link:", err)
	}
	e.checkOutside(t)
	// The walk lists links without following them.
	r, err := e.set.Walk(ctx, &WalkRequest{Path: e.rw})
	if err != nil || strings.Contains(names(r.Entries), "secret.txt") {
		t.Fatalf("walk followed a link: %v %v", names(r.Entries), err)
	}
}

// TestLinksCreatedAtRunTime: links made after the Set was opened and used
// (as a shell tool would between calls) are refused too.
func TestLinksCreatedAtRunTime(t *testing.T) {
	for _, o := range allOps {
		t.Run(o.name, func(t *testing.T) {
			e := newEnv(t)
			d := filepath.Join(e.rw, "work")
			os.Mkdir(d, 0o755)
			os.WriteFile(filepath.Join(d, "secret.txt"), []byte("mine"), 0o644)
			o.run(e, d) // use the Set first (read/write of a directory fail: fine)
			// Swap the directory for a link out, relative then absolute.
			for _, target := range []string{"../outside", e.out} {
				os.RemoveAll(d)
				os.WriteFile(filepath.Join(e.rw, "sub", "inner.txt"), []byte("inner"), 0o644)
				if err := os.Symlink(target, d); err != nil {
					t.Fatal(err)
				}
				got, err := o.run(e, d)
				if fe := asErr(t, err); fe.Code != abi.Denied {
					t.Fatalf("after swap to %s: %v", target, *fe)
				}
				if strings.Contains(string(got), secret) || strings.Contains(string(got), "secret.txt") {
					t.Fatal("leaked")
				}
				e.checkOutside(t)
			}
		})
	}
}

// TestParentSwappedForLink: a parent directory replaced by a link to the
// outside between calls.
func TestParentSwappedForLink(t *testing.T) {
	e := newEnv(t)
	d := filepath.Join(e.rw, "p")
	os.MkdirAll(filepath.Join(d, "q"), 0o755)
	os.WriteFile(filepath.Join(d, "q", "secret.txt"), []byte("mine"), 0o644)
	if b, err := e.set.Read(ctx, &ReadRequest{Path: d + "/q/secret.txt"}); err != nil || string(b) != "mine" {
		t.Fatal(string(b), err)
	}
	os.RemoveAll(d)
	os.Mkdir(d, 0o755)
	os.Symlink(e.base, filepath.Join(d, "q")) // p/q -> base; p/q/outside/secret.txt
	_, err := e.set.Read(ctx, &ReadRequest{Path: d + "/q/outside/secret.txt"})
	if fe := asErr(t, err); fe.Code != abi.Denied {
		t.Fatalf("got %v", *fe)
	}
}
