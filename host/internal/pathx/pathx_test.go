package pathx_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/internal/pathx"
)

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, root string
		want    bool
	}{
		// the root itself and its children
		{"/srv", "/srv", true},
		{"/srv/a", "/srv", true},
		{"/srv/a/b", "/srv", true},
		// a shared prefix is not a child
		{"/tmpfoo", "/tmp", false},
		{"/tmp-x/a", "/tmp", false},
		{"/sr", "/srv", false},
		// parents and siblings
		{"/", "/srv", false},
		{"/srv", "/srv/a", false},
		{"/srv/b", "/srv/a", false},
		// trailing slashes do not matter
		{"/srv/", "/srv", true},
		{"/srv", "/srv/", true},
		{"/srv/a/", "/srv/", true},
		{"/srvx/", "/srv/", false},
		// ".." and "." are resolved lexically before comparing
		{"/srv/..", "/srv", false},
		{"/srv/../etc", "/srv", false},
		{"/srv/../srvx", "/srv", false},
		{"/srv/a/../b", "/srv", true},
		{"/srv/a/..", "/srv", true},
		{"/srv/./a", "/srv", true},
		{"/srv/a", "/srv/b/..", true},
		{"/etc", "/srv/../etc", true},
		{"/../srv", "/srv", true}, // ".." at the file system root stays there
		{"//srv//a", "/srv", true},
		// the file system root holds every absolute path
		{"/", "/", true},
		{"/anything", "/", true},
		{"/a/b/c", "//", true},
		{"/..", "/", true},
		// relative paths are never within anything, nor hold anything
		{"relative", "/", false},
		{"srv/a", "srv", false},
		{"./srv", "/srv", false},
		{"../srv", "/srv", false},
		{"", "/", false},
		{"/srv", "", false},
		{"/srv/a", "srv", false},
		{"", "", false},
	} {
		if got := pathx.Within(tc.p, tc.root); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.p, tc.root, got, tc.want)
		}
	}
}

// FuzzWithin checks Within against filepath.Rel on absolute paths.
func FuzzWithin(f *testing.F) {
	for _, s := range [][2]string{{"/srv/a", "/srv"}, {"/tmpfoo", "/tmp"}, {"/", "/"}, {"/a/../b", "/b/"}, {"rel", "/"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p, root string) {
		got := pathx.Within(p, root)
		if !filepath.IsAbs(p) || !filepath.IsAbs(root) {
			if got {
				t.Fatalf("Within(%q, %q) = true for a relative path", p, root)
			}
			return
		}
		rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(p))
		want := err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
		if got != want {
			t.Fatalf("Within(%q, %q) = %v, want %v (Rel %q, %v)", p, root, got, want, rel, err)
		}
	})
}
