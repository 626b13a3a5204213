package server

import (
	"net"
	"os"
	"syscall"
)

// acceptQueued accepts, without waiting, every connection queued on the
// listening socket fd.
func acceptQueued(fd int) (out []net.Conn) {
	for {
		nfd, _, err := syscall.Accept4(fd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err == syscall.EINTR || err == syscall.ECONNABORTED {
			continue
		}
		if err != nil { // EAGAIN: the queue is empty
			return out
		}
		f := os.NewFile(uintptr(nfd), "tcp")
		c, err := net.FileConn(f)
		f.Close()
		if err == nil {
			out = append(out, c)
		}
	}
}
