package wasmsnap

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// mod assembles a module from sections (id, payload) after the header.
func mod(t testing.TB, secs ...sec) []byte {
	t.Helper()
	out := []byte(wasmbin.Header)
	for _, s := range secs {
		var err error
		if out, err = wasmbin.AppendSection(out, s.id, s.p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

type sec struct {
	id byte
	p  []byte
}

func name(s string) []byte { return append(wasmbin.AppendU32(nil, uint32(len(s))), s...) }

// The parts of a small reactor: one function type [] -> [], _initialize
// (it sets global 0 to 7), one memory, a mutable i32 global (0, init 5),
// an immutable i64 (1) and a mutable f64 (2).
var (
	secType   = sec{wasmbin.SecType, []byte{1, 0x60, 0, 0}}
	secFunc   = sec{wasmbin.SecFunction, []byte{1, 0}}
	secMem    = sec{wasmbin.SecMemory, []byte{1, 0, 1}}
	secGlobal = sec{wasmbin.SecGlobal, []byte{3,
		0x7F, 1, 0x41, 5, 0x0B,
		0x7E, 0, 0x42, 0, 0x0B,
		0x7C, 1, 0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0B}}
	secExport = sec{wasmbin.SecExport, append(append([]byte{2}, append(name("_initialize"), wasmbin.KindFunc, 0)...), append(name("memory"), wasmbin.KindMemory, 0)...)}
	secCode   = sec{wasmbin.SecCode, []byte{1, 6, 0, 0x41, 7, 0x24, 0, 0x0B}}
)

func reactor(t testing.TB, replace ...sec) []byte {
	secs := []sec{secType, secFunc, secMem, secGlobal, secExport, secCode}
	for _, r := range replace {
		for i := range secs {
			if secs[i].id == r.id {
				secs[i] = r
			}
		}
	}
	var keep []sec
	for _, s := range secs {
		if s.p != nil {
			keep = append(keep, s)
		}
	}
	return mod(t, keep...)
}

// TestPrepare: the mutable globals are exported under GlobalPrefix and
// Read finds them; the prepared module is valid, and an engine reads and
// writes its globals through the exports.
func TestPrepare(t *testing.T) {
	in := reactor(t)
	out, err := Prepare(in, Code{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Read(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Global{{GlobalPrefix + "0", 0x7F}, {GlobalPrefix + "2", 0x7C}}
	if plan.Refused != "" || len(plan.Globals) != len(want) || plan.Globals[0] != want[0] || plan.Globals[1] != want[1] {
		t.Fatalf("plan %+v, want globals %+v", plan, want)
	}
	if _, err := Read(in); !errors.Is(err, ErrUnprepared) {
		t.Errorf("Read of the original: %v, want ErrUnprepared", err)
	}

	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	m, err := r.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatalf("the prepared module does not instantiate: %v", err)
	}
	g, ok := m.ExportedGlobal(GlobalPrefix + "0").(api.MutableGlobal)
	if !ok {
		t.Fatal("global 0 is not exported as mutable")
	}
	if g.Get() != 7 {
		t.Errorf("global 0 after _initialize = %d, want 7", g.Get())
	}
	g.Set(9)
	if g.Get() != 9 {
		t.Errorf("global 0 not written through its export")
	}
	if m.ExportedGlobal(GlobalPrefix+"1") != nil {
		t.Error("an immutable global is exported")
	}
}

// TestPrepareRefuses: each reason a snapshot cannot stand for the
// initialisation is recorded, and the refused module is the original plus
// the answer.
func TestPrepareRefuses(t *testing.T) {
	importOf := func(kind byte, desc ...byte) sec {
		p := append([]byte{1}, name("env")...)
		p = append(p, name("x")...)
		p = append(p, kind)
		return sec{wasmbin.SecImport, append(p, desc...)}
	}
	for _, tc := range []struct {
		name string
		wasm []byte
		code Code
		why  string
	}{
		{"tables", reactor(t), Code{MutatesTables: true}, "mutates a table"},
		{"bulk data", reactor(t), Code{BulkData: true}, "memory.init or data.drop"},
		{"start", mod(t, secType, secFunc, secMem, secGlobal, secExport, sec{wasmbin.SecStart, []byte{0}}, secCode), Code{}, "start section"},
		{"imported global", mod(t, secType, importOf(wasmbin.KindGlobal, 0x7F, 0), secFunc, secMem, secGlobal, secExport, secCode), Code{}, "imports a global"},
		{"imported memory", mod(t, secType, importOf(wasmbin.KindMemory, 0, 1), secFunc, secGlobal, sec{wasmbin.SecExport, append([]byte{1}, append(name("_initialize"), wasmbin.KindFunc, 0)...)}, secCode), Code{}, "imports its memory"},
		{"no memory", reactor(t, sec{wasmbin.SecMemory, nil}, sec{wasmbin.SecExport, append([]byte{1}, append(name("_initialize"), wasmbin.KindFunc, 0)...)}), Code{}, "0 memories"},
		{"no _initialize", reactor(t, sec{wasmbin.SecExport, append([]byte{1}, append(name("memory"), wasmbin.KindMemory, 0)...)}), Code{}, "no _initialize"},
		{"no exports", reactor(t, sec{wasmbin.SecExport, nil}), Code{}, "no _initialize"},
		// v128.const is not read in a constant expression: not a plan
		{"v128 global", reactor(t, sec{wasmbin.SecGlobal, []byte{1, 0x7B, 1, 0xFD, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0B}}), Code{}, ""},
		{"truncated global", reactor(t, sec{wasmbin.SecGlobal, []byte{1, 0x7F, 1, 0x41}}), Code{}, ""},
		{"our prefix", reactor(t, sec{wasmbin.SecExport, append(append([]byte{2}, append(name("_initialize"), wasmbin.KindFunc, 0)...), append(name(GlobalPrefix+"0"), wasmbin.KindGlobal, 0)...)}), Code{}, "already exports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Prepare(tc.wasm, tc.code)
			if tc.why == "" { // a module Prepare cannot read: an error, never a plan
				if err == nil {
					t.Fatalf("Prepare wrote %d bytes for a module it cannot read", len(out))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(plan.Refused, tc.why) || plan.Globals != nil {
				t.Fatalf("plan %+v, want refused for %q", plan, tc.why)
			}
			if string(out[:len(tc.wasm)]) != string(tc.wasm) {
				t.Error("a refused module is changed beyond its answer")
			}
		})
	}
}

// TestReadLastAnswer: a module that carries an answer of its own gets
// Prepare's after it, and Read believes the last (Prepare's).
func TestReadLastAnswer(t *testing.T) {
	forged := reactor(t)
	forged, err := wasmbin.AppendSection(forged, wasmbin.SecCustom, append(name(SectionName), "ok"...))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Prepare(forged, Code{MutatesTables: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan, err := Read(out); err != nil || plan.Refused == "" {
		t.Fatalf("the module's own answer won: %+v, %v", plan, err)
	}
}

// FuzzPrepare: no input makes Prepare or Read panic; what Prepare writes,
// Read reads, and it is still a sequence of well-formed sections.
func FuzzPrepare(f *testing.F) {
	f.Add(reactor(f))
	f.Add(reactor(f, sec{wasmbin.SecExport, nil}))
	f.Add(mod(f, secType, secFunc, secMem, secGlobal, secExport, sec{wasmbin.SecStart, []byte{0}}, secCode))
	f.Add([]byte(wasmbin.Header))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x06\x05\x01\x7f\x01\x41"))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		Read(wasm)
		out, err := Prepare(wasm, Code{})
		if err != nil {
			return
		}
		if _, err := wasmbin.Sections(out); err != nil {
			t.Fatalf("Prepare wrote malformed sections: %v", err)
		}
		if _, err := Read(out); err != nil {
			t.Fatalf("Read of Prepare's output: %v", err)
		}
	})
}
