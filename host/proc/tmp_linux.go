//go:build linux

package proc

import (
	"os"
	"sync"
	"syscall"
)

// memDir is where session directories go when neither Config.TempDir nor
// $TMPDIR says: /dev/shm when it is a writable tmpfs, else os.TempDir().
//
// A session rewrites a few small files for every command (its saved
// variables, functions and options). On a disk file system that frees
// blocks with a discard (ext4 mounted -o discard, as on this kind of
// VM), truncating one took about 4 ms: ten of them per command were most
// of an `echo hi`'s latency. In memory each is a few microseconds.
var memDir = sync.OnceValue(pickMemDir)

func pickMemDir() string {
	if os.Getenv("TMPDIR") != "" {
		return os.TempDir()
	}
	const tmpfsMagic = 0x01021994
	var st syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &st) == nil && st.Type == tmpfsMagic && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// mkfifo makes a named pipe only its owner may open.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
