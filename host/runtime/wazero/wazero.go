// Package wazero implements host/runtime on tetratelabs/wazero (pure Go).
package wazero

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/callwatch"
)

// Options configure the engine.
type Options struct {
	// CacheDir persists compiled code keyed by module digest. Empty keeps
	// the cache in memory only.
	CacheDir string
	// Interpreter forces the interpreter instead of the compiler.
	Interpreter bool
	// Snapshots starts an owner's instances from a snapshot of its first
	// instance's initialised state (snapshot.go).
	Snapshots bool
	// Spares is how many spare snapshots a module keeps ready for owners
	// never seen before (wasmsnap.Options.Spares; less than one is one).
	Spares int
}

type engine struct {
	opts   Options
	cache  wazero.CompilationCache
	closed atomic.Bool
}

// New returns a wazero engine.
func New(opts Options) (runtime.Engine, error) {
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &engine{opts: opts, cache: cache}, nil
}

func (e *engine) Close(ctx context.Context) error {
	if !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	return e.cache.Close(ctx)
}

var _ runtime.Precompiler = (*engine)(nil)

// Precompile compiles wasm into e's compilation cache without linking or
// checking imports (to warm a cache directory): runtime.Precompiler.
func (e *engine) Precompile(ctx context.Context, wasm []byte) error {
	p := e.prepare(wasm)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(e.cache).WithCloseOnContextDone(p.checked()))
	defer r.Close(ctx)
	_, err := r.CompileModule(ctx, p.wasm)
	return err
}

// mergeSegments switches mergeData, useInterrupt the loop-header interrupt,
// useImage the data image, useLazyTable the table filled on first use
// (tests and benchmarks compare with them off).
var mergeSegments, useInterrupt, useImage, useLazyTable = true, true, true, true

// compilerPlatform reports whether wazero compiles to native code here (as
// wazero.NewRuntimeConfig decides; it uses the interpreter elsewhere).
func compilerPlatform() bool {
	switch goruntime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "windows":
		return goruntime.GOARCH == "amd64" || goruntime.GOARCH == "arm64"
	}
	return false
}

// prepared is a module ready to compile.
type prepared struct {
	wasm []byte
	// noInterrupt is why the module is not instrumented (nil if it is):
	// it then runs with wazero's own checks (close-on-context-done).
	noInterrupt error
	// image is the data image when wasm was compiled without its data
	// section (image.go); only for an instrumented module, whose start
	// functions aiod runs itself, after applying it.
	image []byte
}

// checked reports whether the module needs wazero's own termination
// checks (WithCloseOnContextDone).
func (p prepared) checked() bool { return p.noInterrupt != nil }

// prepare is the rewrite every module goes through before compiling (the
// same in Precompile, so that a warmed cache is hit): the loop-header
// interrupt (package interrupt) when the rewriter handles the module, then
// mergeData; read from the prepared-module cache when it holds the result
// (prepared.go).
func (e *engine) prepare(wasm []byte) prepared {
	p := e.cachedRewrite(wasm)
	if useImage && p.noInterrupt == nil {
		if stripped, image, err := splitImage(p.wasm); err == nil {
			p.wasm, p.image = stripped, image
		}
	}
	return p
}

// cachedRewrite is rewrite through the prepared-module cache.
func (e *engine) cachedRewrite(wasm []byte) prepared {
	path := ""
	if !e.opts.Interpreter && compilerPlatform() {
		path = e.preparedPath(wasm)
	}
	if path != "" {
		if b, err := loadPrepared(path); err == nil {
			return prepared{wasm: b}
		}
	}
	p := e.rewrite(wasm)
	if path != "" && p.noInterrupt == nil {
		_ = storePrepared(path, p.wasm) // (prepared.go) a failure costs the next compile the rewrite
	}
	return p
}

// rewrite is prepare without its cache.
func (e *engine) rewrite(wasm []byte) prepared {
	p := prepared{wasm: wasm, noInterrupt: errors.New("interrupt off")}
	switch {
	case e.opts.Interpreter || !compilerPlatform():
		// The interpreter is Go code: preemptible, and the host's write of
		// the flag would race with its read in Go. wazero's checks there.
		p.noInterrupt = errors.New("interrupt: interpreter")
	case useInterrupt && mergeSegments:
		pw, err := preparedForm(wasm) // (prepared.go) what the cache holds
		if err == nil {
			return prepared{wasm: pw}
		}
		p.noInterrupt = err
	case useInterrupt:
		iw, err := interrupt.Instrument(wasm)
		if err == nil {
			p.wasm = iw
		}
		p.noInterrupt = err
	}
	if mergeSegments {
		p.wasm = mergeData(p.wasm)
	}
	return p
}

// callKey is the key of a call's hostfn.Call in its context.
type callKey = hostfn.CallKey

func callFrom(ctx context.Context) *hostfn.Call {
	switch c := ctx.Value(callKey{}).(type) {
	case *hostfn.Call:
		if c != nil {
			return c
		}
	case capturing: // (snapshot.go)
		panic(errInitReach)
	}
	panic(errors.New("aiod: host function called outside a call"))
}

func valueTypes(ts []hostfn.ValueType) []api.ValueType {
	out := make([]api.ValueType, len(ts))
	for i, t := range ts {
		out[i] = api.ValueType(t)
	}
	return out
}

func (e *engine) Compile(ctx context.Context, wasm []byte, cfg runtime.Config) (runtime.Compiled, error) {
	if e.closed.Load() {
		return nil, errors.New("engine closed")
	}
	rcfg := wazero.NewRuntimeConfig()
	if e.opts.Interpreter {
		rcfg = wazero.NewRuntimeConfigInterpreter()
	}
	// Deadlines: a module the rewriter handles checks an exported flag at
	// its loop headers (package interrupt) and needs nothing else; any other
	// runs with wazero's own checks (RATIONALE.md, "The loop-header
	// interrupt, finished").
	p := e.prepare(wasm)
	rcfg = rcfg.WithCompilationCache(e.cache).WithCloseOnContextDone(p.checked())
	if cfg.MemoryPages > 0 {
		rcfg = rcfg.WithMemoryLimitPages(cfg.MemoryPages)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rcfg)
	ok := false
	defer func() {
		if !ok {
			r.Close(ctx)
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return nil, fmt.Errorf("plugin %s: wasi: %w", cfg.Name, err)
	}
	linked := map[string]map[string]bool{}
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	add := func(fams []hostfn.Family, stub bool) {
		for _, f := range fams {
			for _, d := range f.Defs() {
				b, okb := builders[d.Module]
				if !okb {
					b = r.NewHostModuleBuilder(d.Module)
					builders[d.Module] = b
					linked[d.Module] = map[string]bool{}
					order = append(order, d.Module)
				}
				linked[d.Module][d.Name] = true
				fn := d.Fn
				if stub {
					fn = denyStub(d)
				}
				b.NewFunctionBuilder().
					WithGoModuleFunction(goFunc(fn), valueTypes(d.Params), valueTypes(d.Results)).
					Export(d.Name)
			}
		}
	}
	add(cfg.Families, false)
	add(cfg.Stubs, true)
	for _, m := range order {
		if _, err := builders[m].Instantiate(ctx); err != nil {
			return nil, fmt.Errorf("plugin %s: link %s: %w", cfg.Name, m, err)
		}
	}
	cm, err := r.CompileModule(ctx, p.wasm)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: not a valid wasm module: %w", cfg.Name, err)
	}
	for _, imp := range cm.ImportedFunctions() {
		mod, name, _ := imp.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		if linked[mod][name] {
			continue
		}
		ie := &runtime.ImportError{Plugin: cfg.Name, Module: mod, Name: name}
		return nil, ie
	}
	for _, mem := range cm.ImportedMemories() {
		mod, name, _ := mem.Import()
		return nil, &runtime.ImportError{Plugin: cfg.Name, Module: mod, Name: name}
	}
	ok = true
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	c := &compiled{r: r, cm: cm, name: cfg.Name, stderr: stderr, pages: cfg.MemoryPages, noInterrupt: p.noInterrupt, refusedLog: cfg.Notice}
	if p.image != nil {
		c.img = newImage(p.image)
	}
	if e.opts.Snapshots {
		snaps, err := newSnapshots(p.wasm, c.img, p.noInterrupt == nil, e.opts.Spares)
		if err != nil && cfg.Notice != nil {
			cfg.Notice(fmt.Sprintf("instances start without a snapshot: %v", err))
		}
		c.snaps = snaps
	}
	for name := range cm.ExportedFunctions() {
		c.exports = append(c.exports, name)
	}
	return c, nil
}

func goFunc(fn func(ctx context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64)) api.GoModuleFunc {
	return func(ctx context.Context, m api.Module, stack []uint64) {
		c := callFrom(ctx)
		y, _ := c.Engine.(*yielder)
		if y == nil || y.since.IsZero() {
			// no quantum running (a short run reads no clock)
			fn(ctx, c, m.Memory(), stack)
			return
		}
		// the time in the host function is not the guest's: it blocked
		// (a process's start or read, a tool's answer) or ran Go code,
		// which the Go scheduler preempts itself (yield.go)
		t0 := time.Now()
		fn(ctx, c, m.Memory(), stack)
		y.since = y.since.Add(time.Since(t0))
	}
}

func denyStub(d hostfn.Def) func(ctx context.Context, c *hostfn.Call, mem hostfn.Memory, stack []uint64) {
	return func(_ context.Context, _ *hostfn.Call, _ hostfn.Memory, _ []uint64) {
		panic(fmt.Errorf("%s.%s is not granted", d.Module, d.Name))
	}
}

type compiled struct {
	r       wazero.Runtime
	cm      wazero.CompiledModule
	name    string
	stderr  io.Writer
	pages   uint32
	exports []string
	once    sync.Once
	err     error
	// noInterrupt is nil when the module is instrumented (prepared): its
	// calls, start functions included, are then stopped through the flag.
	noInterrupt error
	// img is the data image each instance starts from (nil: wazero copies
	// the data segments in); image.go.
	img *memImage
	// snaps are the owners' snapshots (nil: none are taken); snapshot.go.
	snaps      *snapshots
	refusedLog func(string)
}

func (c *compiled) Exports() []string { return c.exports }

func (c *compiled) moduleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithArgs(c.name).
		WithStdout(c.stderr).
		WithStderr(c.stderr).
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep()
}

func (c *compiled) Instantiate(ctx context.Context) (runtime.Instance, error) {
	inst, err := c.instantiate(ctx, nil)
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// instantiate makes an instance from scratch, running _initialize; with
// capture, as a snapshot's capture (snapshot.go): host function families
// refuse and the guest's output goes through capture.
func (c *compiled) instantiate(ctx context.Context, capture *capturingWriter) (*instance, error) {
	// _initialize may call host functions (logging); give it a Call.
	call := &hostfn.Call{Plugin: c.name, MaxOutput: 0}
	var cv any = call
	if capture != nil {
		cv = capturing{call}
	}
	ictx, mem := withMemory(context.WithValue(ctx, callKey{}, cv))
	y := newYielder()
	cfg := c.moduleConfig().WithOsyield(y.yield).WithStartFunctions("_initialize")
	if capture != nil {
		cfg = cfg.WithStdout(capture).WithStderr(capture)
	}
	if c.noInterrupt == nil {
		// Run _initialize below, interruptibly.
		cfg = cfg.WithStartFunctions()
	}
	m, err := c.r.InstantiateModule(ictx, c.cm, cfg)
	var inst *instance
	if err == nil {
		inst = &instance{m: m, mem: mem, pages: c.pages, fns: map[string]export{}, yield: y}
		err = mem.apply(c.img, m.Memory())
		if err == nil {
			err = inst.arm(c.noInterrupt == nil)
		}
		if err == nil && inst.flag != nil {
			if fn := m.ExportedFunction("_initialize"); fn != nil {
				err = inst.run(ictx, fn, nil)
			}
		}
		if err != nil {
			m.Close(context.WithoutCancel(ctx))
		}
	}
	if err == nil && capture == nil { // (a captured instance is compared, then mostly closed)
		// The guest runtime zeroes (touches) much it never uses.
		mem.dropZeroPages()
	}
	mem.instantiated(err != nil)
	if err != nil {
		if capture != nil && strings.Contains(err.Error(), errInitReach.Error()) {
			return nil, errInitReach
		}
		return nil, fmt.Errorf("plugin %s: instantiate: %w", c.name, classify(ctx, err, nil, c.pages))
	}
	return inst, nil
}

func (c *compiled) RunCommand(ctx context.Context, call *hostfn.Call, stdin []byte, maxOut int64) ([]byte, uint32, error) {
	out := &runtime.OutputBuffer{Max: maxOut}
	y := newYielder()
	cfg := c.moduleConfig().WithOsyield(y.yield).WithStdin(bytes.NewReader(stdin)).WithStdout(out).WithStartFunctions("_start")
	if c.noInterrupt == nil {
		// Run _start below, interruptibly.
		cfg = cfg.WithStartFunctions()
	}
	rctx, mem := withMemory(context.WithValue(ctx, callKey{}, call))
	m, err := c.r.InstantiateModule(rctx, c.cm, cfg)
	// The command is over when InstantiateModule returns: unmap its
	// memory once the module is closed (the defers run in reverse).
	defer mem.instantiated(true)
	if m != nil {
		defer m.Close(context.WithoutCancel(ctx))
	}
	if err == nil && c.noInterrupt == nil {
		inst := &instance{m: m, mem: mem, pages: c.pages, yield: y}
		err = mem.apply(c.img, m.Memory())
		if err == nil {
			err = inst.arm(true)
		}
		if err == nil {
			if fn := m.ExportedFunction("_start"); fn != nil {
				err = inst.run(rctx, fn, nil)
			}
		}
	}
	if out.Over {
		return nil, 0, hostfn.ErrResultTooLarge{Limit: maxOut}
	}
	if err != nil {
		var ee *sys.ExitError
		if errors.As(err, &ee) && ctx.Err() == nil {
			return out.Bytes(), ee.ExitCode(), nil
		}
		return nil, 0, classify(ctx, err, m, c.pages)
	}
	return out.Bytes(), 0, nil
}

func (c *compiled) Close(ctx context.Context) error {
	// The engine is shared by every runtime of one compilation cache
	// and holds each compiled module (its machine code) until the
	// module itself is closed: closing the runtime alone keeps it.
	c.once.Do(func() {
		c.snaps.close()
		c.err = errors.Join(c.cm.Close(ctx), c.r.Close(ctx))
		c.img.close()
	})
	return c.err
}

type instance struct {
	m      api.Module
	mem    *memSlot
	pages  uint32
	fns    map[string]export
	stack  [4]uint64
	closed atomic.Bool
	// flag is the interrupt flag of an instrumented module (nil if not:
	// wazero's close-on-context-done stops its calls), watch sets it.
	flag  api.MutableGlobal
	watch *callwatch.Watch
	// yield is the instance's sched_yield (yield.go).
	yield *yielder
}

// arm finds the interrupt flag of an instrumented module.
func (i *instance) arm(instrumented bool) error {
	if !instrumented {
		return nil
	}
	g, ok := i.m.ExportedGlobal(interrupt.GlobalName).(api.MutableGlobal)
	if !ok {
		return errors.New("interrupt flag missing")
	}
	i.flag, i.watch = g, callwatch.New(func(uint32) { g.Set(1) })
	return nil
}

func (i *instance) Call(ctx context.Context, c *hostfn.Call, name string, params ...uint64) (int32, error) {
	e, ok := i.fns[name]
	if !ok {
		fn := i.m.ExportedFunction(name)
		if fn == nil {
			return 0, fmt.Errorf("%w: export %s not found", runtime.ErrTrap, name)
		}
		e = export{fn: fn, results: len(fn.Definition().ResultTypes())}
		i.fns[name] = e
	}
	stack := i.stack[:max(len(params), e.results)]
	copy(stack, params)
	cctx := ctx
	if v, _ := ctx.Value(callKey{}).(*hostfn.Call); v != c {
		cctx = context.WithValue(ctx, callKey{}, c)
	}
	if c != nil {
		prev := c.Engine
		c.Engine = i.yield
		defer func() { c.Engine = prev }()
	}
	err := i.run(cctx, e.fn, stack)
	if err != nil {
		if c != nil && c.Overflow {
			return 0, hostfn.ErrResultTooLarge{Limit: c.MaxOutput}
		}
		return 0, classify(ctx, err, i.m, i.pages)
	}
	if e.results == 0 {
		return 0, nil
	}
	return int32(uint32(stack[0])), nil
}

// export is an exported function and how many results it has (looked up
// once per instance).
type export struct {
	fn      api.Function
	results int
}

// run calls fn holding the instance's memory mapped (memSlot.hold). On an
// instrumented module it arms the interrupt flag for the call: when ctx
// ends (deadline or cancellation) the flag is set and the guest traps at
// one of its next loop headers (package interrupt). The instance's timer
// does it (watch): no goroutine and no allocation per call.
func (i *instance) run(ctx context.Context, fn api.Function, stack []uint64) error {
	i.mem.hold()
	defer i.mem.release()
	i.yield.since = time.Time{} // the run's first yield point starts its quantum
	if i.flag == nil {
		return fn.CallWithStack(ctx, stack)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	i.watch.Start(ctx, 0)
	err := fn.CallWithStack(ctx, stack)
	if i.watch.End() {
		// a call that finished as its deadline fired leaves the instance
		// usable: the next call sees no stale interrupt
		i.flag.Set(0)
	}
	return err
}

func (i *instance) Close(ctx context.Context) error {
	if !i.closed.CompareAndSwap(false, true) {
		return nil
	}
	if i.watch != nil {
		i.watch.Close()
	}
	return i.m.Close(ctx)
}

// classify maps an engine error to runtime's error classes.
func classify(ctx context.Context, err error, m api.Module, pages uint32) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", runtime.ErrTimeout, ctx.Err())
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == sys.ExitCodeDeadlineExceeded {
		return fmt.Errorf("%w", runtime.ErrTimeout)
	}
	if m != nil && pages > 0 {
		if mem := m.Memory(); mem != nil && mem.Size() >= (pages-pages/16)*65536 {
			return fmt.Errorf("%w (%d MiB): %w", runtime.ErrMemory, pages/16, err)
		}
	}
	if strings.Contains(err.Error(), "out of memory") {
		return fmt.Errorf("%w: %w", runtime.ErrMemory, err)
	}
	return fmt.Errorf("%w: %w", runtime.ErrTrap, err)
}
