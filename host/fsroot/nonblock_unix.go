//go:build unix

package fsroot

import "syscall"

// oNonblock keeps opening a FIFO from blocking (it is refused after).
const oNonblock = syscall.O_NONBLOCK
