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

	"github.com/aiodhq/aiod/host/internal/wasmbin"
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

// Section ids (package wasmbin reads the binary).
const (
	secCustom    = wasmbin.SecCustom
	secType      = wasmbin.SecType
	secImport    = wasmbin.SecImport
	secFunction  = wasmbin.SecFunction
	secTable     = wasmbin.SecTable
	secMemory    = wasmbin.SecMemory
	secGlobal    = wasmbin.SecGlobal
	secExport    = wasmbin.SecExport
	secStart     = wasmbin.SecStart
	secElement   = wasmbin.SecElement
	secCode      = wasmbin.SecCode
	secData      = wasmbin.SecData
	secDataCount = wasmbin.SecDataCount
	secTag       = wasmbin.SecTag
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

// Instrument returns a copy of the wasm binary with the interrupt flag
// (exported as GlobalName) and the countdown added, and the check described
// in the package documentation inserted immediately after each
// `loop blocktype` instruction, with the period Period.
//
// Errors wrap ErrMalformed (not a well-formed binary), ErrUnsupported (the
// module uses a feature the rewriter does not decode, has no memory, or has
// so many loops that the checks would more than double it, plus a MiB; the message
// says which) or ErrExported (the module already exports GlobalName).
func Instrument(wasm []byte) ([]byte, error) {
	out, _, err := InstrumentInfo(wasm)
	return out, err
}

// Info is what the rewrite saw of the module's code on its way through it.
type Info struct {
	// MutatesTables: some function contains table.set, table.grow,
	// table.fill, table.copy, table.init or elem.drop.
	MutatesTables bool
	// BulkData: some function contains memory.init or data.drop (it
	// depends on the data segments staying in the module).
	BulkData bool
	// TableOps: some function contains a table instruction other than
	// call_indirect (table.get, table.set, table.size, table.grow,
	// table.fill, table.copy, table.init or elem.drop).
	TableOps bool

	before []byte // inserted before each call_indirect (InstrumentBefore)
}

// InstrumentInfo is Instrument, and what it saw (Info).
func InstrumentInfo(wasm []byte) ([]byte, Info, error) {
	return InstrumentBefore(wasm, nil)
}

// InstrumentBefore is InstrumentInfo that also inserts callIndirect (code
// that leaves the stack as it found it, such as a call of a function
// [i32] -> [i32]) right before each call_indirect instruction.
func InstrumentBefore(wasm, callIndirect []byte) ([]byte, Info, error) {
	info := Info{before: callIndirect}
	out, err := rewrite(wasm, Period, &info)
	if err != nil {
		return nil, Info{}, classify(err)
	}
	info.before = nil
	return out, info, nil
}

// instrument is Instrument with a period (tests measure others).
func instrument(wasm []byte, period uint32) ([]byte, error) {
	out, err := rewrite(wasm, period, &Info{})
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// classify turns the reader's errors into the package's.
func classify(err error) error {
	var we *wasmbin.Error
	if !errors.As(err, &we) {
		return err
	}
	if we.Unsupported {
		return unsupported(we.Off, "%s", we.Msg)
	}
	return malformed(we.Off, "%s", we.Msg)
}

func rewrite(wasm []byte, period uint32, info *Info) ([]byte, error) {
	sections, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, err
	}
	if period == 0 || period > math.MaxInt32 {
		return nil, fmt.Errorf("interrupt: period %d out of range", period)
	}

	// Pass 1: check the sections' order, count globals and memories and
	// look for a clashing export.
	var (
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
	for _, s := range sections {
		id := s.ID
		if id == secTag {
			return nil, unsupported(s.Off, "tag section (exception handling)")
		}
		if id == secStart {
			// wazero runs the start function inside InstantiateModule,
			// before the host can reach the flag: it could not be stopped.
			return nil, unsupported(s.Off, "start section (the start function could not be interrupted)")
		}
		if int(id) >= len(rank) {
			return nil, malformed(s.Off, "unknown section id %d", id)
		}
		if id != secCustom {
			if rank[id] <= lastRank {
				return nil, malformed(s.Off, "section %d out of order or repeated", id)
			}
			lastRank = rank[id]
		}
		sub := s.Reader(wasm)
		switch id {
		case secType:
			yieldTypes = voidToI32(&sub)
		case secImport:
			var imp imports
			if imp, err = countImports(&sub); err != nil {
				return nil, err
			}
			importedGlobals = imp.globals
			memories += imp.memories
			yieldImport, yieldType = imp.yield, imp.yieldType
		case secMemory:
			n, err := sub.U32()
			if err != nil {
				return nil, err
			}
			memories += uint64(n)
		case secGlobal:
			hasGlobal = true
			n, err := sub.U32()
			if err != nil {
				return nil, err
			}
			definedGlobals = uint64(n)
		case secExport:
			hasExport = true
			if err := checkExports(&sub); err != nil {
				return nil, err
			}
		}
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
	out = append(out, wasmbin.Header...)
	globalDone, exportDone := false, false
	emitGlobal := func(rest []byte, n uint64) (err error) {
		p := wasmbin.AppendU32(nil, uint32(n+2))
		p = append(p, rest...)
		p = append(p, 0x7F, 0x01, 0x41, 0x00, 0x0B) // flag: mut i32 = i32.const 0
		p = append(p, 0x7F, 0x01, 0x41)             // countdown: mut i32 = i32.const period
		p = wasmbin.AppendI32(p, int32(period))
		p = append(p, 0x0B)
		out, err = wasmbin.AppendSection(out, secGlobal, p)
		globalDone = true
		return err
	}
	emitExport := func(rest []byte, n uint64) (err error) {
		p := wasmbin.AppendU32(nil, uint32(n+1))
		p = append(p, rest...)
		p = wasmbin.AppendU32(p, uint32(len(GlobalName)))
		p = append(p, GlobalName...)
		p = append(p, 0x03)
		p = wasmbin.AppendU32(p, flag)
		out, err = wasmbin.AppendSection(out, secExport, p)
		exportDone = true
		return err
	}
	// The checks may at most double the module, plus MiB (a bound on the
	// output for a module that is nothing but loops).
	budget := len(wasm) + maxExtra
	for _, s := range sections {
		if s.ID != secCustom {
			if !hasGlobal && !globalDone && rank[s.ID] > rank[secGlobal] {
				if err := emitGlobal(nil, 0); err != nil {
					return nil, err
				}
			}
			if !hasExport && !exportDone && rank[s.ID] > rank[secExport] {
				if err := emitExport(nil, 0); err != nil {
					return nil, err
				}
			}
		}
		sub := s.Reader(wasm)
		switch s.ID {
		case secGlobal:
			n, _ := sub.U32() // checked in pass 1
			err = emitGlobal(sub.Rest(), uint64(n))
		case secExport:
			n, _ := sub.U32()
			if uint64(n)+1 > math.MaxUint32 {
				return nil, malformed(s.Start, "too many exports")
			}
			err = emitExport(sub.Rest(), uint64(n))
		case secCode:
			var p []byte
			if p, err = instrumentCode(&sub, check, budget, info); err != nil {
				return nil, err
			}
			if uint64(len(p)) > math.MaxUint32 {
				return nil, unsupported(s.Start, "code section grows beyond 4 GiB")
			}
			out, err = wasmbin.AppendSection(out, secCode, p)
		default:
			out, err = wasmbin.AppendSection(out, s.ID, s.Payload(wasm))
		}
		if err != nil {
			return nil, err
		}
	}
	if !globalDone {
		if err := emitGlobal(nil, 0); err != nil {
			return nil, err
		}
	}
	if !exportDone {
		if err := emitExport(nil, 0); err != nil {
			return nil, err
		}
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
	get := func(g uint32) { c = wasmbin.AppendU32(append(c, 0x23), g) }
	set := func(g uint32) { c = wasmbin.AppendU32(append(c, 0x24), g) }
	get(count)
	c = append(c, 0x41, 0x01, 0x6B) // i32.const 1, i32.sub
	set(count)
	get(count)
	c = append(c, 0x41, 0x00, 0x4C, 0x04, 0x40) // i32.const 0, i32.le_s, if
	c = append(c, 0x41)                         // i32.const period
	c = wasmbin.AppendI32(c, int32(period))
	set(count)
	if yield >= 0 {
		c = wasmbin.AppendU32(append(c, 0x10), uint32(yield)) // call sched_yield
		c = append(c, 0x1A)                                   // drop
	} else {
		c = append(c, 0x41, 0x00, 0x40, 0x00, 0x1A) // i32.const 0, memory.grow 0, drop
	}
	get(flag)
	c = append(c, 0x04, 0x40, 0x00, 0x0B) // if, unreachable, end
	return append(c, 0x0B)                // end
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
func countImports(r *wasmbin.Reader) (imports, error) {
	imp := imports{yield: -1}
	n, err := r.U32()
	if err != nil {
		return imp, err
	}
	funcs := 0
	for i := uint32(0); i < n; i++ {
		im, err := r.Import()
		if err != nil {
			return imp, err
		}
		switch im.Kind {
		case wasmbin.KindFunc:
			if imp.yield < 0 && string(im.Module) == YieldModule && string(im.Name) == YieldName {
				imp.yield, imp.yieldType = funcs, im.Index
			}
			funcs++
		case wasmbin.KindMemory:
			imp.memories++
		case wasmbin.KindGlobal:
			imp.globals++
		case wasmbin.KindTag:
			return imp, unsupported(im.KindOff, "tag import (exception handling)")
		}
	}
	return imp, r.Expect("import section")
}

// voidToI32 decodes the type section and reports, per type index, whether
// the type is a function [] -> [i32]. It returns nil for a section it does
// not decode (GC types, or malformed: wazero's validation reports that);
// the trips then use memory.grow.
func voidToI32(r *wasmbin.Reader) []bool {
	n, err := r.U32()
	if err != nil || uint64(n) > uint64(r.Len()) { // a type is at least 3 bytes
		return nil
	}
	out := make([]bool, 0, n)
	for i := uint32(0); i < n; i++ {
		if b, err := r.Byte(); err != nil || b != 0x60 {
			return nil
		}
		var counts [2]uint32
		var last byte
		for k := range counts {
			c, err := r.U32()
			if err != nil {
				return nil
			}
			counts[k] = c
			for j := uint32(0); j < c; j++ {
				if last, err = r.ValType(); err != nil {
					return nil
				}
			}
		}
		out = append(out, counts[0] == 0 && counts[1] == 1 && last == 0x7F)
	}
	return out
}

// checkExports parses the export section and fails if GlobalName is taken.
func checkExports(r *wasmbin.Reader) error {
	n, err := r.U32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		name, err := r.Name()
		if err != nil {
			return err
		}
		if string(name) == GlobalName {
			return ErrExported
		}
		if _, err := r.Byte(); err != nil { // kind
			return err
		}
		if _, err := r.U32(); err != nil { // index
			return err
		}
	}
	return r.Expect("export section")
}

// instrumentCode rewrites the code section payload.
func instrumentCode(r *wasmbin.Reader, check []byte, budget int, info *Info) ([]byte, error) {
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, r.Len()+(r.Off()+r.Len())/8+16)
	out = wasmbin.AppendU32(out, n)
	for i := uint32(0); i < n; i++ {
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		start := r.Off()
		body, err := r.Sub(size)
		if err != nil {
			return nil, err
		}
		var at int
		out, at = wasmbin.BeginSize(out)
		if out, err = instrumentBody(out, &body, check, &budget, info); err != nil {
			return nil, err
		}
		if uint64(len(out)-at-1) > math.MaxUint32 {
			return nil, unsupported(start, "function body grows beyond 4 GiB")
		}
		if out, err = wasmbin.EndSize(out, at); err != nil {
			return nil, err
		}
	}
	if err := r.Expect("code section"); err != nil {
		return nil, err
	}
	return out, nil
}

// instrumentBody appends the function body read by r to out, with the check
// inserted after each loop header.
func instrumentBody(out []byte, r *wasmbin.Reader, check []byte, budget *int, info *Info) ([]byte, error) {
	start := r.Off()
	locals, err := r.U32()
	if err != nil {
		return nil, err
	}
	for i := uint32(0); i < locals; i++ {
		if _, err := r.U32(); err != nil {
			return nil, err
		}
		if _, err := r.ValType(); err != nil {
			return nil, err
		}
	}
	last := start
	for !r.Done() {
		off := r.Off()
		op, _ := r.Byte()
		switch {
		case op == 0x00, op == 0x01, op == 0x05, op == 0x0B, op == 0x0F,
			op == 0x1A, op == 0x1B, op == 0xD1,
			op >= 0x45 && op <= 0xC4:
			// unreachable nop else end return drop select ref.is_null numeric
		case op == 0x02, op == 0x04: // block if
			err = blocktype(r)
		case op == 0x03: // loop
			if err = blocktype(r); err == nil {
				if *budget -= len(check); *budget < 0 {
					return nil, unsupported(off, "too many loops: the checks would more than double the module")
				}
				out = append(out, r.Since(last)...)
				out = append(out, check...)
				last = r.Off()
			}
		case op == 0x0C, op == 0x0D, // br br_if
			op >= 0x20 && op <= 0x24, // local.get/set/tee global.get/set
			op == 0x25, op == 0x26,   // table.get/set
			op == 0x10, // call
			op == 0xD2: // ref.func
			info.MutatesTables = info.MutatesTables || op == 0x26
			info.TableOps = info.TableOps || op == 0x25 || op == 0x26
			_, err = r.U32()
		case op == 0x0E: // br_table
			var n uint32
			if n, err = r.U32(); err == nil {
				for j := uint64(0); j <= uint64(n) && err == nil; j++ {
					_, err = r.U32()
				}
			}
		case op == 0x11: // call_indirect typeidx tableidx
			if len(info.before) > 0 {
				if *budget -= len(info.before); *budget < 0 {
					return nil, unsupported(off, "too many indirect calls: the inserted code would more than double the module")
				}
				out = append(out, r.Since(last)[:off-last]...)
				out = append(out, info.before...)
				last = off
			}
			if _, err = r.U32(); err == nil {
				_, err = r.U32()
			}
		case op == 0x1C: // typed select
			var n uint32
			if n, err = r.U32(); err == nil {
				for j := uint32(0); j < n && err == nil; j++ {
					_, err = r.ValType()
				}
			}
		case op >= 0x28 && op <= 0x3E: // loads and stores
			err = memarg(r)
		case op == 0x3F, op == 0x40: // memory.size memory.grow
			err = zero(r)
		case op == 0x41:
			_, err = r.I32()
		case op == 0x42:
			_, err = r.I64()
		case op == 0x43:
			_, err = r.Bytes(4)
		case op == 0x44:
			_, err = r.Bytes(8)
		case op == 0xD0: // ref.null heaptype
			var b byte
			if b, err = r.Byte(); err == nil && b != 0x70 && b != 0x6F {
				err = unsupported(off, "ref.null heap type %#x", b)
			}
		case op == 0xFC:
			err = misc(r, off, info)
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
	return append(out, r.Since(last)...), nil
}

// misc skips the sub-opcode and immediates of a 0xFC instruction.
func misc(r *wasmbin.Reader, off int, info *Info) error {
	sub, err := r.U32()
	if err != nil {
		return err
	}
	switch sub {
	case 8, 9: // memory.init data.drop
		info.BulkData = true
	case 12, 13, 14, 15, 17: // table.init elem.drop table.copy table.grow table.fill
		info.MutatesTables = true
	}
	if sub >= 12 && sub <= 17 {
		info.TableOps = true
	}
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
		return nil
	case 8: // memory.init dataidx memidx
		if _, err := r.U32(); err != nil {
			return err
		}
		return zero(r)
	case 9, 13, 15, 16, 17: // data.drop elem.drop table.grow/size/fill
		_, err := r.U32()
		return err
	case 10: // memory.copy
		if err := zero(r); err != nil {
			return err
		}
		return zero(r)
	case 11: // memory.fill
		return zero(r)
	case 12, 14: // table.init elemidx tableidx, table.copy tableidx tableidx
		if _, err := r.U32(); err != nil {
			return err
		}
		_, err := r.U32()
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

// zero reads a reserved memory index byte; anything but 0 is multi-memory.
func zero(r *wasmbin.Reader) error {
	off := r.Off()
	b, err := r.Byte()
	if err == nil && b != 0 {
		err = unsupported(off, "memory index %#x (multi-memory)", b)
	}
	return err
}

// blocktype reads the block type of block, loop and if: empty (0x40), a
// value type, or a non-negative s33 type index.
func blocktype(r *wasmbin.Reader) error {
	off := r.Off()
	if c, ok := r.Peek(); ok && (c == 0x40 || wasmbin.IsValType(c)) {
		_, err := r.Byte()
		return err
	}
	v, err := r.S33()
	if err != nil {
		return err
	}
	if v < 0 {
		return unsupported(off, "block type %d", v)
	}
	return nil
}

// memarg reads align and offset. The offset is read as u64 so that memory64
// offsets are skipped correctly; a valid 32-bit offset decodes the same.
func memarg(r *wasmbin.Reader) error {
	off := r.Off()
	align, err := r.U32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		return unsupported(off, "memarg with memory index (multi-memory)")
	}
	_, err = r.U64()
	return err
}
