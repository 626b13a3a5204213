//go:build !linux || !(amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import (
	"errors"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero/api"
)

// memImage is a compiled module's data image (image.go), copied into each
// instance's memory here (memory_linux.go maps it copy-on-write).
type memImage struct {
	data []byte
	size int
}

// pageSize is the host's page size (snapshot pages are counted in it).
var pageSize = os.Getpagesize()

func newImage(b []byte) *memImage { return &memImage{data: b, size: len(b)} }

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

// mapped: never here (snapshots need a memfd).
func (img *memImage) mapped() bool { return false }

func newSparseImage([]byte, []pageRun) (*memImage, error) {
	return nil, errors.New("snapshots need a memfd")
}

func (s *memSlot) applySnapshot(*snapshot, api.Memory) error {
	return errors.New("snapshots need a memfd")
}
