//go:build linux

package proc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMemDir: session directories go to /dev/shm when it is a writable
// tmpfs and neither TMPDIR nor Config.TempDir says otherwise.
func TestMemDir(t *testing.T) {
	var st syscall.Statfs_t
	shm := syscall.Statfs("/dev/shm", &st) == nil && st.Type == 0x01021994 && syscall.Access("/dev/shm", 2) == nil
	t.Setenv("TMPDIR", "")
	want := os.TempDir()
	if shm {
		want = "/dev/shm"
	}
	if got := pickMemDir(); got != want {
		t.Errorf("without TMPDIR: %s, want %s", got, want)
	}
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	if got := pickMemDir(); got != dir {
		t.Errorf("TMPDIR=%s: %s", dir, got)
	}
	if got := (&Manager{cfg: Config{TempDir: "/x"}}).tempDir(); got != "/x" {
		t.Errorf("Config.TempDir /x: %s", got)
	}
	if !shm {
		return
	}
	// a session's directory is there
	t.Setenv("TMPDIR", "")
	m := newManager(t, Config{})
	if res := exec1(t, m, Key{Session: "shm"}, `echo "$__aiod_d"`, "", 10e9); !strings.HasPrefix(string(res.Output), memDir()+"/aiod-shell-") {
		t.Errorf("session directory %q, want one in %s", res.Output, filepath.Clean(memDir()))
	}
}
