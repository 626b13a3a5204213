// Package runtimetest is one conformance table for host/runtime engines:
// every engine implementation runs RunAll, so they cannot drift apart.
package runtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// The snapshot cases' plugins: snapguest's "seed" is a number its
// initialisation drew from the runtime's randomness and "bump" counts its
// calls; snapinit's initialisation calls aiod:core log.
const (
	snapGuest = "host/runtime/runtimetest/testdata/snapguest"
	snapInit  = "host/runtime/runtimetest/testdata/snapinit"
)

// filesStub stands in for the files family: linking is what is tested.
type filesStub struct{}

func (filesStub) Name() abi.Family { return abi.FamilyFiles }
func (filesStub) Defs() []hostfn.Def {
	return []hostfn.Def{hostfn.ReqResp("aiod:files", "read", func(context.Context, *hostfn.Call, []byte) ([]byte, error) {
		return []byte("stub"), nil
	})}
}

type env struct {
	t   *testing.T
	eng runtime.Engine
	// coreFamily is the always-linked aiod:core family, given by the
	// engine's test: the table sees only the hostfn contract, no family.
	coreFamily hostfn.Family
	// meters: the engine meters Config.Fuel (runtime.FuelMeter). Cases
	// about fuel check the fuel error where it does, and elsewhere that
	// Fuel is ignored and the deadline alone applies.
	meters bool
	opts   options
	// notices collects the engine's Config.Notice remarks of the modules
	// compile made.
	notices *noticeLog
}

type noticeLog struct {
	mu   sync.Mutex
	list []string
}

func (l *noticeLog) add(s string) { l.mu.Lock(); l.list = append(l.list, s); l.mu.Unlock() }

func (l *noticeLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// Option tells RunAll what an engine promises beyond the common table.
type Option func(*options)

type options struct{ shortHolds, snapshots, noWarm bool }

// ShortHolds: a long guest run holds its Go processor about a millisecond
// at a time at most (wazero's compiler yields, RATIONALE "A long guest run
// yields its core"; wasmtime runs the guest in a cgo call, which leaves the
// processor). Without it an engine is held to the Go scheduler's own
// preemption (an interpreter is Go code: 10-20 ms).
func ShortHolds() Option { return func(o *options) { o.shortHolds = true } }

// NotWazero: the engine does not read wazero's compile cache, so the table
// does not warm it (testwasm.Warm compiles for wazero only: for another
// engine it was a process and a compile spent for nothing).
func NotWazero() Option { return func(o *options) { o.noWarm = true } }

// Snapshots: the engine was made with snapshots on (its compiled modules
// are runtime.Owned). The table's instances are then made for an owner
// (runtime.InstantiateFor), so an owner's second instance comes from its
// snapshot; the cases marked single (their subject is not how an instance
// starts) run only in the table's run without it.
func Snapshots() Option { return func(o *options) { o.snapshots = true } }

func (e env) core() []hostfn.Family { return []hostfn.Family{e.coreFamily} }

// warm puts wasm in wazero's compile cache beforehand (testwasm.Warm),
// for an engine that reads it.
func (e env) warm(wasm []byte) {
	e.t.Helper()
	if !e.opts.noWarm {
		testwasm.Warm(e.t, wasm)
	}
}

func (e env) compile(pkg string, cfg runtime.Config) runtime.Compiled {
	e.t.Helper()
	wasm := testwasm.Wasm(e.t, pkg)
	e.warm(wasm)
	if cfg.Name == "" {
		cfg.Name = "t"
	}
	if cfg.Families == nil {
		cfg.Families = e.core()
	}
	cfg.Notice = e.notices.add
	c, err := e.eng.Compile(context.Background(), wasm, cfg)
	if err != nil {
		e.t.Fatalf("compile %s: %v", pkg, err)
	}
	e.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// instance makes an instance of c: for the owner "o" where the engine
// has snapshots on (the first is captured, the next ones come from the
// snapshot), from scratch otherwise.
func (e env) instance(c runtime.Compiled) runtime.Instance {
	e.t.Helper()
	if e.opts.snapshots {
		return e.instanceFor(c, "o")
	}
	inst, err := c.Instantiate(context.Background())
	if err != nil {
		e.t.Fatalf("instantiate: %v", err)
	}
	e.t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

// instanceFor makes an instance of c for owner (runtime.InstantiateFor).
func (e env) instanceFor(c runtime.Compiled, owner string) runtime.Instance {
	e.t.Helper()
	inst, err := runtime.InstantiateFor(context.Background(), c, owner)
	if err != nil {
		e.t.Fatalf("instantiate for %s: %v", owner, err)
	}
	e.t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

// text runs tool and returns the text of its result.
func (e env) text(inst runtime.Instance, tool, args string) string {
	e.t.Helper()
	ret, out, err := toolCall(context.Background(), inst, tool, args, 1<<20)
	if err != nil || ret != 0 {
		e.t.Fatalf("%s: ret %d err %v out %s", tool, ret, err, out)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) != 1 {
		e.t.Fatalf("%s: %s (%v)", tool, out, err)
	}
	return res.Content[0].Text
}

// toolCall runs aiod_call op 1 and returns the return code, output and error.
func toolCall(ctx context.Context, inst runtime.Instance, tool, args string, maxOut int64) (int32, string, error) {
	c := &hostfn.Call{Plugin: "t", Input: []byte(tool + args), MaxOutput: maxOut}
	ret, err := inst.Call(ctx, c, "aiod_call", 1, uint64(len(tool)), uint64(len(args)))
	return ret, string(c.Output), err
}

// WakeLateness runs spin (a guest call that runs until its context ends)
// with one Go processor (GOMAXPROCS 1) and returns the median lateness of
// 25 sleeps of 1 ms beside it: about as long as the guest holds the
// processor at a time.
func WakeLateness(t testing.TB, spin func(ctx context.Context) error) time.Duration {
	t.Helper()
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- spin(ctx) }()
	time.Sleep(20 * time.Millisecond) // the guest runs
	var late []time.Duration
	for range 25 {
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		late = append(late, time.Since(t0)-time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, runtime.ErrTimeout) && !errors.Is(err, context.Canceled) {
			t.Fatalf("the spin ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the spin did not stop 10 s after its context ended")
	}
	slices.Sort(late)
	return late[len(late)/2]
}

// RunAll runs the engine conformance table against engines made by
// newEngine, linking coreFamily (host/hostfn/core's New) as aiod:core.
func RunAll(t *testing.T, coreFamily hostfn.Family, newEngine func(t *testing.T) runtime.Engine, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	// single, where set, says why a case runs only once, in the table's
	// run without snapshots: it makes no instance (compiling, WASI
	// commands), or its subject is how a call runs on any instance and it
	// waits out a deadline (tenths of a second) that a second run would
	// only repeat. Every other case makes its instances for an owner when
	// the engine has snapshots on, so they serve from a snapshot there.
	cases := []struct {
		name   string
		single string
		run    func(e env)
	}{
		{"refuses bytes that are not wasm", "compiles only", func(e env) {
			_, err := e.eng.Compile(context.Background(), []byte("\x00asmnot really"), runtime.Config{Name: "junk", Families: e.core()})
			if err == nil || !strings.Contains(err.Error(), "plugin junk: not a valid wasm module") {
				e.t.Fatalf("err %v", err)
			}
		}},
		{"refuses an import that is not linked, naming it (the registry names the capability)", "compiles only", func(e env) {
			wasm := testwasm.Wasm(e.t, "host/plugin/testdata/importer")
			e.warm(wasm)
			_, err := e.eng.Compile(context.Background(), wasm, runtime.Config{Name: "importer", Families: e.core()})
			var ie *runtime.ImportError
			if !errors.As(err, &ie) || ie.Module != "aiod:files" || ie.Name != "read" {
				e.t.Fatalf("err %v", err)
			}
		}},
		{"links a granted family", "", func(e env) {
			c := e.compile("host/plugin/testdata/importer", runtime.Config{Families: append(e.core(), filesStub{})})
			ret, out, err := toolCall(context.Background(), e.instance(c), "peek", "{}", 1<<20)
			if err != nil || ret != 0 || !strings.Contains(out, `"text":"read"`) {
				e.t.Fatalf("ret %d out %s err %v", ret, out, err)
			}
		}},
		{"calls exports and collects output", "", func(e env) {
			c := e.compile("plugins/examples/echo", runtime.Config{})
			found := false
			for _, x := range c.Exports() {
				found = found || x == "aiod_call"
			}
			if !found {
				e.t.Fatalf("exports %v", c.Exports())
			}
			inst := e.instance(c)
			if v, err := inst.Call(context.Background(), &hostfn.Call{}, "aiod_abi_version"); err != nil || v != 1 {
				e.t.Fatalf("abi version %d %v", v, err)
			}
			for i := 0; i < 3; i++ { // the instance is reusable
				ret, out, err := toolCall(context.Background(), inst, "echo", `{"text":"hi"}`, 1<<20)
				if err != nil || ret != 0 || out != `{"content":[{"type":"text","text":"hi"}],"isError":false}` {
					e.t.Fatalf("ret %d out %s err %v", ret, out, err)
				}
			}
			if _, err := inst.Call(context.Background(), &hostfn.Call{}, "no_such_export"); !errors.Is(err, runtime.ErrTrap) {
				e.t.Fatalf("missing export: %v", err)
			}
		}},
		{"a trap is an error", "", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			_, _, err := toolCall(context.Background(), e.instance(c), "panic", "{}", 1<<20)
			if !errors.Is(err, runtime.ErrTrap) {
				e.t.Fatalf("err %v", err)
			}
		}},
		{"a deadline stops an infinite loop", "", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, _, err := toolCall(ctx, e.instance(c), "loop", "{}", 1<<20)
			if !errors.Is(err, runtime.ErrTimeout) || time.Since(start) > 5*time.Second {
				e.t.Fatalf("err %v after %s", err, time.Since(start))
			}
		}},
		{"a long call leaves its processor to other goroutines", "how a call runs; 0.1 s of sleeps", func(e env) {
			// With one processor, a goroutine sleeping 1 ms beside a guest
			// spinning in for {} wakes late by as long as the guest holds
			// the processor: 10-20 ms when it waits for the Go scheduler's
			// preemption, microseconds on an engine of ShortHolds; never
			// the whole call.
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			inst := e.instance(c)
			med := WakeLateness(e.t, func(ctx context.Context) error {
				_, _, err := toolCall(ctx, inst, "loop", "{}", 1<<20)
				return err
			})
			bound := 50 * time.Millisecond
			if e.opts.shortHolds {
				bound = 3 * time.Millisecond
			}
			if med > bound {
				e.t.Fatalf("a goroutine beside the looping guest wakes %v late (median), want under %v", med, bound)
			}
		}},
		{"cancellation stops an infinite loop", "how a call stops; 0.2 s (a deadline and a context done before the call run both ways)", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			inst := e.instance(c)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			_, _, err := toolCall(ctx, inst, "loop", "{}", 1<<20)
			if !errors.Is(err, runtime.ErrTimeout) || time.Since(start) > 5*time.Second {
				e.t.Fatalf("err %v after %s", err, time.Since(start))
			}
		}},
		{"a context done before the call stops it", "", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			inst := e.instance(c)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			start := time.Now()
			_, _, err := toolCall(ctx, inst, "loop", "{}", 1<<20)
			if !errors.Is(err, runtime.ErrTimeout) || time.Since(start) > 5*time.Second {
				e.t.Fatalf("err %v after %s", err, time.Since(start))
			}
		}},
		{"a cancel after a call does not stop the next one", "", func(e env) {
			c := e.compile("plugins/examples/echo", runtime.Config{})
			inst := e.instance(c)
			ctx, cancel := context.WithCancel(context.Background())
			if _, _, err := toolCall(ctx, inst, "echo", `{"text":"a"}`, 1<<20); err != nil {
				e.t.Fatal(err)
			}
			cancel() // late: the call above is over
			time.Sleep(50 * time.Millisecond)
			for i := 0; i < 3; i++ {
				if ret, out, err := toolCall(context.Background(), inst, "echo", `{"text":"b"}`, 1<<20); err != nil || ret != 0 || !strings.Contains(out, `"b"`) {
					e.t.Fatalf("ret %d out %s err %v", ret, out, err)
				}
			}
		}},
		{"instances run concurrently and a deadline stops only its own", "", func(e env) {
			echo := e.compile("plugins/examples/echo", runtime.Config{})
			hostile := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			looper := e.instance(hostile)
			insts := []runtime.Instance{e.instance(echo), e.instance(echo), e.instance(echo)}
			errs := make(chan error, len(insts)+1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer cancel()
				_, _, err := toolCall(ctx, looper, "loop", "{}", 1<<20)
				if !errors.Is(err, runtime.ErrTimeout) {
					errs <- fmt.Errorf("loop: %v", err)
					return
				}
				errs <- nil
			}()
			for n, inst := range insts {
				go func() {
					for i := 0; i < 20; i++ {
						text := fmt.Sprintf("%d-%d", n, i)
						ret, out, err := toolCall(context.Background(), inst, "echo", `{"text":"`+text+`"}`, 1<<20)
						if err != nil || ret != 0 || !strings.Contains(out, `"`+text+`"`) {
							errs <- fmt.Errorf("instance %d call %d: ret %d out %s err %v", n, i, ret, out, err)
							return
						}
					}
					errs <- nil
				}()
			}
			for range len(insts) + 1 {
				if err := <-errs; err != nil {
					e.t.Fatal(err)
				}
			}
		}},
		{"a call that finishes in time leaves the instance usable", "", func(e env) {
			c := e.compile("plugins/examples/echo", runtime.Config{})
			inst := e.instance(c)
			for i := 0; i < 60; i++ {
				// a deadline that expires around the end of the call
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i*25)*time.Microsecond)
				_, _, err := toolCall(ctx, inst, "echo", `{"text":"hi"}`, 1<<20)
				cancel()
				if err != nil { // interrupted: the host discards such an instance
					inst.Close(context.Background())
					inst = e.instance(c)
					continue
				}
				// it finished: the same instance must serve the next call
				ret, out, err := toolCall(context.Background(), inst, "echo", `{"text":"again"}`, 1<<20)
				if err != nil || ret != 0 || !strings.Contains(out, `"again"`) {
					e.t.Fatalf("round %d: after a call that finished in time: ret %d out %s err %v", i, ret, out, err)
				}
			}
		}},
		{"fuel stops a loop well before its deadline, and the next call works (engines that meter; elsewhere the deadline does)", "", func(e env) {
			const fuel = 50_000_000
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{Fuel: fuel})
			deadline := 300 * time.Millisecond
			if e.meters {
				deadline = 30 * time.Second
			}
			// start before the context, so that when its deadline fires
			// at least deadline has passed since start
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, _, err := toolCall(ctx, e.instance(c), "loop", "{}", 1<<20)
			took := time.Since(start)
			switch {
			case e.meters && (!errors.Is(err, runtime.ErrFuel) || errors.Is(err, runtime.ErrTimeout) || !strings.Contains(err.Error(), fmt.Sprintf("fuel=%d", fuel)) || took > deadline/6):
				e.t.Fatalf("metered loop: err %v after %s (deadline %s)", err, took, deadline)
			case !e.meters && (!errors.Is(err, runtime.ErrTimeout) || took < deadline):
				e.t.Fatalf("loop on an engine that does not meter: err %v after %s (deadline %s)", err, took, deadline)
			}
			// The host discards the stopped instance; a fresh one serves.
			for i := 0; i < 3; i++ {
				if ret, out, err := toolCall(context.Background(), e.instance(c), "ok", "{}", 1<<20); err != nil || ret != 0 || !strings.Contains(out, `"fine"`) {
					e.t.Fatalf("call after the fuel error: ret %d out %s err %v", ret, out, err)
				}
			}
		}},
		{"a metered plugin does small jobs: fuel is per call, not per instance", "", func(e env) {
			// An echo call takes a few tens of thousands of instructions:
			// 100 calls on one instance exceed the fuel, each one does not.
			c := e.compile("plugins/examples/echo", runtime.Config{Fuel: 1_000_000})
			inst := e.instance(c)
			for i := 0; i < 100; i++ {
				text := fmt.Sprint(i)
				if ret, out, err := toolCall(context.Background(), inst, "echo", `{"text":"`+text+`"}`, 1<<20); err != nil || ret != 0 || !strings.Contains(out, `"`+text+`"`) {
					e.t.Fatalf("call %d: ret %d out %s err %v", i, ret, out, err)
				}
			}
		}},
		{"an unmetered plugin is unaffected by a metered one on the same engine", "the engine's flavors, not its instances; 0.7 s", func(e env) {
			metered := e.compile("host/plugin/testdata/hostile", runtime.Config{Fuel: 50_000_000})
			if _, _, err := toolCall(context.Background(), e.instance(metered), "ok", "{}", 1<<20); err != nil {
				e.t.Fatal(err)
			}
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			const deadline = 700 * time.Millisecond
			// start before the context, so that when its deadline fires
			// at least deadline has passed since start
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, _, err := toolCall(ctx, e.instance(c), "loop", "{}", 1<<20)
			if !errors.Is(err, runtime.ErrTimeout) || errors.Is(err, runtime.ErrFuel) || time.Since(start) < deadline {
				e.t.Fatalf("unmetered loop: err %v after %s, want the deadline (%s)", err, time.Since(start), deadline)
			}
		}},
		{"fuel bounds a WASI command's whole run (engines that meter; elsewhere it is ignored)", "a WASI command, never from a snapshot", func(e env) {
			wasm := testwasm.Command(e.t, "host/plugin/testdata/cmdecho")
			e.warm(wasm)
			stdin := []byte(`{"op":"tools/call","name":"x","arguments":{"text":"y"}}`)
			for _, fuel := range []uint64{1000, 1 << 40} {
				c, err := e.eng.Compile(context.Background(), wasm, runtime.Config{Name: "cmd", Families: e.core(), Fuel: fuel})
				if err != nil {
					e.t.Fatal(err)
				}
				out, code, err := c.RunCommand(context.Background(), &hostfn.Call{}, stdin, 1<<20)
				c.Close(context.Background())
				if e.meters && fuel == 1000 {
					if !errors.Is(err, runtime.ErrFuel) {
						e.t.Fatalf("fuel %d: out %s code %d err %v, want the fuel error", fuel, out, code, err)
					}
					continue
				}
				if err != nil || code != 0 || !strings.Contains(string(out), `"text":"tools/call x: y"`) {
					e.t.Fatalf("fuel %d: out %s code %d err %v", fuel, out, code, err)
				}
			}
		}},
		{"memory is capped", "", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{MemoryPages: 32 * 16})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _, err := toolCall(ctx, e.instance(c), "grow", "{}", 1<<20)
			if !errors.Is(err, runtime.ErrMemory) {
				e.t.Fatalf("err %v", err)
			}
		}},
		{"output is capped", "", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			_, _, err := toolCall(context.Background(), e.instance(c), "big", `{"mb":2}`, 1<<20)
			var tl hostfn.ErrResultTooLarge
			if !errors.As(err, &tl) || tl.Limit != 1<<20 {
				e.t.Fatalf("err %v", err)
			}
		}},
		{"runs a WASI command", "a WASI command, never from a snapshot", func(e env) {
			wasm := testwasm.Command(e.t, "host/plugin/testdata/cmdecho")
			e.warm(wasm)
			c, err := e.eng.Compile(context.Background(), wasm, runtime.Config{Name: "cmd", Families: e.core()})
			if err != nil {
				e.t.Fatal(err)
			}
			defer c.Close(context.Background())
			out, code, err := c.RunCommand(context.Background(), &hostfn.Call{}, []byte(`{"op":"tools/call","name":"x","arguments":{"text":"y"}}`), 1<<20)
			if err != nil || code != 0 || !strings.Contains(string(out), `"text":"tools/call x: y"`) {
				e.t.Fatalf("out %s code %d err %v", out, code, err)
			}
			_, code, err = c.RunCommand(context.Background(), &hostfn.Call{}, []byte(`{"arguments":{"exit":4}}`), 1<<20)
			if err != nil || code != 4 {
				e.t.Fatalf("exit code %d err %v", code, err)
			}
			_, _, err = c.RunCommand(context.Background(), &hostfn.Call{}, []byte(`{"op":"tools/call","name":"x","arguments":{"text":"y"}}`), 8)
			var tl hostfn.ErrResultTooLarge
			if !errors.As(err, &tl) || tl.Limit != 8 {
				e.t.Fatalf("command output cap: err %v", err)
			}
		}},
		// Instances from snapshots (runtime.Owned). Without snapshots the
		// same checks hold but that an owner's instances share its
		// initialisation: each runs its own.
		{"an owner's instances share its initialisation, two owners never do, and each instance's writes are its own", "", func(e env) {
			c := e.compile(snapGuest, runtime.Config{})
			a1 := e.instanceFor(c, "a")
			a2, a3 := e.instanceFor(c, "a"), e.instanceFor(c, "a")
			seedA := e.text(a1, "seed", "{}")
			if s2, s3 := e.text(a2, "seed", "{}"), e.text(a3, "seed", "{}"); e.opts.snapshots && (s2 != seedA || s3 != seedA) {
				e.t.Fatalf("owner a's instances saw different initialisations: %s %s %s", seedA, s2, s3)
			}
			// copy-on-write: each instance counts its own calls
			for _, want := range []string{"1", "2"} {
				if got := e.text(a2, "bump", "{}"); got != want {
					e.t.Fatalf("a2's bump: %s, want %s", got, want)
				}
			}
			if got := e.text(a3, "bump", "{}"); got != "1" {
				e.t.Fatalf("a3 saw a2's writes: bump %s", got)
			}
			if got := e.text(a1, "bump", "{}"); got != "1" {
				e.t.Fatalf("a1 saw another's writes: bump %s", got)
			}
			if got := e.text(e.instanceFor(c, "a"), "bump", "{}"); got != "1" {
				e.t.Fatalf("a later instance saw earlier ones' writes: bump %s", got)
			}
			b1, b2 := e.instanceFor(c, "b"), e.instanceFor(c, "b")
			seedB := e.text(b1, "seed", "{}")
			if seedB == seedA {
				e.t.Fatalf("owners a and b share an initialisation (seed %s)", seedA)
			}
			if got := e.text(b2, "seed", "{}"); e.opts.snapshots && got != seedB {
				e.t.Fatalf("owner b's instances differ: %s %s", seedB, got)
			}
			if n := e.notices.get(); len(n) != 0 {
				e.t.Fatalf("notices %q", n)
			}
		}},
		{"owners that come once the module has served two (the spares' turn) each get their own initialisation", "", func(e env) {
			c := e.compile(snapGuest, runtime.Config{})
			seen := map[string]string{}
			for i, owner := range []string{"a", "b", "c", "d", "e", "f"} {
				if i == 2 {
					time.Sleep(300 * time.Millisecond) // the spares fill once two owners have come
				}
				s := e.text(e.instanceFor(c, owner), "seed", "{}")
				if other, dup := seen[s]; dup {
					e.t.Fatalf("owners %s and %s share an initialisation (seed %s)", owner, other, s)
				}
				seen[s] = owner
				if again := e.text(e.instanceFor(c, owner), "seed", "{}"); e.opts.snapshots && again != s {
					e.t.Fatalf("owner %s's instances differ: %s %s", owner, s, again)
				}
			}
			if n := e.notices.get(); len(n) != 0 {
				e.t.Fatalf("notices %q", n)
			}
		}},
		{"an instance from a snapshot answers as one from scratch", "", func(e env) {
			c := e.compile("plugins/examples/echo", runtime.Config{})
			scratch, err := c.Instantiate(context.Background())
			if err != nil {
				e.t.Fatal(err)
			}
			defer scratch.Close(context.Background())
			e.instanceFor(c, "o")
			restored := e.instanceFor(c, "o")
			for _, in := range []string{`{"text":"hi"}`, `{"text":"` + strings.Repeat("x", 100000) + `"}`, `{"text":""}`} {
				if a, b := e.text(scratch, "echo", in), e.text(restored, "echo", in); a != b {
					e.t.Fatalf("echo %.40s: scratch %.40q, snapshot %.40q", in, a, b)
				}
			}
			if n := e.notices.get(); len(n) != 0 {
				e.t.Fatalf("notices %q", n)
			}
		}},
		{"an initialisation that calls a family is not snapshotted, says so once, and works", "", func(e env) {
			c := e.compile(snapInit, runtime.Config{})
			for range 3 {
				if got := e.text(e.instanceFor(c, "o"), "hello", "{}"); got != "hello" {
					e.t.Fatalf("hello: %s", got)
				}
			}
			n := e.notices.get()
			switch {
			case e.opts.snapshots && (len(n) != 1 || !strings.Contains(n[0], "host function")):
				e.t.Fatalf("notices %q, want one naming the host function call", n)
			case !e.opts.snapshots && len(n) != 0:
				e.t.Fatalf("notices %q", n)
			}
		}},
		{"a trap or a deadline discards only its own instance of an owner", "", func(e env) {
			c := e.compile("host/plugin/testdata/hostile", runtime.Config{})
			i1, i2, i3 := e.instanceFor(c, "o"), e.instanceFor(c, "o"), e.instanceFor(c, "o")
			if _, _, err := toolCall(context.Background(), i2, "panic", "{}", 1<<20); !errors.Is(err, runtime.ErrTrap) {
				e.t.Fatalf("panic: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, _, err := toolCall(ctx, i3, "loop", "{}", 1<<20); !errors.Is(err, runtime.ErrTimeout) {
				e.t.Fatalf("loop: %v", err)
			}
			for _, inst := range []runtime.Instance{i1, e.instanceFor(c, "o")} {
				if ret, out, err := toolCall(context.Background(), inst, "ok", "{}", 1<<20); err != nil || ret != 0 || !strings.Contains(out, `"fine"`) {
					e.t.Fatalf("ok after the others' trap and deadline: ret %d out %s err %v", ret, out, err)
				}
			}
		}},
		{"close is idempotent", "", func(e env) {
			c := e.compile("plugins/examples/echo", runtime.Config{})
			inst := e.instance(c)
			for i := 0; i < 2; i++ {
				if err := inst.Close(context.Background()); err != nil {
					e.t.Fatal(err)
				}
			}
			for i := 0; i < 2; i++ {
				if err := c.Close(context.Background()); err != nil {
					e.t.Fatal(err)
				}
			}
		}},
	}
	for _, tc := range cases {
		if o.snapshots && tc.single != "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			eng := newEngine(t)
			defer func() {
				if err := eng.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				eng.Close(context.Background()) // idempotent
			}()
			tc.run(env{t: t, eng: eng, coreFamily: coreFamily, meters: runtime.MetersFuel(eng), opts: o, notices: &noticeLog{}})
		})
	}
}
