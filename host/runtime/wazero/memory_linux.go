//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import (
	"bytes"
	"context"
	"sync"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// On 64-bit Linux a linear memory is one private anonymous mapping that
// reserves the module's maximum (the grant's memory limit) once, PROT_NONE,
// and commits (PROT_READ|PROT_WRITE) the prefix the guest has grown to: it
// grows in place (no copy, no old buffer waiting for the Go GC), it is not
// Go heap (the GC neither scans nor counts it), and Close unmaps it, so an
// evicted instance's memory goes back to the OS at once. The guest sees the
// same memory: fresh pages read as zero, memory.grow is bounded by the same
// maximum (wazero checks it before asking the allocator), and a commit the
// kernel refuses makes memory.grow return -1 instead of failing the process.

// pageSize is the host page granularity for commits and zero-page release.
var pageSize = syscall.Getpagesize()

// useMapping and dropZero switch the mapping and the zero-page release
// (BenchmarkInstantiate compares them with wazero's default).
var useMapping, dropZero = true, true

// memSlot is filled by the allocator when wazero builds an instance's
// linear memory; nil-safe, so a module without memory needs nothing.
type memSlot struct{ m *mmapMemory }

// withMemory returns ctx carrying an allocator that records the memory it
// makes in the returned slot. The slot's memory is held (see hold) from its
// allocation until the instantiating code calls instantiated.
func withMemory(ctx context.Context) (context.Context, *memSlot) {
	if !useMapping {
		return ctx, nil
	}
	s := &memSlot{}
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		m, err := reserve(max)
		if err != nil {
			// No address space for the reservation: fall back to a Go
			// slice (wazero's own behaviour), still bounded by max.
			return &sliceMemory{max: max}
		}
		s.m = m
		return m
	})), s
}

// instantiated ends the hold taken at allocation. failed says the
// instantiation failed: wazero may not have freed the memory then (a data
// segment or start section failure drops the module unfreed), and nothing
// can reach it any more, so it is freed here.
func (s *memSlot) instantiated(failed bool) {
	if s == nil || s.m == nil {
		return
	}
	if failed {
		s.m.Free()
	}
	s.m.release()
}

// hold keeps the mapping alive for a call: wazero frees the memory on
// module close, which can come from another goroutine (Runtime.Close on a
// reload) or from the guest's own goroutine (a deadline), while guest code
// or a host function may still touch it. Free during a hold only marks it;
// the last release unmaps.
func (s *memSlot) hold() {
	if s != nil && s.m != nil {
		s.m.mu.Lock()
		s.m.holds++
		s.m.mu.Unlock()
	}
}

func (s *memSlot) release() {
	if s != nil && s.m != nil {
		s.m.release()
	}
}

// dropZeroPages returns the committed pages that are entirely zero to the
// OS (MADV_DONTNEED on a private anonymous mapping: they read back as
// zero, so the guest sees no change) and reports how many bytes it
// released. Call it only while no guest code runs on the instance.
func (s *memSlot) dropZeroPages() int {
	if s == nil || s.m == nil || !dropZero {
		return 0
	}
	return s.m.dropZeroPages()
}

type mmapMemory struct {
	mu        sync.Mutex
	mapping   []byte // as mmap returned it (syscall.Munmap needs it whole)
	buf       []byte // the guest's maximum, a prefix of mapping
	committed uint64 // bytes mapped read-write, a prefix of buf
	imaged    uint64 // bytes at the start mapped from a data image (image_linux.go)
	holds     int
	freed     bool
	unmapped  bool
}

func reserve(max uint64) (*mmapMemory, error) {
	n := roundUp(max, uint64(pageSize))
	if n == 0 {
		n = uint64(pageSize)
	}
	buf, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &mmapMemory{mapping: buf, buf: buf[:max:max], holds: 1}, nil
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// Reallocate implements experimental.LinearMemory: it commits up to size
// bytes in place, or returns nil (memory.grow fails) past the reservation
// or when the kernel refuses the commit.
func (m *mmapMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unmapped || size > uint64(len(m.buf)) {
		return nil
	}
	if size > m.committed {
		end := min(roundUp(size, uint64(pageSize)), uint64(len(m.mapping)))
		if err := syscall.Mprotect(m.mapping[m.committed:end:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		m.committed = end
	}
	return m.buf[:size:size]
}

// Free implements experimental.LinearMemory. Idempotent; the unmap waits
// for the last hold.
func (m *mmapMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.freed = true
	m.unmapLocked()
}

func (m *mmapMemory) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds--
	m.unmapLocked()
}

func (m *mmapMemory) unmapLocked() {
	if !m.freed || m.holds > 0 || m.unmapped {
		return
	}
	m.unmapped = true
	_ = syscall.Munmap(m.mapping)
}

var zeroPage = make([]byte, 64<<10)

func (m *mmapMemory) dropZeroPages() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unmapped {
		return 0
	}
	ps := pageSize
	if ps > len(zeroPage) {
		return 0
	}
	mem := m.mapping[:m.committed]
	dropped := 0
	start := int(m.imaged) // file-backed: dropping a page there restores the image
	flush := func(from, to int) {
		if to > from && syscall.Madvise(mem[from:to], syscall.MADV_DONTNEED) == nil {
			dropped += to - from
		}
	}
	run := -1 // start of the current run of zero pages
	for off := start; off+ps <= len(mem); off += ps {
		if bytes.Equal(mem[off:off+ps], zeroPage[:ps]) {
			if run < 0 {
				run = off
			}
			continue
		}
		if run >= 0 {
			flush(run, off)
			run = -1
		}
	}
	if run >= 0 {
		flush(run, len(mem)-len(mem)%ps)
	}
	return dropped
}

// sliceMemory is the fallback when the reservation fails: a Go slice grown
// by reallocation, as wazero does without an allocator.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if n := uint64(len(m.buf)); size > n {
		m.buf = append(m.buf, make([]byte, size-n)...)
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }
