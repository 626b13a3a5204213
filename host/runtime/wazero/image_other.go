//go:build !linux || !(amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// memImage is a compiled module's data image (image.go), copied into each
// instance's memory here (memory_linux.go maps it copy-on-write).
type memImage struct{ data []byte }

func newImage(b []byte) *memImage { return &memImage{data: b} }

func (img *memImage) close() {}

func (s *memSlot) apply(img *memImage, mem api.Memory) error {
	if img == nil {
		return nil
	}
	if mem == nil || !mem.Write(0, img.data) {
		return fmt.Errorf("data image of %d bytes does not fit the memory", len(img.data))
	}
	return nil
}
