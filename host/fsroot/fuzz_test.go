package fsroot

import (
	"github.com/aiodhq/aiod/host/internal/pathx"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

// FuzzResolve checks path resolution two ways:
//
//   - lexically, on a fixed set of nested roots: a resolved path is the
//     cleaned input, lies in the root returned, and that root is the
//     longest containing one; a refused absolute path lies in no root;
//   - on a real tree whose root holds links leading out: whatever the
//     path, read, stat, list and write never reach the outside tree.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"file.txt", "../outside/secret.txt", "dirlink/secret.txt", "absdir/secret.txt",
		"okdir/../dirlink/secret.txt", "abs", "rel", "absin", "sub/../../outside/secret.txt",
		"./sub//inner.txt", "sub/./../okrel", "..", "/", "", "dirlink", "okdir/inner.txt",
		"sub/../../rw/../outside", "rw", "../rwx/secret.txt", "\x00",
	} {
		f.Add(s)
	}
	lex, err := New([]caps.Root{{Path: "/a/b", Writable: true}, {Path: "/a/b/c"}, {Path: "/x"}, {Path: "/a/bc"}}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, s string) {
		// Lexical.
		for _, p := range []string{s, "/a/b/" + s, "/x/" + s} {
			root, rel, err := lex.Resolve(p)
			if err != nil {
				if filepath.IsAbs(p) && !strings.Contains(p, "\x00") {
					for _, r := range lex.Roots() {
						if pathx.Within(filepath.Clean(p), r.Path) {
							t.Fatalf("%q refused but lies in %s", p, r.Path)
						}
					}
				}
				continue
			}
			if rel == "" || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || (rel != "." && filepath.Clean(rel) != rel) {
				t.Fatalf("%q: bad rel %q", p, rel)
			}
			if got := filepath.Join(root, rel); got != filepath.Clean(p) || !pathx.Within(got, root) {
				t.Fatalf("%q: %s + %s = %s", p, root, rel, got)
			}
			for _, r := range lex.Roots() {
				if len(r.Path) > len(root) && pathx.Within(filepath.Clean(p), r.Path) {
					t.Fatalf("%q: resolved to %s, not the longer %s", p, root, r.Path)
				}
			}
		}
		// On the real tree: whatever succeeds must have touched a file
		// whose real path (links followed) is in the root.
		p := e.rw + "/" + s
		inside := func(op string) {
			real, err := filepath.EvalSymlinks(filepath.Clean(p))
			if err == nil && !pathx.Within(real, e.rw) {
				t.Fatalf("%s %q succeeded on %s, outside the root", op, p, real)
			}
		}
		if b, err := e.set.Read(ctx, &ReadRequest{Path: p}); err == nil {
			inside("read")
			if strings.Contains(string(b), secret) {
				t.Fatalf("read %q leaked the secret", p)
			}
		}
		if _, err := e.set.Stat(ctx, &StatRequest{Path: p}); err == nil {
			inside("stat")
		}
		if _, err := e.set.List(ctx, &ListRequest{Path: p}); err == nil {
			inside("list")
		}
		if _, err := e.set.Write(ctx, &WriteRequest{Path: p, Append: true}, []byte("pwned")); err == nil {
			inside("write")
		}
		e.checkOutside(t)
	})
}
