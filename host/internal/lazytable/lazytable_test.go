package lazytable_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/lazytable"
	"github.com/aiodhq/aiod/host/internal/wasmbin"
)

// spec describes a test module: n functions f_k () -> i32 returning k, a
// function of another type at position odd of the segment, an exported
// "call" (i32) -> i32 that calls the table indirectly at its argument, and
// variations the rewrite must refuse.
type spec struct {
	n, offset, tableMin int
	odd                 int  // the segment's entry of type (i32) -> () (-1: none)
	exportTable         bool // the table is exported
	importTable         bool // the table is imported
	twoSegments         bool
	globalOffset        bool // the segment's offset is a global.get
	tableGet            bool // "call" reads the table with table.get first
	passive             bool // the segment is passive (form 1)
}

func (s spec) module() []byte {
	sec := func(out []byte, id byte, p []byte) []byte {
		out, err := wasmbin.AppendSection(out, id, p)
		if err != nil {
			panic(err)
		}
		return out
	}
	u := wasmbin.AppendU32
	out := []byte(wasmbin.Header)
	// types: 0 () -> i32, 1 (i32) -> i32, 2 (i32) -> ()
	out = sec(out, wasmbin.SecType, []byte{3, 0x60, 0, 1, 0x7F, 0x60, 1, 0x7F, 1, 0x7F, 0x60, 1, 0x7F, 0})
	imports := 0
	if s.importTable || s.globalOffset {
		p := []byte{}
		k := 0
		if s.importTable {
			k++
		}
		if s.globalOffset {
			k++
		}
		p = u(p, uint32(k))
		if s.importTable {
			p = append(p, 3, 'e', 'n', 'v', 1, 't', 1, 0x70, 0)
			p = u(p, uint32(s.tableMin))
		}
		if s.globalOffset {
			p = append(p, 3, 'e', 'n', 'v', 1, 'g', 3, 0x7F, 0)
		}
		out = sec(out, wasmbin.SecImport, p)
	}
	// functions: f_0..f_n-1, then call
	funcs := s.n + 1
	p := u(nil, uint32(funcs))
	for k := range s.n {
		if k == s.odd {
			p = append(p, 2)
		} else {
			p = append(p, 0)
		}
	}
	p = append(p, 1)
	out = sec(out, wasmbin.SecFunction, p)
	if !s.importTable {
		out = sec(out, wasmbin.SecTable, u([]byte{1, 0x70, 0}, uint32(s.tableMin)))
	}
	out = sec(out, wasmbin.SecMemory, []byte{1, 0, 1})
	p = []byte{}
	exports := 1
	if s.exportTable {
		exports++
	}
	p = u(p, uint32(exports))
	p = append(p, 4, 'c', 'a', 'l', 'l', 0)
	p = u(p, uint32(imports+s.n))
	if s.exportTable {
		p = append(p, 1, 't', 1, 0)
	}
	out = sec(out, wasmbin.SecExport, p)
	segment := func(p []byte, off int) []byte {
		switch {
		case s.passive:
			p = append(p, 1, 0)
		case s.globalOffset:
			p = append(p, 0, 0x23, 0, 0x0B)
		default:
			p = append(p, 0, 0x41)
			p = wasmbin.AppendI32(p, int32(off))
			p = append(p, 0x0B)
		}
		p = u(p, uint32(s.n))
		for k := range s.n {
			p = u(p, uint32(k))
		}
		return p
	}
	if s.twoSegments {
		out = sec(out, wasmbin.SecElement, segment(segment([]byte{2}, s.offset), s.offset+s.n))
	} else {
		out = sec(out, wasmbin.SecElement, segment([]byte{1}, s.offset))
	}
	p = u(nil, uint32(funcs))
	for k := range s.n {
		var body []byte
		if k == s.odd {
			body = []byte{0, 0x0B}
		} else {
			body = wasmbin.AppendI32([]byte{0, 0x41}, int32(k))
			body = append(body, 0x0B)
		}
		p = append(u(p, uint32(len(body))), body...)
	}
	body := []byte{0}
	if s.tableGet {
		body = append(body, 0x20, 0, 0x25, 0, 0x1A) // local.get 0, table.get 0, drop
	}
	body = append(body, 0x20, 0, 0x11, 0, 0, 0x0B) // local.get 0, call_indirect type 0 table 0
	p = append(u(p, uint32(len(body))), body...)
	out = sec(out, wasmbin.SecCode, p)
	return out
}

// lazy is the rewrite as the wazero engine runs it: the interrupt rewrite
// with the check inserted, then Apply.
func lazy(t *testing.T, wasm []byte) []byte {
	t.Helper()
	plan, err := lazytable.Read(wasm)
	if err != nil || plan.Refused != "" {
		t.Fatalf("refused: %v %q", err, plan.Refused)
	}
	iw, info, err := interrupt.InstrumentBefore(wasm, plan.CallEnsure())
	if err != nil {
		t.Fatal(err)
	}
	if info.TableOps {
		t.Fatal("table instructions reported in a module without any")
	}
	out, err := lazytable.Apply(iw, plan)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// outcomes calls "call" at every index from 0 to past the table, twice
// each (the second time the entry is set), and returns what each call
// gave: the result or the error's first line.
func outcomes(t *testing.T, wasm []byte, max int) []string {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	m, err := r.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	fn := m.ExportedFunction("call")
	var out []string
	for i := range max {
		for range 2 {
			res, err := fn.Call(ctx, uint64(i))
			if err != nil {
				out = append(out, strings.SplitN(err.Error(), "\n", 2)[0])
				continue
			}
			out = append(out, fmt.Sprint(res[0]))
		}
	}
	return out
}

// TestSameCalls: every indirect call through the lazy table gives what it
// gives through the eager one: the function at each index of the segment,
// a trap for the null entries before and after it, for the index past the
// table and for the entry of the wrong type, with the same message.
func TestSameCalls(t *testing.T) {
	for _, s := range []spec{
		{n: 300, offset: 1, tableMin: 310, odd: 5},
		{n: 256, offset: 0, tableMin: 256, odd: -1},
		{n: 400, offset: 1000, tableMin: 1400, odd: 399},
	} {
		wasm := s.module()
		eager, _, err := interrupt.InstrumentInfo(wasm)
		if err != nil {
			t.Fatal(err)
		}
		lw := lazy(t, wasm)
		secs, err := wasmbin.Sections(lw)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range secs {
			if sec.ID == wasmbin.SecElement && sec.Payload(lw)[1] != 3 {
				t.Fatalf("the element segment is of form %d, not declarative", sec.Payload(lw)[1])
			}
		}
		want, got := outcomes(t, eager, s.tableMin+3), outcomes(t, lw, s.tableMin+3)
		if len(want) != len(got) {
			t.Fatalf("%d outcomes against %d", len(got), len(want))
		}
		traps := 0
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("%+v: call %d (index %d): %q, eager %q", s, i, i/2, got[i], want[i])
			}
			if strings.Contains(want[i], "wasm error") {
				traps++
			}
		}
		// The entries outside the segment, the one past the table and the
		// odd one trap, twice each.
		wantTraps := 2 * (s.tableMin - s.n + 3)
		if s.odd >= 0 {
			wantTraps += 2
		}
		if traps != wantTraps {
			t.Fatalf("%+v: %d traps, want %d", s, traps, wantTraps)
		}
	}
}

// TestRefused: the modules whose table the rewrite cannot fill lazily
// without the guest seeing it are left alone, each with its reason.
func TestRefused(t *testing.T) {
	base := spec{n: 300, offset: 1, tableMin: 310, odd: -1}
	for _, c := range []struct {
		name string
		edit func(*spec)
		want string
	}{
		{"exported table", func(s *spec) { s.exportTable = true }, "exports its table"},
		{"imported table", func(s *spec) { s.importTable = true }, "imports a table"},
		{"two segments", func(s *spec) { s.twoSegments = true; s.tableMin = 700 }, "2 element segments"},
		{"global offset", func(s *spec) { s.globalOffset = true }, "not an i32.const"},
		{"passive segment", func(s *spec) { s.passive = true }, "form 1"},
		{"few entries", func(s *spec) { s.n = lazytable.MinEntries - 1 }, "fewer than"},
		{"too many entries", func(s *spec) { s.n = lazytable.MaxEntries + 1; s.tableMin = s.n + 10 }, "more than"},
		{"past the minimum", func(s *spec) { s.tableMin = 300 }, "past the table's minimum"},
	} {
		s := base
		c.edit(&s)
		plan, err := lazytable.Read(s.module())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.Contains(plan.Refused, c.want) {
			t.Fatalf("%s: refused %q, want %q", c.name, plan.Refused, c.want)
		}
		if _, err := lazytable.Apply(s.module(), plan); !errors.Is(err, lazytable.ErrRefused) {
			t.Fatalf("%s: Apply: %v", c.name, err)
		}
	}
}

// TestTableOps: a table instruction other than call_indirect in the code
// is reported (the engine then keeps the eager table: table.get would see
// the nulls).
func TestTableOps(t *testing.T) {
	s := spec{n: 300, offset: 1, tableMin: 310, odd: -1, tableGet: true}
	_, info, err := interrupt.InstrumentInfo(s.module())
	if err != nil {
		t.Fatal(err)
	}
	if !info.TableOps {
		t.Fatal("table.get not reported")
	}
	s.tableGet = false
	if _, info, _ = interrupt.InstrumentInfo(s.module()); info.TableOps {
		t.Fatal("table instructions reported in a module without any")
	}
}

// TestMalformed: a segment naming a function the module does not have is
// an error, not a plan.
func TestMalformed(t *testing.T) {
	s := spec{n: 300, offset: 1, tableMin: 310, odd: -1}
	wasm := s.module()
	// Drop the last function's declaration: the segment's last entry now
	// names a function past the end (the code section no longer matches,
	// which Read does not look at).
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	out = append(out, wasmbin.Header...)
	for _, sec := range secs {
		p := sec.Payload(wasm)
		if sec.ID == wasmbin.SecFunction {
			p = append(wasmbin.AppendU32(nil, 299), p[2:len(p)-2]...)
		}
		if out, err = wasmbin.AppendSection(out, sec.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lazytable.Read(out); err == nil {
		t.Fatal("a segment naming a missing function was planned")
	}
}

// FuzzRead: Read and Apply never panic on any input, and what Apply
// writes is a sequence of well-formed sections.
func FuzzRead(f *testing.F) {
	f.Add(spec{n: 300, offset: 1, tableMin: 310, odd: 5}.module())
	f.Add(spec{n: 300, offset: 1, tableMin: 310, odd: -1, exportTable: true}.module())
	f.Add([]byte(wasmbin.Header))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		plan, err := lazytable.Read(wasm)
		if err != nil || plan.Refused != "" {
			return
		}
		out, err := lazytable.Apply(wasm, plan)
		if err != nil {
			return
		}
		if _, err := wasmbin.Sections(out); err != nil {
			t.Fatalf("Apply wrote a malformed module: %v", err)
		}
	})
}
