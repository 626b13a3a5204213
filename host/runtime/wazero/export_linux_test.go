//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

// SetMemoryMode switches the mapping and the zero-page release for a
// benchmark and returns the function restoring them.
func SetMemoryMode(mapping, drop bool) (restore func()) {
	m, d := useMapping, dropZero
	useMapping, dropZero = mapping, drop
	return func() { useMapping, dropZero = m, d }
}
