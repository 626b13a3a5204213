//go:build !unix

package doctor

// writable: cgroups exist on Linux only.
func writable(string) bool { return false }
