// Package interrupt rewrites a WebAssembly module so that a running call can
// be stopped by the host without wazero's per-call termination machinery.
//
// wazero's RuntimeConfig.WithCloseOnContextDone(true) makes every wasm
// `loop` header call out to Go to check whether the module was closed, and
// starts a goroutine per call; Go's wasm backend puts a loop in every
// function, so that more than doubles the cost of a short call. Instrument
// instead adds two mutable i32 globals, the interrupt flag (exported as
// GlobalName, initially 0) and a countdown (initially Period), and inserts
// at every loop header:
//
//	loop bt
//	  global.get C  i32.const 1  i32.sub  global.set C  ;; count down
//	  global.get C  i32.const 0  i32.le_s
//	  if                              ;; every Period loop headers:
//	    i32.const Period  global.set C
//	    i32.const 0  memory.grow 0  drop  ;; a trip into Go
//	    global.get F
//	    if  unreachable  end         ;; interrupted: trap
//	  end
//	  ...
//
// The trip matters as much as the flag: compiled wasm is native code the Go
// scheduler cannot preempt, so a guest spinning in a loop that never left
// it would block every stop-the-world pause (a garbage collection, and with
// it the timer that would set the flag) forever. wazero's compiler runs
// memory.grow through a Go trampoline (it exits the native code and calls
// MemoryInstance.Grow, a Go function whose prologue is a preemption point),
// so a spinning guest stops for a pending stop-the-world within Period loop
// headers; `memory.grow 0` changes nothing (it returns the current size).
//
// A module that imports YieldModule.YieldName with the type [] -> [i32]
// (WASI's sched_yield, which every standard-Go guest imports) trips with
// `call sched_yield  drop` instead of `i32.const 0  memory.grow 0  drop`.
// That is a call into the host's own Go function, so the host hears from a
// long run every Period loop headers and can yield its goroutine (the Go
// scheduler only preempts a goroutine after 10 ms, and one that holds a
// processor that long in wasm delays every goroutine queued behind it);
// the host's sched_yield must therefore be cheap, and return 0 as WASI's
// does. The function index space is unchanged: the import is the
// module's own.
//
// The host runs the instrumented module with WithCloseOnContextDone(false);
// to stop a call it sets the flag to a non-zero value (api.MutableGlobal.Set)
// and the guest traps with "unreachable" at the next trip, at most Period
// loop headers later (microseconds for a tight loop). Straight-line code and
// calls into the host are not interrupted, exactly as with wazero's own
// check. The countdown is not exported: nothing but the guest writes it.
//
// Only the global, export and code sections change; every other section,
// including custom sections, is kept byte for byte and in place. Modules
// using features the rewriter does not decode (SIMD, threads, exceptions,
// tail calls, multi-memory, GC types), modules with a start section (wazero
// runs it before the host could set the flag), modules without a memory (there is
// no memory.grow to trip with) and modules whose checks would more than
// double their size (plus a MiB) are refused with ErrUnsupported, so that the caller can
// fall back to wazero's own checks. The work is two passes over the input,
// and the output is at most twice its size plus a MiB.
package interrupt

import (
	"errors"
	"fmt"
	"math"
)

// GlobalName is the export name of the interrupt flag.
const GlobalName = "aiod_interrupt"

// YieldModule and YieldName name the import a trip calls when the module
// has it (package doc).
const (
	YieldModule = "wasi_snapshot_preview1"
	YieldName   = "sched_yield"
)

// Period is the number of loop headers between two trips into Go: the most
// a spinning guest delays a stop-the-world pause or its interruption. One
// trip costs about as much as wazero's own check at every header, so the
// fast path dominates from a few hundred on (BENCHMARKS.md, "The loop-header
// interrupt").
const Period = 1000

var (
	// ErrUnsupported means the module uses something the rewriter does not
	// handle; the caller falls back to wazero's own termination checks.
	ErrUnsupported = errors.New("interrupt: unsupported module")
	// ErrMalformed means the input is not a well-formed wasm binary.
	ErrMalformed = errors.New("interrupt: malformed module")
	// ErrExported means the module already exports GlobalName.
	ErrExported = errors.New("interrupt: module already exports " + GlobalName)
)

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// rank is the position a known section must have relative to the others
// (the data count section sits between element and code; tag between memory
// and global).
var rank = [...]int{
	secType:      1,
	secImport:    2,
	secFunction:  3,
	secTable:     4,
	secMemory:    5,
	secTag:       6,
	secGlobal:    7,
	secExport:    8,
	secStart:     9,
	secElement:   10,
	secDataCount: 11,
	secCode:      12,
	secData:      13,
}

var header = []byte{0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00}

type section struct {
	id         byte
	start, end int // payload bounds in the input
}

// Instrument returns a copy of the wasm binary with the interrupt flag
// (exported as GlobalName) and the countdown added, and the check described
// in the package documentation inserted immediately after each
// `loop blocktype` instruction, with the period Period.
//
// Errors wrap ErrMalformed (not a well-formed binary), ErrUnsupported (the
// module uses a feature the rewriter does not decode, has no memory, or has
// so many loops that the checks would more than double it, plus a MiB; the message
// says which) or ErrExported (the module already exports GlobalName).
func Instrument(wasm []byte) ([]byte, error) { return instrument(wasm, Period) }

// instrument is Instrument with a period (tests measure others).
func instrument(wasm []byte, period uint32) ([]byte, error) {
	if len(wasm) < len(header) {
		return nil, malformed(0, "truncated header")
	}
	for i, b := range header {
		if wasm[i] != b {
			return nil, malformed(i, "bad magic or version")
		}
	}
	if period == 0 || period > math.MaxInt32 {
		return nil, fmt.Errorf("interrupt: period %d out of range", period)
	}

	// Pass 1: find the sections, check their order, count globals and
	// memories and look for a clashing export.
	var (
		sections        []section
		lastRank        int
		importedGlobals uint64
		definedGlobals  uint64
		memories        uint64
		hasGlobal       bool
		hasExport       bool
		yieldTypes      []bool // per type index: is it [] -> [i32]; nil if not decoded
		yieldImport     = -1   // function index of the sched_yield import
		yieldType       uint32
	)
	r := &reader{b: wasm, off: len(header)}
	for r.off < len(wasm) {
		idOff := r.off
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(wasm)-r.off) {
			return nil, malformed(idOff, "section %d size %d exceeds the input", id, size)
		}
		s := section{id: id, start: r.off, end: r.off + int(size)}
		r.off = s.end
		if id == secTag {
			return nil, unsupported(idOff, "tag section (exception handling)")
		}
		if id == secStart {
			// wazero runs the start function inside InstantiateModule,
			// before the host can reach the flag: it could not be stopped.
			return nil, unsupported(idOff, "start section (the start function could not be interrupted)")
		}
		if int(id) >= len(rank) {
			return nil, malformed(idOff, "unknown section id %d", id)
		}
		if id != secCustom {
			if rank[id] <= lastRank {
				return nil, malformed(idOff, "section %d out of order or repeated", id)
			}
			lastRank = rank[id]
		}
		sub := &reader{b: wasm[:s.end], off: s.start}
		switch id {
		case secType:
			yieldTypes = voidToI32(sub)
		case secImport:
			var imp imports
			if imp, err = countImports(sub); err != nil {
				return nil, err
			}
			importedGlobals = imp.globals
			memories += imp.memories
			yieldImport, yieldType = imp.yield, imp.yieldType
		case secMemory:
			n, err := sub.u32()
			if err != nil {
				return nil, err
			}
			memories += uint64(n)
		case secGlobal:
			hasGlobal = true
			n, err := sub.u32()
			if err != nil {
				return nil, err
			}
			definedGlobals = uint64(n)
		case secExport:
			hasExport = true
			if err := checkExports(sub); err != nil {
				return nil, err
			}
		}
		sections = append(sections, s)
	}
	yield := -1 // the trip's function, or memory.grow
	if yieldImport >= 0 && uint64(yieldType) < uint64(len(yieldTypes)) && yieldTypes[yieldType] {
		yield = yieldImport
	}
	if memories == 0 && yield < 0 {
		return nil, unsupported(0, "no memory (the periodic trip into Go is a memory.grow)")
	}
	g := importedGlobals + definedGlobals
	if g+1 >= math.MaxUint32 {
		return nil, malformed(0, "too many globals")
	}
	flag, count := uint32(g), uint32(g+1)

	// The check inserted after each loop header.
	check := checkCode(flag, count, period, yield)

	// Pass 2: emit.
	out := make([]byte, 0, len(wasm)+len(wasm)/4+64)
	out = append(out, header...)
	globalDone, exportDone := false, false
	emitGlobal := func(rest []byte, n uint64) {
		p := appendU32(nil, uint32(n+2))
		p = append(p, rest...)
		p = append(p, 0x7F, 0x01, 0x41, 0x00, 0x0B) // flag: mut i32 = i32.const 0
		p = append(p, 0x7F, 0x01, 0x41)             // countdown: mut i32 = i32.const period
		p = appendS32(p, int32(period))
		p = append(p, 0x0B)
		out = appendSection(out, secGlobal, p)
		globalDone = true
	}
	emitExport := func(rest []byte, n uint64) {
		p := appendU32(nil, uint32(n+1))
		p = append(p, rest...)
		p = appendU32(p, uint32(len(GlobalName)))
		p = append(p, GlobalName...)
		p = append(p, 0x03)
		p = appendU32(p, flag)
		out = appendSection(out, secExport, p)
		exportDone = true
	}
	// The checks may at most double the module, plus MiB (a bound on the
	// output for a module that is nothing but loops).
	budget := len(wasm) + maxExtra
	for _, s := range sections {
		if s.id != secCustom {
			if !hasGlobal && !globalDone && rank[s.id] > rank[secGlobal] {
				emitGlobal(nil, 0)
			}
			if !hasExport && !exportDone && rank[s.id] > rank[secExport] {
				emitExport(nil, 0)
			}
		}
		sub := &reader{b: wasm[:s.end], off: s.start}
		switch s.id {
		case secGlobal:
			n, _ := sub.u32() // checked in pass 1
			emitGlobal(wasm[sub.off:s.end], uint64(n))
		case secExport:
			n, _ := sub.u32()
			if uint64(n)+1 > math.MaxUint32 {
				return nil, malformed(s.start, "too many exports")
			}
			emitExport(wasm[sub.off:s.end], uint64(n))
		case secCode:
			p, err := instrumentCode(sub, check, budget)
			if err != nil {
				return nil, err
			}
			if uint64(len(p)) > math.MaxUint32 {
				return nil, unsupported(s.start, "code section grows beyond 4 GiB")
			}
			out = appendSection(out, secCode, p)
		default:
			out = appendSection(out, s.id, wasm[s.start:s.end])
		}
	}
	if !globalDone {
		emitGlobal(nil, 0)
	}
	if !exportDone {
		emitExport(nil, 0)
	}
	return out, nil
}

// maxExtra is the growth allowed beyond doubling (so that small modules of
// many loops, common in tests, are instrumented).
const maxExtra = 1 << 20

// checkCode is the code inserted after a loop header (package doc); yield
// is the function a trip calls, or -1 for memory.grow.
func checkCode(flag, count, period uint32, yield int) []byte {
	var c []byte
	get := func(g uint32) { c = appendU32(append(c, 0x23), g) }
	set := func(g uint32) { c = appendU32(append(c, 0x24), g) }
	get(count)
	c = append(c, 0x41, 0x01, 0x6B) // i32.const 1, i32.sub
	set(count)
	get(count)
	c = append(c, 0x41, 0x00, 0x4C, 0x04, 0x40) // i32.const 0, i32.le_s, if
	c = append(c, 0x41)                         // i32.const period
	c = appendS32(c, int32(period))
	set(count)
	if yield >= 0 {
		c = appendU32(append(c, 0x10), uint32(yield)) // call sched_yield
		c = append(c, 0x1A)                           // drop
	} else {
		c = append(c, 0x41, 0x00, 0x40, 0x00, 0x1A) // i32.const 0, memory.grow 0, drop
	}
	get(flag)
	c = append(c, 0x04, 0x40, 0x00, 0x0B) // if, unreachable, end
	return append(c, 0x0B)                // end
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(payload)))
	return append(out, payload...)
}

// imports is what pass 1 needs of the import section.
type imports struct {
	globals, memories uint64
	// yield is the function index of the YieldModule.YieldName import
	// (-1: none), yieldType its type index.
	yield     int
	yieldType uint32
}

// countImports parses the import section: it counts global and memory
// imports and finds the sched_yield import.
func countImports(r *reader) (imports, error) {
	imp := imports{yield: -1}
	n, err := r.u32()
	if err != nil {
		return imp, err
	}
	funcs := 0
	for i := uint32(0); i < n; i++ {
		mod, err := r.nameBytes()
		if err != nil {
			return imp, err
		}
		field, err := r.nameBytes()
		if err != nil {
			return imp, err
		}
		off := r.off
		kind, err := r.byte()
		if err != nil {
			return imp, err
		}
		switch kind {
		case 0x00: // func typeidx
			var ti uint32
			if ti, err = r.u32(); err == nil && imp.yield < 0 && string(mod) == YieldModule && string(field) == YieldName {
				imp.yield, imp.yieldType = funcs, ti
			}
			funcs++
		case 0x01: // table: reftype limits
			if _, err = r.valtype(); err == nil {
				err = r.limits()
			}
		case 0x02: // memory: limits
			err = r.limits()
			imp.memories++
		case 0x03: // global: valtype mut
			if _, err = r.valtype(); err == nil {
				_, err = r.byte()
			}
			imp.globals++
		case 0x04:
			return imp, unsupported(off, "tag import (exception handling)")
		default:
			return imp, malformed(off, "unknown import kind %#x", kind)
		}
		if err != nil {
			return imp, err
		}
	}
	if r.off != len(r.b) {
		return imp, malformed(r.off, "import section has %d trailing bytes", len(r.b)-r.off)
	}
	return imp, nil
}

// voidToI32 decodes the type section and reports, per type index, whether
// the type is a function [] -> [i32]. It returns nil for a section it does
// not decode (GC types, or malformed: wazero's validation reports that);
// the trips then use memory.grow.
func voidToI32(r *reader) []bool {
	n, err := r.u32()
	if err != nil || uint64(n) > uint64(len(r.b)-r.off) { // a type is at least 3 bytes
		return nil
	}
	out := make([]bool, 0, n)
	for i := uint32(0); i < n; i++ {
		if b, err := r.byte(); err != nil || b != 0x60 {
			return nil
		}
		var counts [2]uint32
		var last byte
		for k := range counts {
			c, err := r.u32()
			if err != nil {
				return nil
			}
			counts[k] = c
			for j := uint32(0); j < c; j++ {
				if last, err = r.valtype(); err != nil {
					return nil
				}
			}
		}
		out = append(out, counts[0] == 0 && counts[1] == 1 && last == 0x7F)
	}
	return out
}

// checkExports parses the export section and fails if GlobalName is taken.
func checkExports(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return err
		}
		name, err := r.bytes(size)
		if err != nil {
			return err
		}
		if string(name) == GlobalName {
			return ErrExported
		}
		if _, err := r.byte(); err != nil { // kind
			return err
		}
		if _, err := r.u32(); err != nil { // index
			return err
		}
	}
	if r.off != len(r.b) {
		return malformed(r.off, "export section has %d trailing bytes", len(r.b)-r.off)
	}
	return nil
}

// instrumentCode rewrites the code section payload.
func instrumentCode(r *reader, check []byte, budget int) ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(r.b)-r.off+len(r.b)/8+16)
	out = appendU32(out, n)
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		start := r.off
		if _, err := r.bytes(size); err != nil {
			return nil, err
		}
		body := &reader{b: r.b[:r.off], off: start}
		sizeAt := len(out)
		out = appendU32(out, 0) // placeholder, rewritten below
		bodyAt := len(out)
		if out, err = instrumentBody(out, body, check, &budget); err != nil {
			return nil, err
		}
		bodyLen := len(out) - bodyAt
		if uint64(bodyLen) > math.MaxUint32 {
			return nil, unsupported(start, "function body grows beyond 4 GiB")
		}
		// Re-encode the size; shift the body if the encoding's length changed.
		enc := appendU32(nil, uint32(bodyLen))
		if len(enc) == 1 {
			out[sizeAt] = enc[0]
		} else {
			out = append(out, enc[1:]...)
			copy(out[bodyAt+len(enc)-1:], out[bodyAt:bodyAt+bodyLen])
			copy(out[sizeAt:], enc)
		}
	}
	if r.off != len(r.b) {
		return nil, malformed(r.off, "code section has %d trailing bytes", len(r.b)-r.off)
	}
	return out, nil
}

// instrumentBody appends the function body read by r to out, with the check
// inserted after each loop header.
func instrumentBody(out []byte, r *reader, check []byte, budget *int) ([]byte, error) {
	start := r.off
	locals, err := r.u32()
	if err != nil {
		return nil, err
	}
	for i := uint32(0); i < locals; i++ {
		if _, err := r.u32(); err != nil {
			return nil, err
		}
		if _, err := r.valtype(); err != nil {
			return nil, err
		}
	}
	last := start
	for r.off < len(r.b) {
		off := r.off
		op, _ := r.byte()
		switch {
		case op == 0x00, op == 0x01, op == 0x05, op == 0x0B, op == 0x0F,
			op == 0x1A, op == 0x1B, op == 0xD1,
			op >= 0x45 && op <= 0xC4:
			// unreachable nop else end return drop select ref.is_null numeric
		case op == 0x02, op == 0x04: // block if
			err = r.blocktype()
		case op == 0x03: // loop
			if err = r.blocktype(); err == nil {
				if *budget -= len(check); *budget < 0 {
					return nil, unsupported(off, "too many loops: the checks would more than double the module")
				}
				out = append(out, r.b[last:r.off]...)
				out = append(out, check...)
				last = r.off
			}
		case op == 0x0C, op == 0x0D, // br br_if
			op >= 0x20 && op <= 0x24, // local.get/set/tee global.get/set
			op == 0x25, op == 0x26,   // table.get/set
			op == 0x10, // call
			op == 0xD2: // ref.func
			_, err = r.u32()
		case op == 0x0E: // br_table
			var n uint32
			if n, err = r.u32(); err == nil {
				for j := uint64(0); j <= uint64(n) && err == nil; j++ {
					_, err = r.u32()
				}
			}
		case op == 0x11: // call_indirect typeidx tableidx
			if _, err = r.u32(); err == nil {
				_, err = r.u32()
			}
		case op == 0x1C: // typed select
			var n uint32
			if n, err = r.u32(); err == nil {
				for j := uint32(0); j < n && err == nil; j++ {
					_, err = r.valtype()
				}
			}
		case op >= 0x28 && op <= 0x3E: // loads and stores
			err = r.memarg()
		case op == 0x3F, op == 0x40: // memory.size memory.grow
			err = r.zero()
		case op == 0x41:
			_, err = r.leb(32, true)
		case op == 0x42:
			_, err = r.leb(64, true)
		case op == 0x43:
			_, err = r.bytes(4)
		case op == 0x44:
			_, err = r.bytes(8)
		case op == 0xD0: // ref.null heaptype
			var b byte
			if b, err = r.byte(); err == nil && b != 0x70 && b != 0x6F {
				err = unsupported(off, "ref.null heap type %#x", b)
			}
		case op == 0xFC:
			err = r.misc(off)
		case op == 0xFD:
			err = unsupported(off, "SIMD opcode 0xFD")
		case op == 0xFE:
			err = unsupported(off, "threads opcode 0xFE")
		case op == 0x12, op == 0x13:
			err = unsupported(off, "tail call opcode %#x", op)
		case op >= 0x06 && op <= 0x0A, op == 0x18, op == 0x19, op == 0x1F:
			err = unsupported(off, "exception handling opcode %#x", op)
		default:
			err = unsupported(off, "opcode %#x", op)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(out, r.b[last:]...), nil
}

// misc skips the sub-opcode and immediates of a 0xFC instruction.
func (r *reader) misc(off int) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
		return nil
	case 8: // memory.init dataidx memidx
		if _, err := r.u32(); err != nil {
			return err
		}
		return r.zero()
	case 9, 13, 15, 16, 17: // data.drop elem.drop table.grow/size/fill
		_, err := r.u32()
		return err
	case 10: // memory.copy
		if err := r.zero(); err != nil {
			return err
		}
		return r.zero()
	case 11: // memory.fill
		return r.zero()
	case 12, 14: // table.init elemidx tableidx, table.copy tableidx tableidx
		if _, err := r.u32(); err != nil {
			return err
		}
		_, err := r.u32()
		return err
	default:
		return unsupported(off, "opcode 0xFC %d", sub)
	}
}

func malformed(off int, format string, args ...any) error {
	return fmt.Errorf("%w: at offset %d: %s", ErrMalformed, off, fmt.Sprintf(format, args...))
}

func unsupported(off int, format string, args ...any) error {
	return fmt.Errorf("%w: at offset %d: %s", ErrUnsupported, off, fmt.Sprintf(format, args...))
}

// reader decodes b from off; b ends where the current section or body ends,
// so reads never cross it. Offsets in errors are offsets in the module.
type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, malformed(r.off, "unexpected end")
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(len(r.b)-r.off) {
		return nil, malformed(r.off, "%d bytes past the end", uint64(n)-uint64(len(r.b)-r.off))
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// leb decodes an LEB128 number of at most bits bits, rejecting encodings
// that are too long or whose unused bits are not zero (unsigned) or the sign
// (signed), as the spec requires.
func (r *reader) leb(bits uint, signed bool) (uint64, error) {
	start := r.off
	maxBytes := int((bits + 6) / 7)
	used := bits - 7*uint(maxBytes-1) // value bits in the last byte
	var v uint64
	var shift uint
	for i := 0; ; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, malformed(start, "LEB128 longer than %d bytes", maxBytes)
			}
			rest := (c & 0x7F) >> (used - 1)
			if signed {
				if rest != 0 && rest != 0x7F>>(used-1) {
					return 0, malformed(start, "LEB128 overflows %d bits", bits)
				}
			} else if rest>>1 != 0 {
				return 0, malformed(start, "LEB128 overflows %d bits", bits)
			}
		}
		v |= uint64(c&0x7F) << shift
		shift += 7
		if c&0x80 == 0 {
			if signed && shift < 64 && c&0x40 != 0 {
				v |= ^uint64(0) << shift
			}
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.leb(32, false)
	return uint32(v), err
}

// zero reads a reserved memory index byte; anything but 0 is multi-memory.
func (r *reader) zero() error {
	off := r.off
	b, err := r.byte()
	if err == nil && b != 0 {
		err = unsupported(off, "memory index %#x (multi-memory)", b)
	}
	return err
}

func (r *reader) nameBytes() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	return r.bytes(n)
}

// valtype reads a single-byte value type: i32 i64 f32 f64 v128 funcref
// externref. GC reference types (multi-byte) are unsupported.
func (r *reader) valtype() (byte, error) {
	off := r.off
	b, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch b {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		return b, nil
	}
	return 0, unsupported(off, "value type %#x", b)
}

// blocktype reads the block type of block, loop and if: empty (0x40), a
// value type, or a non-negative s33 type index.
func (r *reader) blocktype() error {
	off := r.off
	if r.off < len(r.b) {
		switch r.b[r.off] {
		case 0x40, 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
			r.off++
			return nil
		}
	}
	v, err := r.leb(33, true)
	if err != nil {
		return err
	}
	if int64(v) < 0 {
		return unsupported(off, "block type %d", int64(v))
	}
	return nil
}

// limits reads table or memory limits: flags, min, optional max; 64-bit
// bounds when flag 0x04 is set.
func (r *reader) limits() error {
	off := r.off
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 0x07 {
		return malformed(off, "limits flags %#x", flags)
	}
	bits := uint(32)
	if flags&0x04 != 0 {
		bits = 64
	}
	if _, err := r.leb(bits, false); err != nil {
		return err
	}
	if flags&0x01 != 0 {
		_, err = r.leb(bits, false)
	}
	return err
}

// memarg reads align and offset. The offset is read as u64 so that memory64
// offsets are skipped correctly; a valid 32-bit offset decodes the same.
func (r *reader) memarg() error {
	off := r.off
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		return unsupported(off, "memarg with memory index (multi-memory)")
	}
	_, err = r.leb(64, false)
	return err
}

// appendS32 appends v as a signed LEB128 (an i32.const immediate).
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
