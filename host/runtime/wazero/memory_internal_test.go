//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le || ppc64 || s390x || mips64 || mips64le)

package wazero

import (
	"bytes"
	"testing"
)

// TestMemoryUnit checks the mapping on its own: in-place growth, the
// maximum, zero-page release keeping contents, Free during a hold.
func TestMemoryUnit(t *testing.T) {
	const max = 8 << 16
	m, err := reserve(max)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Reallocate(2 << 16)
	if len(b) != 2<<16 {
		t.Fatalf("len %d", len(b))
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatal("fresh memory not zero")
		}
	}
	// one non-zero byte per other page; the rest is zero written by hand
	for off := 0; off < len(b); off += 2 * pageSize {
		b[off+7] = byte(off/pageSize) | 1
	}
	for off := pageSize; off < len(b); off += 2 * pageSize {
		clear(b[off : off+pageSize])
	}
	before := append([]byte(nil), b...)
	if got, want := m.dropZeroPages(), len(b)/2; got != want {
		t.Fatalf("dropped %d bytes, want %d", got, want)
	}
	if !bytes.Equal(b, before) {
		t.Fatal("contents changed by dropZeroPages")
	}
	b2 := m.Reallocate(max)
	if &b2[0] != &b[0] {
		t.Fatal("grew by moving")
	}
	if !bytes.Equal(b2[:len(before)], before) {
		t.Fatal("contents changed by growth")
	}
	b2[max-1] = 1
	if m.Reallocate(max+1<<16) != nil {
		t.Fatal("grew past the maximum")
	}
	m.holds++ // a call in flight
	m.Free()
	if m.unmapped {
		t.Fatal("unmapped during a hold")
	}
	b2[0] = 1 // still mapped
	m.release()
	m.release() // the allocation's hold
	if !m.unmapped {
		t.Fatal("not unmapped after the last release")
	}
	m.Free() // idempotent
}
