//go:build cgo && linux

package wasmtime

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// canMap: memfds and MAP_FIXED over a memory's pages are available.
const canMap = true

// memfdImage is a snapshot's changed pages at their offsets in a sealed
// memfd (sparse: only the runs are written).
type memfdImage struct{ fd int }

func newMemfdImage(cur []byte, runs []pageRun) (*memfdImage, error) {
	fd, err := unix.MemfdCreate("aiod-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	img := &memfdImage{fd: fd}
	if err := unix.Ftruncate(fd, int64(len(cur))); err != nil {
		img.close()
		return nil, fmt.Errorf("memfd: %w", err)
	}
	for _, r := range runs {
		for off := r.Off; off < r.Off+r.N; {
			n, err := unix.Pwrite(fd, cur[off:r.Off+r.N], int64(off))
			if err != nil {
				img.close()
				return nil, fmt.Errorf("memfd: %w", err)
			}
			off += uint64(n)
		}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		img.close()
		return nil, fmt.Errorf("memfd seal: %w", err)
	}
	return img, nil
}

// mapOver maps each run of the image copy-on-write over mem's pages at the
// same offsets (mem is a wasmtime linear memory of the on-demand
// allocator: its own mapping, unmapped whole when its store is dropped).
func (img *memfdImage) mapOver(mem []byte, runs []pageRun) error {
	if len(mem) == 0 {
		return nil
	}
	base := unsafe.Pointer(unsafe.SliceData(mem))
	for _, r := range runs {
		_, err := unix.MmapPtr(img.fd, int64(r.Off), unsafe.Add(base, r.Off), uintptr(r.N),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
		if err != nil {
			return fmt.Errorf("map snapshot pages: %w", err)
		}
	}
	return nil
}

func (img *memfdImage) close() {
	if img.fd >= 0 {
		unix.Close(img.fd)
		img.fd = -1
	}
}
