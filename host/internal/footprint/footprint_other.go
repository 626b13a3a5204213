//go:build !linux

package footprint

// DropExecutablePages is Linux-only (footprint_linux.go).
func DropExecutablePages() int64 { return 0 }
