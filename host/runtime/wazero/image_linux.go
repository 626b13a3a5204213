//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
	"golang.org/x/sys/unix"
)

// memImage is a compiled module's data image (image.go) in a sealed memfd,
// mapped copy-on-write at the start of each instance's memory; data is a
// read-only shared mapping of it, for a memory that is not a reservation.
type memImage struct {
	size int // the image's bytes; the mapping covers it rounded up to a page
	fd   int
	data []byte
	once sync.Once
}

// newImage puts b in a sealed memfd. On failure (no memfd here) it keeps b
// itself: instances then get a copy.
func newImage(b []byte) *memImage {
	img := &memImage{size: len(b), fd: -1, data: b}
	fd, err := unix.MemfdCreate("aiod-data-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return img
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if err != nil {
			return img
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return img
	}
	data, err := unix.Mmap(fd, 0, len(b), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return img
	}
	ok = true
	img.fd, img.data = fd, data
	return img
}

// close releases the memfd. The instances that mapped it keep their
// mappings (a mapping holds the file).
func (img *memImage) close() {
	if img == nil {
		return
	}
	img.once.Do(func() {
		if img.fd >= 0 {
			unix.Munmap(img.data)
			unix.Close(img.fd)
		}
		img.data = nil
	})
}

// apply gives a new instance's memory the image: mapped over a
// reservation, copied into any other memory.
func (s *memSlot) apply(img *memImage, mem api.Memory) error {
	if img == nil {
		return nil
	}
	if s != nil && s.m != nil && img.fd >= 0 {
		return s.m.mapImage(img)
	}
	if mem == nil || !mem.Write(0, img.data) {
		return fmt.Errorf("data image of %d bytes does not fit the memory", img.size)
	}
	return nil
}

// mapImage maps img copy-on-write over the start of m, which wazero has
// just committed to at least the module's initial size (the image fits it:
// splitImage). The pages it covers are file-backed from here on: the
// zero-page release skips them (MADV_DONTNEED there would bring back the
// image's bytes, not zeros).
func (m *mmapMemory) mapImage(img *memImage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := roundUp(uint64(img.size), uint64(pageSize))
	if m.unmapped || n > m.committed {
		return fmt.Errorf("data image of %d bytes past the %d committed", img.size, m.committed)
	}
	addr := unsafe.Pointer(unsafe.SliceData(m.mapping))
	if _, err := unix.MmapPtr(img.fd, 0, addr, uintptr(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_FIXED); err != nil {
		return fmt.Errorf("map the data image: %w", err)
	}
	m.imaged = n
	return nil
}
