//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import (
	"errors"
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

// mapped reports whether img is in a memfd (instances map it).
func (img *memImage) mapped() bool { return img != nil && img.fd >= 0 }

// newSparseImage puts the runs of cur in a sealed memfd of cur's size, each
// at its own offset (the rest is a hole: no memory), for a snapshot.
func newSparseImage(cur []byte, runs []pageRun) (*memImage, error) {
	fd, err := unix.MemfdCreate("aiod-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	if err := unix.Ftruncate(fd, int64(len(cur))); err != nil {
		return nil, fmt.Errorf("memfd size: %w", err)
	}
	for _, r := range runs {
		b := cur[r.Off : r.Off+r.N]
		for done := 0; done < len(b); {
			n, err := unix.Pwrite(fd, b[done:], int64(r.Off)+int64(done))
			if err != nil {
				return nil, fmt.Errorf("memfd write: %w", err)
			}
			done += n
		}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return nil, fmt.Errorf("memfd seal: %w", err)
	}
	data, err := unix.Mmap(fd, 0, len(cur), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("memfd map: %w", err)
	}
	ok = true
	return &memImage{size: len(cur), fd: fd, data: data}, nil
}

// applySnapshot gives a new instance's memory (no data image applied) its
// snapshot: memory grown to snap's size, the reference memory and then
// snap's own pages mapped copy-on-write over a reservation; copied into
// any other memory, or where the kernel refuses a mapping (a process has
// at most vm.max_map_count).
func (s *memSlot) applySnapshot(snap *snapshot, mem api.Memory) error {
	if mem == nil {
		return errors.New("no memory")
	}
	if cur := uint64(mem.Size()); snap.size > cur {
		if _, ok := mem.Grow(uint32((snap.size - cur) / 65536)); !ok {
			return fmt.Errorf("memory does not grow to the snapshot's %d bytes", snap.size)
		}
	}
	refEnd := min(uint64(snap.ref.size), snap.size) / uint64(pageSize) * uint64(pageSize)
	mapped := s != nil && s.m != nil && s.m.mapRuns(snap.ref, []pageRun{{Off: 0, N: refEnd}}) == nil
	if mapped && s.m.mapRuns(snap.image, snap.runs) == nil {
		return nil
	}
	if !mapped && !mem.Write(0, snap.ref.data[:refEnd]) {
		return errors.New("snapshot does not fit the memory")
	}
	for _, r := range snap.runs { // into the reference's mapping: no new one
		if !mem.Write(uint32(r.Off), snap.image.data[r.Off:r.Off+r.N]) {
			return errors.New("snapshot does not fit the memory")
		}
	}
	return nil
}

// mapRuns maps runs of img copy-on-write at their offsets in m.
func (m *mmapMemory) mapRuns(img *memImage, runs []pageRun) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	base := unsafe.Pointer(unsafe.SliceData(m.mapping))
	for _, r := range runs {
		if m.unmapped || r.Off+r.N > m.committed {
			return fmt.Errorf("snapshot pages at %d past the %d committed", r.Off+r.N, m.committed)
		}
		if r.N == 0 {
			continue
		}
		if _, err := unix.MmapPtr(img.fd, int64(r.Off), unsafe.Add(base, r.Off), uintptr(r.N), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_FIXED); err != nil {
			return fmt.Errorf("map the snapshot: %w", err)
		}
		m.imaged = max(m.imaged, r.Off+r.N)
	}
	return nil
}
