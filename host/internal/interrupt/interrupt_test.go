package interrupt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

// cache is shared by every runtime in the test binary: the Go modules take
// seconds to compile, and the same bytes are compiled by several tests.
var cache = wazero.NewCompilationCache()

// plugin is one instance of a Go-compiled aiod plugin with stub host
// functions: input_read serves in, output_write collects out.
type plugin struct {
	r   wazero.Runtime
	m   api.Module
	in  []byte
	out []byte
}

func load(tb testing.TB, wasm []byte, closeOnDone bool) *plugin {
	tb.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(closeOnDone))
	tb.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	p := &plugin{r: r}
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, imp := range cm.ImportedFunctions() {
		mod, name, _ := imp.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		b, ok := builders[mod]
		if !ok {
			b = r.NewHostModuleBuilder(mod)
			builders[mod] = b
			order = append(order, mod)
		}
		var fn api.GoModuleFunc
		switch mod + "." + name {
		case "aiod:core.input_read":
			fn = func(_ context.Context, m api.Module, stack []uint64) {
				if !m.Memory().Write(uint32(stack[0]), p.in) {
					panic("input_read out of bounds")
				}
			}
		case "aiod:core.output_write":
			fn = func(_ context.Context, m api.Module, stack []uint64) {
				b, ok := m.Memory().Read(uint32(stack[0]), uint32(stack[1]))
				if !ok {
					panic("output_write out of bounds")
				}
				p.out = append(p.out, b...)
				stack[0] = 0
			}
		default:
			n := len(imp.ResultTypes())
			fn = func(_ context.Context, _ api.Module, stack []uint64) {
				clear(stack[:n])
			}
		}
		b.NewFunctionBuilder().WithGoModuleFunction(fn, imp.ParamTypes(), imp.ResultTypes()).Export(name)
	}
	for _, mod := range order {
		if _, err := builders[mod].Instantiate(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	p.m, err = r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// call runs tool with args through aiod_call (op 1, a tool call).
func (p *plugin) call(ctx context.Context, tool, args string) (string, error) {
	p.in = []byte(tool + args)
	p.out = p.out[:0]
	res, err := p.m.ExportedFunction("aiod_call").Call(ctx, 1, uint64(len(tool)), uint64(len(args)))
	if err != nil {
		return "", err
	}
	if res[0] != 0 {
		return "", fmt.Errorf("aiod_call returned %d", res[0])
	}
	return string(p.out), nil
}

func instrument(tb testing.TB, wasm []byte) []byte {
	tb.Helper()
	out, err := interrupt.Instrument(wasm)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// echoWant is the echo plugin's answer to {"text":"hi"} (the engine's
// tests compare the instrumented plugin's answers; compiling a Go module
// here as well would take minutes under -race).
const echoWant = `{"content":[{"type":"text","text":"hi"}],"isError":false}`

// Hand-built modules.

func u32(v uint32) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func str(s string) []byte { return cat(u32(uint32(len(s))), []byte(s)) }

// sec builds a section; vec a vector of already-encoded entries.
func sec(id byte, payload ...[]byte) []byte {
	p := cat(payload...)
	return cat([]byte{id}, u32(uint32(len(p))), p)
}

func vec(entries ...[]byte) []byte { return cat(u32(uint32(len(entries))), cat(entries...)) }

func module(sections ...[]byte) []byte {
	return cat([]byte{0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00}, cat(sections...))
}

func body(code ...byte) []byte { return cat(u32(uint32(len(code))), code) }

// s32 is a signed LEB128.
func s32(v int32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// check is the code inserted after a loop header when the flag is global
// g and the countdown g+1 (the package documentation, spelled out).
func check(g uint32) []byte { return checkTrip(g, []byte{0x41, 0x00, 0x40, 0x00, 0x1A}) } // memory.grow 0, drop

// checkYield is check for a module whose function f is its sched_yield
// import: the trip calls it.
func checkYield(g, f uint32) []byte { return checkTrip(g, cat([]byte{0x10}, u32(f), []byte{0x1A})) } // call f, drop

func checkTrip(g uint32, trip []byte) []byte {
	c := g + 1
	return cat(
		[]byte{0x23}, u32(c), []byte{0x41, 0x01, 0x6B}, []byte{0x24}, u32(c), // count down
		[]byte{0x23}, u32(c), []byte{0x41, 0x00, 0x4C, 0x04, 0x40}, // <= 0: if
		[]byte{0x41}, s32(interrupt.Period), []byte{0x24}, u32(c), // reset
		trip,
		[]byte{0x23}, u32(g), []byte{0x04, 0x40, 0x00, 0x0B}, // flag: unreachable
		[]byte{0x0B})
}

// yieldTypes are a type section with [] -> [] (0) and [] -> [i32] (1);
// imports(t) imports env.f (type 0) and then sched_yield with type t, which
// is function 1.
var yieldTypes = sec(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7F}))

func yieldImports(t byte) []byte {
	return sec(2, vec(cat(str("env"), str("f"), []byte{0x00, 0x00}),
		cat(str(interrupt.YieldModule), str(interrupt.YieldName), []byte{0x00, t})))
}

var (
	typeVoid = sec(1, vec([]byte{0x60, 0x00, 0x00}))
	funcOne  = sec(3, vec([]byte{0x00}))
	memOne   = sec(5, vec([]byte{0x00, 0x01}))
	// flagGlobal and countGlobal are the globals Instrument adds.
	flagGlobal  = []byte{0x7F, 0x01, 0x41, 0x00, 0x0B}
	countGlobal = cat([]byte{0x7F, 0x01, 0x41}, s32(interrupt.Period), []byte{0x0B})
)

func exportG(g uint32) []byte { return cat(str(interrupt.GlobalName), []byte{0x03}, u32(g)) }

// manyLoops is a body of n empty loops: its size crosses 127 bytes once
// instrumented, so its size prefix grows.
func manyLoops(n int, g uint32) (orig, want []byte) {
	orig, want = []byte{0x00}, []byte{0x00}
	for i := 0; i < n; i++ {
		orig = append(orig, 0x03, 0x40, 0x0B)
		want = append(append(append(want, 0x03, 0x40), check(g)...), 0x0B) // append, not cat: linear in n
	}
	return append(orig, 0x0B), append(want, 0x0B)
}

// manyLoopsBody is a body of n empty loops, without the expected output.
func manyLoopsBody(n int) []byte {
	b, _ := manyLoops(n, 0)
	return b
}

// immediates is a valid module whose body holds instructions with every kind
// of immediate, some of them containing the byte 0x03 (loop); chk is
// inserted after the loop headers only. With chk set, the new global and its
// export are added.
func immediates(chk []byte) []byte {
	code := cat(
		[]byte{0x01, 0x02, 0x7F}, // locals: 2 x i32
		[]byte{0x41, 0x03},       // i32.const 3
		[]byte{0x03, 0x01},       // loop (type 1): i32 -> i32
		chk,
		[]byte{0x41, 0xFF, 0x00}, // i32.const 127
		[]byte{0x6A},             // i32.add
		[]byte{0x28, 0x02, 0x03}, // i32.load align=2 offset=3
		[]byte{0x0B},             // end
		[]byte{0x21, 0x00},       // local.set 0
		[]byte{0x03, 0x7F},       // loop (result i32)
		chk,
		[]byte{0x41, 0x03, 0x0B, 0x1A}, // i32.const 3 end drop
		[]byte{0x03, 0x83, 0x80, 0x00}, // loop (type 3, padded s33): ->
		chk,
		[]byte{0x0B},
		[]byte{0x42, 0x83, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1A}, // i64.const 3 (10 bytes) drop
		[]byte{0x43, 0x03, 0x03, 0x03, 0x03, 0x1A},                                     // f32.const drop
		[]byte{0x44, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x1A},             // f64.const drop
		[]byte{0x02, 0x40, 0x41, 0x00, 0x0E, 0x02, 0x00, 0x00, 0x00, 0x0B},             // block i32.const 0 br_table 0 0 0 end
		[]byte{0x3F, 0x00, 0x1A},                                           // memory.size drop
		[]byte{0x41, 0x03, 0x41, 0x03, 0x41, 0x03, 0xFC, 0x0B, 0x00},       // memory.fill
		[]byte{0x41, 0x03, 0x41, 0x03, 0x41, 0x03, 0xFC, 0x0A, 0x00, 0x00}, // memory.copy
		[]byte{0x20, 0x01, 0x22, 0x00, 0x1A},                               // local.get 1 local.tee 0 drop
		[]byte{0x10, 0x00},                                                 // call 0
		[]byte{0xD2, 0x00, 0xD1, 0x1A},                                     // ref.func 0 ref.is_null drop
		[]byte{0xD0, 0x70, 0x1A},                                           // ref.null func drop
		[]byte{0x41, 0x03, 0x41, 0x03, 0x41, 0x00, 0x1C, 0x01, 0x7F, 0x1A}, // select (result i32) drop
		[]byte{0x43, 0x00, 0x00, 0x80, 0x3F, 0xFC, 0x00, 0x1A},             // i32.trunc_sat_f32_s drop
		[]byte{0x0B},
	)
	sections := [][]byte{
		sec(1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x01, 0x7F, 0x01, 0x7F}, []byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x00})),
		funcOne,
		sec(5, vec([]byte{0x00, 0x01})),
	}
	if chk != nil {
		sections = append(sections, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))))
	}
	// The function declares itself for ref.func through a declarative
	// element segment.
	sections = append(sections, sec(9, vec([]byte{0x03, 0x00, 0x01, 0x00})), sec(10, vec(body(code...))))
	return module(sections...)
}

func TestInstrumentBytes(t *testing.T) {
	loops20, loops20Want := manyLoops(20, 0)
	for _, tc := range []struct {
		name     string
		in, want []byte
	}{{
		name: "no global or export section",
		in:   module(typeVoid, funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		want: module(typeVoid, funcOne, memOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(cat([]byte{0x00, 0x03, 0x40}, check(0), []byte{0x0B, 0x0B})...)))),
	}, {
		name: "custom sections stay in place",
		in: module(sec(0, str("a"), []byte{1, 2}), typeVoid, funcOne, memOne, sec(0, str("b")),
			sec(10, vec(body(0x00, 0x0B))), sec(0, str("c"), []byte{3})),
		want: module(sec(0, str("a"), []byte{1, 2}), typeVoid, funcOne, memOne, sec(0, str("b")),
			sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(0x00, 0x0B))), sec(0, str("c"), []byte{3})),
	}, {
		name: "a memory and nothing else",
		in:   module(memOne),
		want: module(memOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0)))),
	}, {
		name: "imported and defined globals, existing export",
		in: module(typeVoid,
			sec(2, vec(cat(str("env"), str("f"), []byte{0x00, 0x00}), cat(str("env"), str("g"), []byte{0x03, 0x7F, 0x00}),
				cat(str("env"), str("m"), []byte{0x02, 0x01, 0x01, 0x02}), cat(str("env"), str("h"), []byte{0x03, 0x7E, 0x01}))),
			funcOne,
			sec(6, vec([]byte{0x7F, 0x01, 0x41, 0x05, 0x0B})),
			sec(7, vec(cat(str("spin"), []byte{0x00, 0x01}))),
			sec(10, vec(body(0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B)))),
		want: module(typeVoid,
			sec(2, vec(cat(str("env"), str("f"), []byte{0x00, 0x00}), cat(str("env"), str("g"), []byte{0x03, 0x7F, 0x00}),
				cat(str("env"), str("m"), []byte{0x02, 0x01, 0x01, 0x02}), cat(str("env"), str("h"), []byte{0x03, 0x7E, 0x01}))),
			funcOne,
			sec(6, vec([]byte{0x7F, 0x01, 0x41, 0x05, 0x0B}, flagGlobal, countGlobal)),
			sec(7, vec(cat(str("spin"), []byte{0x00, 0x01}), exportG(3))),
			sec(10, vec(body(cat([]byte{0x00, 0x03, 0x40}, check(3), []byte{0x0C, 0x00, 0x0B, 0x0B})...)))),
	}, {
		name: "body size grows past one LEB byte",
		in:   module(typeVoid, sec(3, vec([]byte{0x00}, []byte{0x00})), memOne, sec(10, vec(body(loops20...), body(0x00, 0x0B)))),
		want: module(typeVoid, sec(3, vec([]byte{0x00}, []byte{0x00})), memOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(loops20Want...), body(0x00, 0x0B)))),
	}, {
		name: "a sched_yield import: the trip calls it",
		in:   module(yieldTypes, yieldImports(1), funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		want: module(yieldTypes, yieldImports(1), funcOne, memOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(cat([]byte{0x00, 0x03, 0x40}, checkYield(0, 1), []byte{0x0B, 0x0B})...)))),
	}, {
		name: "a sched_yield import without a memory",
		in:   module(yieldTypes, yieldImports(1), funcOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		want: module(yieldTypes, yieldImports(1), funcOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(cat([]byte{0x00, 0x03, 0x40}, checkYield(0, 1), []byte{0x0B, 0x0B})...)))),
	}, {
		name: "a sched_yield import of another type: memory.grow",
		in:   module(yieldTypes, yieldImports(0), funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		want: module(yieldTypes, yieldImports(0), funcOne, memOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(cat([]byte{0x00, 0x03, 0x40}, check(0), []byte{0x0B, 0x0B})...)))),
	}, {
		name: "a sched_yield import whose type is out of range: memory.grow",
		in:   module(yieldTypes, yieldImports(7), funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		want: module(yieldTypes, yieldImports(7), funcOne, memOne, sec(6, vec(flagGlobal, countGlobal)), sec(7, vec(exportG(0))),
			sec(10, vec(body(cat([]byte{0x00, 0x03, 0x40}, check(0), []byte{0x0B, 0x0B})...)))),
	}, {
		name: "immediates are skipped, loop blocktypes of every form",
		in:   immediates(nil),
		want: immediates(check(0)),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := interrupt.Instrument(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got  % x\nwant % x", got, tc.want)
			}
		})
	}
}

// TestInstrumentCompiles compiles the hand-built modules (those that are
// valid wasm) before and after, and runs an interruptible spin loop whose
// global index sits behind an imported and a defined global.
func TestInstrumentCompiles(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig())
	defer r.Close(ctx)
	loops, _ := manyLoops(30, 0)
	for _, in := range [][]byte{
		module(memOne),
		module(typeVoid, funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))),
		module(typeVoid, funcOne, memOne, sec(10, vec(body(loops...)))),
		module(sec(0, str("x")), typeVoid, funcOne, memOne, sec(0, str("y")), sec(10, vec(body(0x00, 0x0B)))),
		immediates(nil),
	} {
		if _, err := r.CompileModule(ctx, in); err != nil {
			t.Fatalf("input does not compile: %v", err)
		}
		out := instrument(t, in)
		cm, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("instrumented module does not compile: %v\n% x", err, out)
		}
		m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := m.ExportedGlobal(interrupt.GlobalName).(api.MutableGlobal); !ok || g.Type() != api.ValueTypeI32 || g.Get() != 0 {
			t.Fatalf("export %s: %v", interrupt.GlobalName, m.ExportedGlobal(interrupt.GlobalName))
		}
	}

	// env exports an immutable i32 global; main imports it, defines one
	// more, and spins. Only the new global (index 2) stops the spin.
	env := module(sec(6, vec([]byte{0x7F, 0x00, 0x41, 0x00, 0x0B})), sec(7, vec(cat(str("g"), []byte{0x03, 0x00}))))
	if _, err := r.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	main := module(typeVoid,
		sec(2, vec(cat(str("env"), str("g"), []byte{0x03, 0x7F, 0x00}))),
		funcOne,
		memOne,
		sec(6, vec([]byte{0x7F, 0x01, 0x41, 0x00, 0x0B})),
		sec(7, vec(cat(str("spin"), []byte{0x00, 0x00}), cat(str("mine"), []byte{0x03, 0x01}))),
		sec(10, vec(body(0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B))))
	m, err := r.InstantiateWithConfig(ctx, instrument(t, main), wazero.NewModuleConfig().WithName("main"))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := m.ExportedGlobal(interrupt.GlobalName).(api.MutableGlobal)
	if !ok || g.Get() != 0 {
		t.Fatalf("export %s: %v", interrupt.GlobalName, m.ExportedGlobal(interrupt.GlobalName))
	}
	m.ExportedGlobal("mine").(api.MutableGlobal).Set(7) // not the flag
	done := make(chan error, 1)
	go func() {
		_, err := m.ExportedFunction("spin").Call(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("spin returned early: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.Set(1)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("spin: got %v, want an unreachable trap", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("spin still running 2s after the interrupt")
	}
}

func TestInstrumentErrors(t *testing.T) {
	valid := module(typeVoid, funcOne, memOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B))))
	withBody := func(code ...byte) []byte { return module(typeVoid, funcOne, memOne, sec(10, vec(body(code...)))) }
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, interrupt.ErrMalformed},
		{"bad magic", []byte("\x00asn\x01\x00\x00\x00"), interrupt.ErrMalformed},
		{"bad version", []byte("\x00asm\x02\x00\x00\x00"), interrupt.ErrMalformed},
		{"section size past end", cat(module(), []byte{0x01, 0x05, 0x00}), interrupt.ErrMalformed},
		{"section size LEB too long", cat(module(), []byte{0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), interrupt.ErrMalformed},
		{"section size LEB overflows u32", cat(module(), []byte{0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}), interrupt.ErrMalformed},
		{"section size LEB unterminated", cat(module(), []byte{0x01, 0x80}), interrupt.ErrMalformed},
		{"unknown section", module(sec(14)), interrupt.ErrMalformed},
		{"sections out of order", module(funcOne, typeVoid), interrupt.ErrMalformed},
		{"section repeated", module(typeVoid, typeVoid), interrupt.ErrMalformed},
		{"code section too short for its body", module(typeVoid, funcOne, memOne, []byte{0x0A, 0x03, 0x01, 0x04, 0x00}, []byte{0x0B, 0x0B, 0x0B}), interrupt.ErrMalformed},
		{"code section trailing bytes", module(typeVoid, funcOne, memOne, sec(10, vec(body(0x00, 0x0B)), []byte{0x00})), interrupt.ErrMalformed},
		{"import section trailing bytes", module(sec(2, vec(), []byte{0x00})), interrupt.ErrMalformed},
		{"export section truncated", module(sec(7, vec(str("abc")))), interrupt.ErrMalformed},
		{"i32.const LEB too long", withBody(0x00, 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1A, 0x0B), interrupt.ErrMalformed},
		{"i32.const LEB overflows", withBody(0x00, 0x41, 0x80, 0x80, 0x80, 0x80, 0x40, 0x1A, 0x0B), interrupt.ErrMalformed},
		{"i64.const truncated", withBody(0x00, 0x42, 0x80), interrupt.ErrMalformed},
		{"f64.const truncated", withBody(0x00, 0x44, 0x00, 0x00), interrupt.ErrMalformed},
		{"loop blocktype truncated", withBody(0x00, 0x03), interrupt.ErrMalformed},
		{"br_table truncated", withBody(0x00, 0x0E, 0x05, 0x00, 0x0B), interrupt.ErrMalformed},
		{"locals truncated", withBody(0x02, 0x01, 0x7F), interrupt.ErrMalformed},
		{"already exported", module(sec(7, vec(cat(str(interrupt.GlobalName), []byte{0x00, 0x00})))), interrupt.ErrExported},
		{"SIMD", withBody(0x00, 0xFD, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1A, 0x0B), interrupt.ErrUnsupported},
		{"threads", withBody(0x00, 0xFE, 0x03, 0x00, 0x0B), interrupt.ErrUnsupported},
		{"return_call", withBody(0x00, 0x12, 0x00, 0x0B), interrupt.ErrUnsupported},
		{"try", withBody(0x00, 0x06, 0x40, 0x0B, 0x0B), interrupt.ErrUnsupported},
		{"try_table", withBody(0x00, 0x1F, 0x40, 0x00, 0x0B, 0x0B), interrupt.ErrUnsupported},
		{"multi-memory load", withBody(0x00, 0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x1A, 0x0B), interrupt.ErrUnsupported},
		{"memory.size index 1", withBody(0x00, 0x3F, 0x01, 0x1A, 0x0B), interrupt.ErrUnsupported},
		{"unknown 0xFC", withBody(0x00, 0xFC, 0x20, 0x0B), interrupt.ErrUnsupported},
		{"unknown opcode", withBody(0x00, 0xC5, 0x0B), interrupt.ErrUnsupported},
		{"GC local type", withBody(0x01, 0x01, 0x64, 0x70, 0x0B), interrupt.ErrUnsupported},
		{"tag section", module(typeVoid, sec(13, vec([]byte{0x00, 0x00}))), interrupt.ErrUnsupported},
		{"start section", module(typeVoid, funcOne, memOne, sec(8, u32(0)), sec(10, vec(body(0x00, 0x0B)))), interrupt.ErrUnsupported},
		{"no memory", module(typeVoid, funcOne, sec(10, vec(body(0x00, 0x03, 0x40, 0x0B, 0x0B)))), interrupt.ErrUnsupported},
		{"nothing but loops", module(typeVoid, funcOne, memOne, sec(10, vec(body(manyLoopsBody(50000)...)))), interrupt.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := interrupt.Instrument(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v (%d bytes), want %v", err, len(out), tc.want)
			}
			if out != nil {
				t.Fatalf("output with error")
			}
		})
	}

	// Every truncation of a valid module that does not end at a section
	// boundary is an error.
	boundaries := map[int]bool{8: true}
	for off := 8; off < len(valid); {
		size := int(valid[off+1]) // single-byte sizes in this module
		off += 2 + size
		boundaries[off] = true
	}
	for i := 0; i < len(valid); i++ {
		if _, err := interrupt.Instrument(valid[:i]); err == nil && !boundaries[i] {
			t.Errorf("truncated to %d bytes: no error", i)
		}
	}
}

func TestTruncatedGoModule(t *testing.T) {
	wasm := testplugins.Wasm(t, "plugins/examples/echo")
	boundaries := map[int]bool{}
	for off := 8; off < len(wasm); {
		size, n := 0, 0
		for shift := 0; ; shift += 7 {
			c := wasm[off+1+n]
			size |= int(c&0x7F) << shift
			n++
			if c&0x80 == 0 {
				break
			}
		}
		off += 1 + n + size
		boundaries[off] = true
	}
	step := len(wasm)/97 + 1 // ~100 truncations: each is a pass over megabytes, slow under -race
	for i := 0; i < len(wasm); i += step {
		if _, err := interrupt.Instrument(wasm[:i]); err == nil && !boundaries[i] && i >= 8 {
			t.Errorf("truncated to %d bytes: no error", i)
		}
	}
	// A corrupted byte in the code section either fails or yields a
	// module; it never panics.
	for i := len(wasm) / 3; i < len(wasm)/3+16; i++ {
		c := bytes.Clone(wasm)
		c[i] ^= 0xFF
		interrupt.Instrument(c) //nolint:errcheck
	}
}

func BenchmarkEchoCall(b *testing.B) {
	orig := testplugins.Wasm(b, "plugins/examples/echo")
	for _, bc := range []struct {
		name        string
		wasm        []byte
		closeOnDone bool
	}{
		{"instrumented", instrument(b, orig), false},
		{"close-on-context-done", orig, true},
		{"unprotected", orig, false}, // baseline: no termination check at all
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := load(b, bc.wasm, bc.closeOnDone)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				got, err := p.call(ctx, "echo", `{"text":"hi"}`)
				if err != nil || got != echoWant {
					b.Fatalf("%q, %v", got, err)
				}
			}
		})
	}
}

func BenchmarkInstrument(b *testing.B) {
	wasm := testplugins.Wasm(b, "plugins/examples/echo")
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := interrupt.Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}
