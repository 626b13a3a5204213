//go:build !linux || !(amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import "context"

// Elsewhere than 64-bit Linux wazero's default linear memory (a Go slice
// grown by reallocation) is used: see memory_linux.go.

type memSlot struct{}

func withMemory(ctx context.Context) (context.Context, *memSlot) { return ctx, nil }

func (*memSlot) instantiated(failed bool) {}
func (*memSlot) hold()                    {}
func (*memSlot) release()                 {}
func (*memSlot) dropZeroPages() int       { return 0 }
