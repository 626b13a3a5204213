// Package lazytable rewrites a WebAssembly module so that its function
// table is filled on first use instead of at instantiation.
//
// wazero builds every instance's table eagerly: for each entry of an active
// element segment it evaluates a constant expression and allocates a
// function reference, a few Go allocations per entry. The Go toolchain puts
// every function of a module in its table (a standard-Go plugin: some
// 2,800 entries), so that is most of what an instance started from a
// snapshot costs (host/runtime/wazero, "Instances from snapshots"), and most
// of the Go heap it holds. Few of those functions are ever called
// indirectly by one instance.
//
// Rewrite turns the module's one active element segment (offset O, n
// functions f_0..f_n-1) into a declarative one (it only declares the
// functions for ref.func: nothing is placed in the table at instantiation)
// and adds two functions:
//
//	ensure (param i32) (result i32):  ;; inserted before every call_indirect
//	  if O <= i < O+n and table[i] is null: fill(i)
//	  return i
//	fill (param i32):                  ;; a br_table over i-O
//	  table[i] = ref.func f_(i-O)
//
// so an entry is set the first time an indirect call goes through it, to
// the function the segment put there. What the guest observes does not
// change: an index outside the segment still traps as before (null or out
// of bounds), a type mismatch still traps, and every index in the segment
// calls the same function. The call_indirect sites are found by the one
// instruction decoder, package interrupt's, which inserts `call ensure`
// before each (InstrumentBefore).
//
// Only modules where that holds are rewritten: one table, defined (not
// imported) and not exported, of funcref; one element segment, active on
// that table at a constant offset, listing function indices, within the
// table's minimum; no table instruction but call_indirect in the code (a
// table.get would see the nulls); and from MinEntries to MaxEntries
// entries (below, the eager table costs little and the check would be a
// loss; above, the fill function would grow too large).
// Anything else is left as it is (Plan reports why).
package lazytable

import (
	"errors"
	"fmt"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// MinEntries is the smallest segment Rewrite makes lazy; MaxEntries the
// largest (the fill function is ~17 bytes and a block per entry: at most
// ~2 MiB added, and a nesting the engine's validator and compiler walk in
// well under a second).
const (
	MinEntries = 256
	MaxEntries = 1 << 17
)

// Plan is what Rewrite found in a module.
type Plan struct {
	// Refused says why the module is left as it is ("" when it is not).
	Refused string
	// Ensure is the function index of the added check (valid when Refused
	// is empty): the caller inserts `call Ensure` before each
	// call_indirect.
	Ensure uint32

	types, funcs, defined, offset uint32
	elems                         []uint32
}

// CallEnsure is the code to insert before each call_indirect.
func (p Plan) CallEnsure() []byte { return wasmbin.AppendU32([]byte{0x10}, p.Ensure) }

// Read plans the rewrite of wasm (a module the interrupt rewriter
// accepts: its sections in order, no start section).
func Read(wasm []byte) (Plan, error) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	refuse := func(format string, args ...any) (Plan, error) {
		return Plan{Refused: fmt.Sprintf(format, args...)}, nil
	}
	tables, segments := 0, 0
	var tableMin uint64
	for _, s := range secs {
		r := s.Reader(wasm)
		switch s.ID {
		case wasmbin.SecType:
			if p.types, err = r.VecLen(); err != nil {
				return Plan{}, err
			}
		case wasmbin.SecImport:
			imps, err := r.Imports()
			if err != nil {
				return Plan{}, err
			}
			for _, imp := range imps {
				switch imp.Kind {
				case wasmbin.KindFunc:
					p.funcs++
				case wasmbin.KindTable:
					return refuse("the module imports a table")
				}
			}
		case wasmbin.SecFunction:
			n, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			p.funcs += n
			p.defined = n
		case wasmbin.SecTable:
			n, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			tables = int(n)
			if n != 1 {
				return refuse("%d tables", n)
			}
			typ, err := r.Byte()
			if err != nil {
				return Plan{}, err
			}
			if typ != 0x70 {
				return refuse("the table is not of funcref")
			}
			l, err := r.Limits()
			if err != nil {
				return Plan{}, err
			}
			if l.Flags&0x04 != 0 {
				return refuse("a 64-bit table")
			}
			tableMin = l.Min
		case wasmbin.SecExport:
			n, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			for range n {
				if _, err := r.Name(); err != nil {
					return Plan{}, err
				}
				kind, err := r.Byte()
				if err != nil {
					return Plan{}, err
				}
				if _, err := r.U32(); err != nil {
					return Plan{}, err
				}
				if kind == wasmbin.KindTable {
					return refuse("the module exports its table")
				}
			}
		case wasmbin.SecElement:
			n, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			segments = int(n)
			if n != 1 {
				return refuse("%d element segments", n)
			}
			flags, err := r.U32()
			if err != nil {
				return Plan{}, err
			}
			if flags != 0 { // active, table 0, expression offset, function indices
				return refuse("an element segment of form %d", flags)
			}
			if op, err := r.Byte(); err != nil || op != 0x41 {
				return refuse("an element segment whose offset is not an i32.const")
			}
			off, err := r.I32()
			if err != nil {
				return Plan{}, err
			}
			if end, err := r.Byte(); err != nil || end != 0x0B {
				return refuse("an element segment whose offset is not an i32.const")
			}
			p.offset = uint32(off)
			k, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			p.elems = make([]uint32, k)
			for i := range p.elems {
				if p.elems[i], err = r.U32(); err != nil {
					return Plan{}, err
				}
			}
			if err := r.Expect("element section"); err != nil {
				return Plan{}, err
			}
		case wasmbin.SecStart:
			return refuse("the module has a start section")
		}
	}
	switch {
	case tables != 1 || segments != 1:
		return refuse("not one table and one element segment")
	case len(p.elems) < MinEntries:
		return refuse("%d table entries (fewer than %d)", len(p.elems), MinEntries)
	case len(p.elems) > MaxEntries:
		return refuse("%d table entries (more than %d)", len(p.elems), MaxEntries)
	case uint64(p.offset)+uint64(len(p.elems)) > tableMin:
		return refuse("the element segment ends past the table's minimum")
	case p.types > 1<<20 || p.funcs > 1<<30:
		return refuse("too many types or functions")
	}
	for _, f := range p.elems {
		if f >= p.funcs {
			return Plan{}, wasmbin.Malformed(0, "element segment names function %d of %d", f, p.funcs)
		}
	}
	p.Ensure = p.funcs
	return p, nil
}

// ErrRefused is returned by Apply for a plan that refused the module.
var ErrRefused = errors.New("lazytable: module refused")

// Apply rewrites wasm, a module planned by p whose call_indirect
// instructions are each preceded by p.CallEnsure() (the function indices,
// types and element section unchanged since Read): the two functions are
// added and the element segment made declarative.
func Apply(wasm []byte, p Plan) ([]byte, error) {
	if p.Refused != "" {
		return nil, ErrRefused
	}
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, err
	}
	ensureType, fillType := p.types, p.types+1
	out := make([]byte, 0, len(wasm)+len(p.elems)*12+64)
	out = append(out, wasmbin.Header...)
	for _, s := range secs {
		r := s.Reader(wasm)
		var payload []byte
		switch s.ID {
		case wasmbin.SecType:
			n, err := r.VecLen()
			if err != nil || n != p.types {
				return nil, errors.New("lazytable: the type section changed since Read")
			}
			payload = wasmbin.AppendU32(nil, n+2)
			payload = append(payload, r.Rest()...)
			payload = append(payload, 0x60, 0x01, 0x7F, 0x01, 0x7F) // (i32) -> (i32)
			payload = append(payload, 0x60, 0x01, 0x7F, 0x00)       // (i32) -> ()
		case wasmbin.SecFunction:
			n, err := r.VecLen()
			if err != nil || n != p.defined {
				return nil, errors.New("lazytable: the function section changed since Read")
			}
			payload = wasmbin.AppendU32(nil, n+2)
			payload = append(payload, r.Rest()...)
			payload = wasmbin.AppendU32(payload, ensureType)
			payload = wasmbin.AppendU32(payload, fillType)
		case wasmbin.SecElement:
			payload = []byte{0x01, 0x03, 0x00} // one declarative segment of function indices
			payload = wasmbin.AppendU32(payload, uint32(len(p.elems)))
			for _, f := range p.elems {
				payload = wasmbin.AppendU32(payload, f)
			}
		case wasmbin.SecCode:
			n, err := r.VecLen()
			if err != nil || n != p.defined {
				return nil, errors.New("lazytable: the code section does not match the functions")
			}
			payload = wasmbin.AppendU32(nil, n+2)
			payload = append(payload, r.Rest()...)
			payload = appendBody(payload, ensureBody(p))
			payload = appendBody(payload, fillBody(p))
		default:
			payload = s.Payload(wasm)
		}
		if out, err = wasmbin.AppendSection(out, s.ID, payload); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func appendBody(b, body []byte) []byte {
	b = wasmbin.AppendU32(b, uint32(len(body)))
	return append(b, body...)
}

// ensureBody: if i-O < n (unsigned) and table[i] is null, fill(i); i.
func ensureBody(p Plan) []byte {
	b := []byte{0x00}         // no locals
	b = append(b, 0x02, 0x40) // block
	b = append(b, 0x20, 0x00) //   local.get 0
	b = relIndex(b, p.offset) //   i - O
	b = append(b, 0x41)       //   i32.const n
	b = wasmbin.AppendI32(b, int32(len(p.elems)))
	b = append(b, 0x4F, 0x0D, 0x00)                               // i32.ge_u, br_if 0
	b = append(b, 0x20, 0x00, 0x25, 0x00, 0xD1, 0x45, 0x0D, 0x00) // local.get 0, table.get 0, ref.is_null, i32.eqz, br_if 0
	b = append(b, 0x20, 0x00, 0x10)                               // local.get 0, call fill
	b = wasmbin.AppendU32(b, p.Ensure+1)
	b = append(b, 0x0B)                // end
	return append(b, 0x20, 0x00, 0x0B) // local.get 0, end
}

// relIndex appends `i32.const O, i32.sub` (nothing for O = 0).
func relIndex(b []byte, off uint32) []byte {
	if off == 0 {
		return b
	}
	b = append(b, 0x41)
	b = wasmbin.AppendI32(b, int32(off))
	return append(b, 0x6B)
}

// fillBody: a br_table over i-O, arm k setting table[O+k] to f_k.
func fillBody(p Plan) []byte {
	n := uint32(len(p.elems))
	b := []byte{0x00} // no locals
	for range n + 1 {
		b = append(b, 0x02, 0x40) // block
	}
	b = append(b, 0x20, 0x00) // local.get 0
	b = relIndex(b, p.offset)
	b = append(b, 0x0E) // br_table 0 1 .. n-1, default n
	b = wasmbin.AppendU32(b, n)
	for k := range n + 1 {
		b = wasmbin.AppendU32(b, k)
	}
	for k, f := range p.elems {
		b = append(b, 0x0B, 0x41) // end (arm k), i32.const O+k
		b = wasmbin.AppendI32(b, int32(p.offset+uint32(k)))
		b = wasmbin.AppendU32(append(b, 0xD2), f) // ref.func f_k
		b = append(b, 0x26, 0x00, 0x0F)           // table.set 0, return
	}
	return append(b, 0x0B, 0x0B) // end (default arm), end
}
