//go:build !linux

package proc

import (
	"os"
	"syscall"
)

// memDir is os.TempDir() where no memory file system is known.
func memDir() string { return os.TempDir() }

// mkfifo makes a named pipe only its owner may open.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
