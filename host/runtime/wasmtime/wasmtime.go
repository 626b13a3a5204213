//go:build cgo

package wasmtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/wasmsnap"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/callwatch"
)

// Tick is the epoch period: a cancelled or expired call stops within about
// one tick of its context being done.
const Tick = 10 * time.Millisecond

// Options configure the engine.
type Options struct {
	// CacheDir persists compiled modules keyed by module digest and engine
	// version. Empty keeps them in memory only (per Compile).
	CacheDir string

	// Snapshots starts an owner's instances from a snapshot of its first
	// instance's initialised state (snapshot.go; runtime.Owned).
	Snapshots bool
	// Spares is how many spare snapshots a module keeps ready for owners
	// never seen before (wasmsnap.Options.Spares; less than one is one).
	Spares int

	// tune holds the instantiation variants BenchmarkInstantiate compares
	// (BENCHMARKS.md); the zero value is what the engine uses.
	tune tuning
}

// tuning: measured alternatives to the defaults, not used in production
// (RATIONALE.md, "wasmtime: fuel on a second engine; instantiation measured").
type tuning struct {
	pooling *pooling // the pooling allocator instead of on-demand
	noCOW   bool     // copy data segments in, not map a copy-on-write image
	linker  bool     // Linker.Instantiate each time instead of an InstancePre
	// copyRestore restores a snapshot's pages by copying them into the
	// memory instead of mapping them from a memfd (BenchmarkSnapshot).
	copyRestore bool
}

// flavor is one wasmtime engine configuration and its disk cache. The
// default flavor is unmetered; the metered one (consume_fuel, which slows
// all code compiled under it) is made on the first Compile with Fuel, so a
// host whose plugins ask for none pays nothing for it.
type flavor struct {
	eng   *wasmtime.Engine
	cache *diskCache
}

type engine struct {
	opts    Options
	plain   *flavor
	mu      sync.Mutex // makes metered
	metered atomic.Pointer[flavor]
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
}

// New returns a wasmtime engine. It starts one goroutine, the epoch ticker,
// stopped by Close.
func New(opts Options) (runtime.Engine, error) {
	e := &engine{opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	f, err := e.newFlavor(false)
	if err != nil {
		return nil, err
	}
	e.plain = f
	go e.tick()
	return e, nil
}

// newFlavor makes an engine configuration: epoch interruption always, fuel
// if metered. Metered modules are cached apart (their own key), as code
// compiled with fuel checks is not interchangeable with code without.
func (e *engine) newFlavor(metered bool) (*flavor, error) {
	cfg := wasmtime.NewConfig()
	cfg.SetEpochInterruption(true)
	cfg.SetConsumeFuel(metered)
	if e.opts.tune.pooling != nil {
		setPooling(cfg, *e.opts.tune.pooling)
	}
	if e.opts.tune.noCOW {
		cfg.SetMemoryInitCOWSet(false)
	}
	f := &flavor{eng: wasmtime.NewEngineWithConfig(cfg)}
	if e.opts.CacheDir != "" {
		key := Version()
		if metered {
			key += "+fuel"
		}
		c, err := newDiskCache(e.opts.CacheDir, key)
		if err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", e.opts.CacheDir, err)
		}
		f.cache = c
	}
	return f, nil
}

// flavorFor returns the flavor that compiles a module with fuel (metered
// or not), making the metered one on first use.
func (e *engine) flavorFor(fuel uint64) (*flavor, error) {
	if fuel == 0 {
		return e.plain, nil
	}
	if f := e.metered.Load(); f != nil {
		return f, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f := e.metered.Load(); f != nil {
		return f, nil
	}
	f, err := e.newFlavor(true)
	if err != nil {
		return nil, err
	}
	e.metered.Store(f)
	return f, nil
}

// MetersFuel: runtime.FuelMeter.
func (e *engine) MetersFuel() bool { return true }

func (e *engine) tick() {
	defer close(e.done)
	t := time.NewTicker(Tick)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.plain.eng.IncrementEpoch()
			if f := e.metered.Load(); f != nil {
				f.eng.IncrementEpoch()
			}
		}
	}
}

func (e *engine) Close(ctx context.Context) error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(e.stop)
	<-e.done
	return nil
}

var _ runtime.Precompiler = (*engine)(nil)

// Precompile is runtime.Precompiler: Precompile on e.
func (e *engine) Precompile(ctx context.Context, wasm []byte) error { return Precompile(ctx, e, wasm) }

// Precompile compiles wasm into e's disk cache (the unmetered flavor)
// without linking or checking imports (to warm a cache directory).
func Precompile(ctx context.Context, e runtime.Engine, wasm []byte) error {
	en, ok := e.(*engine)
	if !ok {
		return errors.New("not a wasmtime engine")
	}
	if en.opts.Snapshots {
		wasm, _, _ = en.snapshotForm(wasm) // what Compile compiles
	}
	m, err := en.plain.module(wasm)
	if err != nil {
		return err
	}
	m.Close()
	return nil
}

// module compiles wasm or loads it from the disk cache.
func (f *flavor) module(wasm []byte) (*wasmtime.Module, error) {
	if f.cache != nil {
		if m := f.cache.load(f.eng, wasm); m != nil {
			return m, nil
		}
	}
	m, err := wasmtime.NewModule(f.eng, wasm)
	if err != nil {
		return nil, err
	}
	if f.cache != nil {
		f.cache.store(m, wasm) // best effort: a failed write only costs a recompile
	}
	return m, nil
}

func valType(t hostfn.ValueType) *wasmtime.ValType {
	switch t {
	case hostfn.I64:
		return wasmtime.NewValType(wasmtime.KindI64)
	case hostfn.F64:
		return wasmtime.NewValType(wasmtime.KindF64)
	default:
		return wasmtime.NewValType(wasmtime.KindI32)
	}
}

func valTypes(ts []hostfn.ValueType) []*wasmtime.ValType {
	out := make([]*wasmtime.ValType, len(ts))
	for i, t := range ts {
		out[i] = valType(t)
	}
	return out
}

func (e *engine) Compile(ctx context.Context, wasm []byte, cfg runtime.Config) (runtime.Compiled, error) {
	if e.closed.Load() {
		return nil, errors.New("engine closed")
	}
	fl, err := e.flavorFor(cfg.Fuel)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", cfg.Name, err)
	}
	var (
		plan   wasmsnap.Plan
		noSnap error
	)
	if e.opts.Snapshots {
		wasm, plan, noSnap = e.snapshotForm(wasm)
	}
	m, err := fl.module(wasm)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: not a valid wasm module: %w", cfg.Name, err)
	}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	l := wasmtime.NewLinker(fl.eng)
	if err := l.DefineWasi(); err != nil {
		l.Close()
		return nil, fmt.Errorf("plugin %s: wasi: %w", cfg.Name, err)
	}
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	linked := map[string]map[string]bool{}
	add := func(fams []hostfn.Family, stub bool) error {
		for _, f := range fams {
			for _, d := range f.Defs() {
				if linked[d.Module] == nil {
					linked[d.Module] = map[string]bool{}
				}
				linked[d.Module][d.Name] = true
				fn := d.Fn
				if stub {
					fn = denyStub(d)
				}
				ty := wasmtime.NewFuncType(valTypes(d.Params), valTypes(d.Results))
				if err := l.FuncNew(d.Module, d.Name, ty, hostFunc(fn, d.Results)); err != nil {
					return fmt.Errorf("plugin %s: link %s.%s: %w", cfg.Name, d.Module, d.Name, err)
				}
			}
		}
		return nil
	}
	if err := add(cfg.Families, false); err != nil {
		return nil, err
	}
	if err := add(cfg.Stubs, true); err != nil {
		return nil, err
	}
	for _, imp := range m.Imports() {
		mod, name := imp.Module(), ""
		if n := imp.Name(); n != nil {
			name = *n
		}
		if imp.Type().FuncType() == nil {
			return nil, &runtime.ImportError{Plugin: cfg.Name, Module: mod, Name: name}
		}
		if mod == "wasi_snapshot_preview1" || linked[mod][name] {
			continue
		}
		ie := &runtime.ImportError{Plugin: cfg.Name, Module: mod, Name: name}
		return nil, ie
	}
	pre, err := newInstancePre(l, m)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: link: %w", cfg.Name, err)
	}
	ok = true
	c := &compiled{eng: fl.eng, m: m, l: l, pre: pre, linker: e.opts.tune.linker, name: cfg.Name, stderr: cfg.Stderr, pages: cfg.MemoryPages, fuel: cfg.Fuel, notice: cfg.Notice}
	if e.opts.Snapshots {
		if noSnap != nil {
			if cfg.Notice != nil {
				cfg.Notice(fmt.Sprintf("instances start without a snapshot: %v", noSnap))
			}
		} else {
			c.snaps = newSnapshots(plan, !e.opts.tune.copyRestore, e.opts.Spares)
		}
	}
	for _, x := range m.Exports() {
		if x.Type().FuncType() != nil {
			c.exports = append(c.exports, x.Name())
		}
	}
	return c, nil
}

// hostFunc adapts a hostfn body to wasmtime's callback. A panic in the body
// traps the guest; the panic value is kept on the store for classify.
func hostFunc(fn func(ctx context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64), results []hostfn.ValueType) func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	return func(caller *wasmtime.Caller, args []wasmtime.Val) (res []wasmtime.Val, trap *wasmtime.Trap) {
		st := caller.Data().(*state)
		if st.capturing { // snapshot.go
			st.panicked = errInitReach
			return nil, wasmtime.NewTrap(errInitReach.Error())
		}
		if st.call == nil {
			st.panicked = errors.New("aiod: host function called outside a call")
			return nil, wasmtime.NewTrap(st.panicked.Error())
		}
		var buf [8]uint64
		stack := buf[:max(len(args), len(results))]
		if len(stack) > len(buf) {
			stack = make([]uint64, len(stack))
		}
		for i, a := range args {
			switch a.Kind() {
			case wasmtime.KindI64:
				stack[i] = uint64(a.I64())
			case wasmtime.KindF64:
				stack[i] = math.Float64bits(a.F64())
			default:
				stack[i] = uint64(uint32(a.I32()))
			}
		}
		defer func() {
			if r := recover(); r != nil {
				err, isErr := r.(error)
				if !isErr {
					err = fmt.Errorf("%v", r)
				}
				st.panicked = err
				res, trap = nil, wasmtime.NewTrap(err.Error())
			}
		}()
		fn(st.ctx, st.call, memory{caller: caller, st: st}, stack)
		res = make([]wasmtime.Val, len(results))
		for i, t := range results {
			switch t {
			case hostfn.I64:
				res[i] = wasmtime.ValI64(int64(stack[i]))
			case hostfn.F64:
				res[i] = wasmtime.ValF64(math.Float64frombits(stack[i]))
			default:
				res[i] = wasmtime.ValI32(int32(uint32(stack[i])))
			}
		}
		return res, nil
	}
}

func denyStub(d hostfn.Def) func(ctx context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	return func(_ context.Context, _ *hostfn.Call, _ hostfn.Memory, _ []uint64) {
		panic(fmt.Errorf("%s.%s is not granted", d.Module, d.Name))
	}
}

// memory is the calling guest's linear memory, valid during one host call.
type memory struct {
	caller *wasmtime.Caller
	st     *state
}

func (m memory) data() []byte {
	if m.st.mem == nil {
		return nil
	}
	return m.st.mem.UnsafeData(m.caller)
}

func (m memory) Read(offset, n uint32) ([]byte, bool) {
	d := m.data()
	if uint64(offset)+uint64(n) > uint64(len(d)) {
		return nil, false
	}
	return d[offset : offset+n : offset+n], true
}

func (m memory) Write(offset uint32, b []byte) bool {
	d := m.data()
	if uint64(offset)+uint64(len(b)) > uint64(len(d)) {
		return false
	}
	copy(d[offset:], b)
	return true
}

type compiled struct {
	eng     *wasmtime.Engine // of the module's flavor
	m       *wasmtime.Module
	l       *wasmtime.Linker
	pre     *instancePre // l's imports resolved for m once
	linker  bool         // tuning.linker
	name    string
	stderr  io.Writer
	pages   uint32
	fuel    uint64 // per call; 0: the unmetered flavor
	exports []string
	once    sync.Once
	// snaps are the owners' snapshots (nil: none are taken); snapshot.go.
	snaps  *snapshots
	notice func(string)
}

func (c *compiled) Exports() []string { return c.exports }

// state is a store's data: what host functions see of the current call.
type state struct {
	ctx      context.Context
	call     *hostfn.Call
	mem      *wasmtime.Memory
	panicked error
	// capturing: the initialisation of an instance whose state becomes a
	// snapshot; every host function refuses (snapshot.go).
	capturing bool
}

// newStore makes a store with WASI (no preopens), the memory cap and the
// epoch callback.
func (c *compiled) newStore(stdin []byte, stdout io.Writer) (*wasmtime.Store, *state, *stopFlag, error) {
	return c.newStoreOut(stdin, stdout, nil)
}

// newStoreOut is newStore with the guest's stderr going to errw (nil:
// Config.Stderr).
func (c *compiled) newStoreOut(stdin []byte, stdout, errw io.Writer) (*wasmtime.Store, *state, *stopFlag, error) {
	st := &state{}
	s := wasmtime.NewStoreWithData(c.eng, st)
	w := wasmtime.NewWasiConfig()
	w.SetArgv([]string{c.name})
	setStdin(w, stdin)
	if errw == nil {
		errw = c.stderr
	}
	if errw == nil {
		errw = io.Discard
	}
	if stdout == nil {
		stdout = errw
	}
	setOutput(w, stdout, errw)
	s.SetWasi(w)
	if c.pages > 0 {
		s.Limiter(int64(c.pages)*65536, -1, -1, -1, -1)
	}
	flag, err := setEpochCallback(s)
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	return s, st, flag, nil
}

// watch arranges for the guest to stop at its next epoch tick once ctx is
// done: an AfterFunc (no goroutine unless ctx ends first). It returns the
// function that disarms it.
func watch(ctx context.Context, s *wasmtime.Store, flag *stopFlag) func() {
	gen := flag.arm()
	s.SetEpochDeadline(1)
	if ctx.Done() == nil {
		return func() {}
	}
	if ctx.Err() != nil {
		flag.fire(gen)
		return func() {}
	}
	stop := context.AfterFunc(ctx, func() { flag.fire(gen) })
	return func() { stop() }
}

func (c *compiled) Instantiate(ctx context.Context) (runtime.Instance, error) {
	s, st, flag, err := c.newStore(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiate: %w", c.name, err)
	}
	inst := &instance{s: s, st: st, flag: flag, pages: c.pages, fuel: c.fuel, fns: map[string]*wasmtime.Func{}}
	// _initialize may call host functions (logging); give it a Call.
	st.ctx, st.call = ctx, &hostfn.Call{Plugin: c.name}
	disarm := watch(ctx, s, flag)
	if c.fuel > 0 {
		// Instantiation is not a call: a Go guest's runtime start (a few
		// million instructions) is bounded by the deadline alone.
		err = s.SetFuel(math.MaxUint64)
	}
	if err == nil {
		err = c.instantiate(inst)
	}
	disarm()
	st.ctx, st.call = nil, nil
	if err != nil {
		e := classify(ctx, err, inst)
		inst.Close(ctx)
		return nil, fmt.Errorf("plugin %s: instantiate: %w", c.name, e)
	}
	return inst, nil
}

// instantiate links the module into inst's store and runs _initialize.
func (c *compiled) instantiate(inst *instance) error {
	return c.instantiateSeen(inst, nil)
}

// instantiateSeen is instantiate, showing fresh (if not nil) the memory
// as instantiated, before _initialize.
func (c *compiled) instantiateSeen(inst *instance, fresh func([]byte)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if err := c.link(inst); err != nil {
		return err
	}
	if fresh != nil && inst.st.mem != nil {
		fresh(inst.st.mem.UnsafeData(inst.s))
	}
	if f := inst.wi.GetFunc(inst.s, "_initialize"); f != nil {
		if _, err := f.Call(inst.s); err != nil {
			return err
		}
	}
	return nil
}

func (c *compiled) RunCommand(ctx context.Context, call *hostfn.Call, stdin []byte, maxOut int64) ([]byte, uint32, error) {
	out := &runtime.OutputBuffer{Max: maxOut}
	s, st, flag, err := c.newStore(stdin, out)
	if err != nil {
		return nil, 0, fmt.Errorf("plugin %s: %w", c.name, err)
	}
	inst := &instance{s: s, st: st, flag: flag, pages: c.pages, fuel: c.fuel}
	defer inst.Close(ctx)
	st.ctx, st.call = ctx, call
	disarm := watch(ctx, s, flag)
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		if err := inst.refuel(); err != nil {
			return err
		}
		if err := c.link(inst); err != nil {
			return err
		}
		f := inst.wi.GetFunc(s, "_start")
		if f == nil {
			return errors.New("module has no _start")
		}
		_, err = f.Call(s)
		return err
	}()
	disarm()
	st.ctx, st.call = nil, nil
	if out.Over {
		return nil, 0, hostfn.ErrResultTooLarge{Limit: maxOut}
	}
	if err != nil {
		var we *wasmtime.Error
		if errors.As(err, &we) && ctx.Err() == nil {
			if code, isExit := we.ExitStatus(); isExit {
				return out.Bytes(), uint32(code), nil
			}
		}
		return nil, 0, classify(ctx, err, inst)
	}
	return out.Bytes(), 0, nil
}

// link instantiates the module into inst's store without running
// anything, and keeps the instance and its exported memory (nil: none).
func (c *compiled) link(inst *instance) error {
	wi, err := c.newInstance(inst.s)
	if err != nil {
		return err
	}
	inst.wi = wi
	if ex := wi.GetExport(inst.s, "memory"); ex != nil {
		inst.st.mem = ex.Memory()
	}
	return nil
}

// newInstance instantiates the module into s without running anything.
func (c *compiled) newInstance(s *wasmtime.Store) (*wasmtime.Instance, error) {
	if c.linker {
		return c.l.Instantiate(s, c.m)
	}
	return c.pre.instantiate(s)
}

func (c *compiled) Close(ctx context.Context) error {
	c.once.Do(func() {
		c.snaps.close()
		c.pre.close()
		c.l.Close()
		c.m.Close()
	})
	return nil
}

type instance struct {
	s      *wasmtime.Store
	st     *state
	wi     *wasmtime.Instance
	flag   *stopFlag
	pages  uint32
	fuel   uint64 // per call; 0: unmetered
	fns    map[string]*wasmtime.Func
	watch  *callwatch.Watch // its calls' (made by the first)
	closed atomic.Bool
}

// refuel gives a metered store its fuel for the next call (each call gets
// the whole budget, as each call gets the whole deadline).
func (i *instance) refuel() error {
	if i.fuel == 0 {
		return nil
	}
	return i.s.SetFuel(i.fuel)
}

func (i *instance) Call(ctx context.Context, c *hostfn.Call, name string, params ...uint64) (int32, error) {
	if i.closed.Load() {
		return 0, fmt.Errorf("%w: instance closed", runtime.ErrTrap)
	}
	fn := i.fns[name]
	if fn == nil {
		fn = i.wi.GetFunc(i.s, name)
		if fn == nil {
			return 0, fmt.Errorf("%w: export %s not found", runtime.ErrTrap, name)
		}
		i.fns[name] = fn
	}
	var buf [4]any
	args := buf[:0]
	for _, p := range params {
		args = append(args, int32(uint32(p)))
	}
	i.st.ctx, i.st.call, i.st.panicked = ctx, c, nil
	gen := i.flag.arm()
	i.s.SetEpochDeadline(1)
	if i.watch == nil {
		i.watch = callwatch.New(i.flag.fire) // the guest stops at its next epoch tick
	}
	i.watch.Start(ctx, gen)
	res, err := i.invoke(fn, args)
	i.watch.End()
	i.st.ctx, i.st.call = nil, nil
	if err != nil {
		if c != nil && c.Overflow {
			return 0, hostfn.ErrResultTooLarge{Limit: c.MaxOutput}
		}
		return 0, classify(ctx, err, i)
	}
	switch v := res.(type) {
	case int32:
		return v, nil
	case int64:
		return int32(v), nil
	}
	return 0, nil
}

// invoke calls fn, turning a panic that escapes wasmtime-go into an error.
func (i *instance) invoke(fn *wasmtime.Func, args []any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if err := i.refuel(); err != nil {
		return nil, err
	}
	return fn.Call(i.s, args...)
}

func (i *instance) Close(ctx context.Context) error {
	if !i.closed.CompareAndSwap(false, true) {
		return nil
	}
	if i.watch != nil {
		i.watch.Close()
	}
	i.flag.release()
	i.s.Close()
	return nil
}

// classify maps an engine error to runtime's error classes.
func classify(ctx context.Context, err error, i *instance) error {
	if i.fuel > 0 && outOfFuel(err) {
		return fmt.Errorf("%w (fuel=%d): %w", runtime.ErrFuel, i.fuel, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", runtime.ErrTimeout, ctx.Err())
	}
	if i.st.panicked != nil {
		err = fmt.Errorf("%w: %w", i.st.panicked, err)
	}
	if i.pages > 0 && i.st.mem != nil && !i.closed.Load() {
		if i.st.mem.DataSize(i.s) >= uintptr(i.pages-i.pages/16)*65536 {
			return fmt.Errorf("%w (%d MiB): %w", runtime.ErrMemory, i.pages/16, err)
		}
	}
	if strings.Contains(err.Error(), "out of memory") {
		return fmt.Errorf("%w: %w", runtime.ErrMemory, err)
	}
	return fmt.Errorf("%w: %w", runtime.ErrTrap, err)
}

// trapOutOfFuel is WASMTIME_TRAP_CODE_OUT_OF_FUEL of the C API wasmtime-go
// v39 links. wasmtime-go's own wasmtime.OutOfFuel (11) is stale: the C
// enum gained ALWAYS_TRAP_ADAPTER before it. The engine table's fuel cases
// fail if this drifts.
const trapOutOfFuel wasmtime.TrapCode = 12

// outOfFuel reports whether err is wasmtime's out-of-fuel trap.
func outOfFuel(err error) bool {
	var t *wasmtime.Trap
	if !errors.As(err, &t) {
		return false
	}
	code := t.Code()
	return code != nil && *code == trapOutOfFuel
}
