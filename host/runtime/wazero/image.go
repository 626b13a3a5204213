package wazero

import (
	"errors"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// The data image: a module's data segments applied once, at compile time,
// into the bytes its linear memory starts with, and the module compiled
// without its data section. Each instance then starts from the image
// instead of wazero copying the segments in: on Linux the image is a
// sealed memfd mapped copy-on-write over the start of the instance's
// memory (memory_linux.go), so the pages the guest only reads (for a
// standard-Go guest, most of its 1.7 MB: rodata, pclntab) are neither
// copied nor faulted in one by one, and are shared by the instances.
// wasmtime does the same by default ("copy-on-write memory images").
//
// Invisible to the guest because: the image is what memory holds after
// wazero applies the same segments (in order, later ones over earlier
// ones) to a zeroed memory; the image only covers the module's initial
// memory (a segment past it refuses the module as before: the section is
// then left in place); and a module with a data count section (memory.init
// and data.drop name segments), a start section (wazero runs it inside the
// instantiation, before the image could be in), a passive segment, an
// imported memory or more than one is left alone.

var errNoImage = errors.New("no data image")

// maxImage bounds an image: the segments' extent, not their bytes, sets
// its size, so a module with one byte at a high offset would otherwise
// make the host allocate gigabytes (splitImage runs before wazero checks
// the module against the grant's memory limit). A standard-Go guest's is
// 1.7 MB.
const maxImage = 64 << 20

// splitImage returns wasm without its data section and the image of its
// segments, or errNoImage.
func splitImage(wasm []byte) (stripped, image []byte, err error) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, nil, errNoImage
	}
	var data *wasmbin.Section
	var minPages uint64
	memories := 0
	for i, s := range secs {
		r := s.Reader(wasm)
		switch s.ID {
		case wasmbin.SecImport: // an imported memory is not ours to fill
			if importsMemory(&r) {
				return nil, nil, errNoImage
			}
		case wasmbin.SecMemory:
			n, err := r.U32()
			if err != nil || n != 1 {
				return nil, nil, errNoImage
			}
			l, err := r.Limits()
			if err != nil || l.Flags&^1 != 0 { // shared or 64-bit memories: left alone
				return nil, nil, errNoImage
			}
			minPages, memories = l.Min, 1
		case wasmbin.SecStart, wasmbin.SecDataCount: // a start function would run before the image is in
			return nil, nil, errNoImage
		case wasmbin.SecData:
			data = &secs[i]
		}
	}
	if data == nil || memories != 1 {
		return nil, nil, errNoImage
	}
	segs, err := decodeData(wasm, *data)
	if err != nil || len(segs) == 0 {
		return nil, nil, errNoImage
	}
	size := uint64(0)
	for _, s := range segs {
		size = max(size, uint64(s.off)+uint64(len(s.data)))
	}
	if minPages > 65536 || size > minPages*65536 {
		return nil, nil, errNoImage // wazero refuses it at instantiation, as before
	}
	if size > maxImage {
		return nil, nil, errNoImage // not allocated on the host for a module not yet checked
	}
	image = make([]byte, size)
	for _, s := range segs {
		copy(image[s.off:], s.data)
	}
	stripped = make([]byte, 0, len(wasm)-(data.End-data.Off))
	stripped = append(append(stripped, wasm[:data.Off]...), wasm[data.End:]...)
	return stripped, image, nil
}

// importsMemory reports whether an import section imports a memory (or
// cannot be read: then it is taken to).
func importsMemory(r *wasmbin.Reader) bool {
	n, err := r.U32()
	if err != nil {
		return true
	}
	for range n {
		imp, err := r.Import()
		if err != nil || imp.Kind == wasmbin.KindMemory {
			return true
		}
	}
	return false
}
