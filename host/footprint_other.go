//go:build !linux

package host

// dropExecutablePages is Linux-only (footprint_linux.go).
func dropExecutablePages() int64 { return 0 }
