// Package wasmsnap prepares a module to be started from a snapshot of an
// initialised instance, engine-neutrally (RATIONALE.md, "Instances from
// snapshots"; spec/abi, "What a guest may observe").
//
// A snapshot is what a reactor's _initialize leaves behind: its linear
// memory and its mutable globals. An engine reads memory through its own
// API, but not a module's internal globals, so Prepare rewrites the module
// the way Wizer does its capture: every mutable global the module defines
// is also exported, as GlobalPrefix followed by its index, and an engine
// reads (capture) and writes (restore) them through the exports. Nothing
// else changes: the code, the function and global index spaces, and every
// other section are kept byte for byte, so an instance of the prepared
// module started from scratch behaves exactly as one of the original.
//
// Prepare also decides whether a snapshot can stand for an initialisation
// at all, and writes its answer into the module as a custom section
// (SectionName), so that the answer travels with the prepared bytes through
// an engine's prepared-module cache: Read gives it back. A module is refused
// a snapshot (the reason says why) when its initialisation could leave state
// a snapshot does not hold: a function that mutates a table (table.set,
// table.grow, table.fill, table.copy, table.init, elem.drop: tables are not
// captured), that uses memory.init or data.drop (the data segments then
// matter after initialisation), an imported global (its value is the
// host's), a mutable global of a type that is not a number, a start
// section, an imported or a missing memory, or no _initialize.
//
// The package also holds what the engines' snapshots share beside the
// module's preparation, each engine supplying its capture and restore:
// the table of a module's owners and their snapshots (Owners), the runs
// of pages a snapshot restores (Runs, MaxRuns), and a capturing
// initialisation's refusals (ErrInitReach, CapturingWriter, EndCapture).
package wasmsnap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// GlobalPrefix starts the export name of each mutable global Prepare
// exports: GlobalPrefix + the global's index.
const GlobalPrefix = "aiod.snapshot.global."

// SectionName is the custom section holding Prepare's answer: "ok", or
// "refused: " and the reason.
const SectionName = "aiod.snapshot"

// Code is what an engine's code rewriter saw of a module's function
// bodies (it decodes every instruction; this package does not).
type Code struct {
	MutatesTables bool
	BulkData      bool
}

// Global is one exported mutable global: its export name and value type
// (0x7F i32, 0x7E i64, 0x7D f32, 0x7C f64).
type Global struct {
	Name string
	Type byte
}

// Plan is what Read finds in a prepared module.
type Plan struct {
	// Refused is why the module is not snapshotted ("" when it is).
	Refused string
	// Globals are the mutable globals to capture and restore, in index
	// order.
	Globals []Global
}

// Prepare returns wasm with its mutable globals exported and its answer
// recorded (package doc). It fails only on a module it cannot read; a
// module it refuses is returned unchanged but for the answer.
func Prepare(wasm []byte, code Code) ([]byte, error) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, err
	}
	refuse := func(why string) ([]byte, error) { return withAnswer(wasm, "refused: "+why) }
	switch {
	case code.MutatesTables:
		return refuse("a function mutates a table")
	case code.BulkData:
		return refuse("a function uses memory.init or data.drop")
	}
	var (
		imported uint32
		memories int
		globals  []uint32 // indices of the mutable defined globals
		export   *wasmbin.Section
		hasInit  bool
	)
	for i, s := range secs {
		r := s.Reader(wasm)
		switch s.ID {
		case wasmbin.SecStart:
			return refuse("the module has a start section")
		case wasmbin.SecImport:
			imps, err := r.Imports()
			if err != nil {
				return nil, err
			}
			for _, imp := range imps {
				switch imp.Kind {
				case wasmbin.KindGlobal:
					return refuse("the module imports a global")
				case wasmbin.KindMemory:
					return refuse("the module imports its memory")
				}
			}
		case wasmbin.SecMemory:
			n, err := r.U32()
			if err != nil {
				return nil, err
			}
			memories += int(n)
		case wasmbin.SecGlobal:
			n, err := r.VecLen()
			if err != nil {
				return nil, err
			}
			for j := range n {
				t, err := r.ValType()
				if err != nil {
					return nil, err
				}
				m, err := r.Byte()
				if err != nil {
					return nil, err
				}
				if err := skipConstExpr(&r); err != nil {
					return nil, err
				}
				if m == 1 {
					if t < 0x7C || t > 0x7F {
						return refuse(fmt.Sprintf("mutable global %d is of type %#x, not a number", imported+j, t))
					}
					globals = append(globals, imported+j)
				}
			}
		case wasmbin.SecExport:
			export = &secs[i]
			n, err := r.VecLen()
			if err != nil {
				return nil, err
			}
			for range n {
				name, err := r.Name()
				if err != nil {
					return nil, err
				}
				if _, err := r.Byte(); err != nil {
					return nil, err
				}
				if _, err := r.U32(); err != nil {
					return nil, err
				}
				if strings.HasPrefix(string(name), GlobalPrefix) {
					return refuse(fmt.Sprintf("the module already exports %q", name))
				}
				hasInit = hasInit || string(name) == "_initialize"
			}
		}
	}
	switch {
	case memories != 1:
		return refuse(fmt.Sprintf("the module defines %d memories, not one", memories))
	case export == nil || !hasInit:
		return refuse("the module exports no _initialize")
	}
	// The export section again, with one export per mutable global.
	r := export.Reader(wasm)
	n, _ := r.VecLen()
	p := wasmbin.AppendU32(nil, n+uint32(len(globals)))
	p = append(p, r.Rest()...)
	for _, g := range globals {
		name := GlobalPrefix + strconv.FormatUint(uint64(g), 10)
		p = wasmbin.AppendU32(p, uint32(len(name)))
		p = append(p, name...)
		p = append(p, wasmbin.KindGlobal)
		p = wasmbin.AppendU32(p, g)
	}
	out := make([]byte, 0, len(wasm)+len(p)+64)
	out = append(out, wasm[:export.Off]...)
	out, err = wasmbin.AppendSection(out, wasmbin.SecExport, p)
	if err != nil {
		return nil, err
	}
	out = append(out, wasm[export.End:]...)
	return withAnswer(out, "ok")
}

// skipConstExpr reads a constant expression up to and including its end.
func skipConstExpr(r *wasmbin.Reader) error {
	for {
		off := r.Off()
		op, err := r.Byte()
		if err != nil {
			return err
		}
		switch op {
		case 0x0B:
			return nil
		case 0x41:
			_, err = r.I32()
		case 0x42:
			_, err = r.I64()
		case 0x43:
			_, err = r.Bytes(4)
		case 0x44:
			_, err = r.Bytes(8)
		case 0x23, 0xD2: // global.get, ref.func
			_, err = r.U32()
		case 0xD0: // ref.null
			_, err = r.Byte()
		case 0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E: // extended constants
		default:
			return wasmbin.Unsupported(off, "opcode %#x in a constant expression", op)
		}
		if err != nil {
			return err
		}
	}
}

// withAnswer appends the answer section to wasm.
func withAnswer(wasm []byte, answer string) ([]byte, error) {
	p := wasmbin.AppendU32(nil, uint32(len(SectionName)))
	p = append(append(p, SectionName...), answer...)
	out := append([]byte(nil), wasm...)
	return wasmbin.AppendSection(out, wasmbin.SecCustom, p)
}

// ErrUnprepared is Read's answer for a module Prepare did not write.
var ErrUnprepared = errors.New("wasmsnap: module not prepared for snapshots")

// Read returns the plan Prepare recorded in a prepared module.
func Read(wasm []byte) (Plan, error) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return Plan{}, err
	}
	answer, found := "", false
	var globals []Global
	types := map[uint32]byte{}
	var imported uint32
	for _, s := range secs {
		r := s.Reader(wasm)
		switch s.ID {
		case wasmbin.SecImport:
			imps, err := r.Imports()
			if err != nil {
				return Plan{}, err
			}
			for _, imp := range imps {
				if imp.Kind == wasmbin.KindGlobal {
					imported++
				}
			}
		case wasmbin.SecGlobal:
			n, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			for j := range n {
				t, err := r.ValType()
				if err != nil {
					return Plan{}, err
				}
				if _, err := r.Byte(); err != nil {
					return Plan{}, err
				}
				if err := skipConstExpr(&r); err != nil {
					return Plan{}, err
				}
				types[imported+j] = t
			}
		case wasmbin.SecExport:
			n, err := r.VecLen()
			if err != nil {
				return Plan{}, err
			}
			for range n {
				name, err := r.Name()
				if err != nil {
					return Plan{}, err
				}
				kind, err := r.Byte()
				if err != nil {
					return Plan{}, err
				}
				idx, err := r.U32()
				if err != nil {
					return Plan{}, err
				}
				if kind == wasmbin.KindGlobal && strings.HasPrefix(string(name), GlobalPrefix) {
					globals = append(globals, Global{Name: string(name), Type: types[idx]})
				}
			}
		case wasmbin.SecCustom:
			name, err := r.Name()
			if err == nil && string(name) == SectionName {
				answer, found = string(r.Rest()), true
			}
		}
	}
	switch {
	case !found:
		return Plan{}, ErrUnprepared
	case answer == "ok":
		return Plan{Globals: globals}, nil
	default:
		return Plan{Refused: strings.TrimPrefix(answer, "refused: ")}, nil
	}
}
