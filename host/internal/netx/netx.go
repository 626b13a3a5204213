// Package netx holds the host's one loopback check: whether a host name
// (no port) is "localhost" or a loopback IP address.
package netx

import "net"

// Loopback reports whether host is "localhost" or a loopback IP address
// (127.0.0.0/8, ::1); brackets and ports are the caller's to strip.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
