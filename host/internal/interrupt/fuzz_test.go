package interrupt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/aiodhq/aiod/host/internal/interrupt"
)

// FuzzInstrument: Instrument never panics, and whenever wazero compiles the
// input, it compiles the instrumented output too.
func FuzzInstrument(f *testing.F) {
	loops, _ := manyLoops(3, 0)
	for _, seed := range [][]byte{
		module(memOne),
		module(typeVoid, funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		module(typeVoid, funcOne, memOne, sec(10, vec(body(loops...)))),
		module(sec(0, str("x")), typeVoid, funcOne, memOne, sec(8, u32(0)), sec(0, str("y")), sec(10, vec(body(0x00, 0x0B)))),
		module(typeVoid,
			sec(2, vec(cat(str("env"), str("g"), []byte{0x03, 0x7F, 0x00}))),
			funcOne,
			memOne,
			sec(6, vec([]byte{0x7F, 0x01, 0x41, 0x00, 0x0B})),
			sec(7, vec(cat(str("spin"), []byte{0x00, 0x00}))),
			sec(10, vec(body(0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B)))),
		immediates(nil),
		module(yieldTypes, yieldImports(1), funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
	} {
		f.Add(seed)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig())
	f.Cleanup(func() { r.Close(ctx) })
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := interrupt.Instrument(in)
		if err != nil {
			if out != nil {
				t.Fatal("output with an error")
			}
			if !errors.Is(err, interrupt.ErrMalformed) && !errors.Is(err, interrupt.ErrUnsupported) && !errors.Is(err, interrupt.ErrExported) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if !small(in) {
			return
		}
		cin, err := r.CompileModule(ctx, in)
		if err != nil {
			return
		}
		cin.Close(ctx)
		cout, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("input compiles, output does not: %v\nin  % x\nout % x", err, in, out)
		}
		cout.Close(ctx)
	})
}

// small reports whether no LEB128 number that could be read anywhere in b
// exceeds 1<<16. wazero allocates vectors by their declared length before
// reading them (a type with 500 million results, a local count of 4 billion),
// which exhausts the fuzz worker's memory; such inputs are still instrumented
// above, but not compiled.
func small(b []byte) bool {
	for i := range b {
		var v uint64
		for j, shift := i, uint(0); j < len(b) && shift < 35; j, shift = j+1, shift+7 {
			v |= uint64(b[j]&0x7F) << shift
			if b[j]&0x80 == 0 {
				break
			}
		}
		if v > 1<<16 {
			return false
		}
	}
	return true
}
