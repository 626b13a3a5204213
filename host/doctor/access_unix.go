//go:build unix

package doctor

import "syscall"

// writable reports whether this process may create entries in dir.
func writable(dir string) bool { return syscall.Access(dir, 0x2 /* W_OK */) == nil }
