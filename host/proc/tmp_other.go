//go:build !linux

package proc

import "os"

// memDir is os.TempDir() where no memory file system is known.
func memDir() string { return os.TempDir() }
