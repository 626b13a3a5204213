package wazero

import (
	"encoding/binary"
	"errors"
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
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, nil, errNoImage
	}
	dataStart, dataEnd := -1, -1
	var minPages uint64
	memories := 0
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n := binary.Uvarint(wasm[i+1:])
		if n <= 0 || size > uint64(len(wasm)) {
			return nil, nil, errNoImage
		}
		body := i + 1 + n
		end := body + int(size)
		if end > len(wasm) {
			return nil, nil, errNoImage
		}
		switch id {
		case 2: // imports: an imported memory is not ours to fill
			if importsMemory(wasm[body:end]) {
				return nil, nil, errNoImage
			}
		case 5:
			count, k := binary.Uvarint(wasm[body:end])
			if k <= 0 || count != 1 || body+k >= end {
				return nil, nil, errNoImage
			}
			flag := wasm[body+k]
			if flag != 0 && flag != 1 { // shared or 64-bit memories: left alone
				return nil, nil, errNoImage
			}
			min, m := binary.Uvarint(wasm[body+k+1 : end])
			if m <= 0 {
				return nil, nil, errNoImage
			}
			minPages, memories = min, 1
		case 8, 12: // a start function would run before the image is in
			return nil, nil, errNoImage
		case 11:
			dataStart, dataEnd = i, end
		}
		i = end
	}
	if dataStart < 0 || memories != 1 {
		return nil, nil, errNoImage
	}
	segs, err := decodeData(wasm[dataStart:dataEnd])
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
	stripped = make([]byte, 0, len(wasm)-(dataEnd-dataStart))
	stripped = append(append(stripped, wasm[:dataStart]...), wasm[dataEnd:]...)
	return stripped, image, nil
}

// importsMemory reports whether an import section imports a memory (or
// cannot be read: then it is taken to).
func importsMemory(sec []byte) bool {
	count, n := binary.Uvarint(sec)
	if n <= 0 {
		return true
	}
	p := sec[n:]
	name := func() bool {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return false
		}
		p = p[k+int(l):]
		return true
	}
	for range count {
		for range 2 { // module and field names
			if !name() {
				return true
			}
		}
		if len(p) < 1 {
			return true
		}
		kind := p[0]
		p = p[1:]
		switch kind {
		case 0: // function: type index
			_, k := binary.Uvarint(p)
			if k <= 0 {
				return true
			}
			p = p[k:]
		case 1: // table: reftype, limits
			if len(p) < 1 {
				return true
			}
			p = p[1:]
			if !limits(&p) {
				return true
			}
		case 2:
			return true
		case 3: // global: valtype, mutability
			if len(p) < 2 {
				return true
			}
			p = p[2:]
		case 4: // tag: attribute, type index
			if len(p) < 1 {
				return true
			}
			_, k := binary.Uvarint(p[1:])
			if k <= 0 {
				return true
			}
			p = p[1+k:]
		default:
			return true
		}
	}
	return false
}

func limits(p *[]byte) bool {
	b := *p
	if len(b) < 1 {
		return false
	}
	flag := b[0]
	b = b[1:]
	_, k := binary.Uvarint(b)
	if k <= 0 {
		return false
	}
	b = b[k:]
	if flag&1 != 0 {
		_, k = binary.Uvarint(b)
		if k <= 0 {
			return false
		}
		b = b[k:]
	}
	*p = b
	return true
}
