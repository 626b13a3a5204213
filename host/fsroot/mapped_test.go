package fsroot_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/fsroot"
)

func TestNewMapped(t *testing.T) {
	host := t.TempDir()
	for _, d := range []string{"alice/ws/sub", "alice/tmp", "bob/ws"} {
		if err := os.MkdirAll(filepath.Join(host, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(host, "bob/ws/secret"), []byte("bob"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../bob/ws", filepath.Join(host, "alice/ws/tobob")); err != nil {
		t.Fatal(err)
	}
	roots := []caps.Root{{Path: "/workspace", Writable: true}, {Path: "/tmp", Writable: true}, {Path: "/etc"}, {Path: "/workspace/sub"}}
	s, err := fsroot.NewMapped(roots, map[string]string{"/workspace": filepath.Join(host, "alice/ws"), "/tmp": filepath.Join(host, "alice/tmp")}, fsroot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if got := len(s.Roots()); got != 3 {
		t.Errorf("roots %v: /etc, outside the mapped directories, must be left out", s.Roots())
	}
	if _, err := s.Write(ctx, &fsroot.WriteRequest{Path: "/workspace/a.txt"}, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(host, "alice/ws/a.txt")); err != nil || string(b) != "hi" {
		t.Errorf("on the host: %q %v", b, err)
	}
	l, err := s.List(ctx, &fsroot.ListRequest{Path: "/workspace"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entries {
		if filepath.Dir(e.Path) != "/workspace" {
			t.Errorf("entry path %s: want the plugin's path", e.Path)
		}
	}
	for _, p := range []string{"/etc/passwd", "/workspace/tobob/secret", "/workspace/../../bob/ws/secret", filepath.Join(host, "bob/ws/secret"), "/tmp/../workspace/../../bob/ws/secret"} {
		if b, err := s.Read(ctx, &fsroot.ReadRequest{Path: p}); err == nil {
			t.Errorf("read %s: %q, want a denial", p, b)
		}
	}
	if _, err := s.Write(ctx, &fsroot.WriteRequest{Path: "/workspace/sub/x"}, []byte("x")); err == nil {
		t.Error("write in the read-only /workspace/sub root")
	}
}
