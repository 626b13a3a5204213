package wazero_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// Hand-built modules (wasm binary, spelled out).

func u32(v uint32) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func sec(id byte, payload ...[]byte) []byte {
	p := cat(payload...)
	return cat([]byte{id}, u32(uint32(len(p))), p)
}

func vec(entries ...[]byte) []byte { return cat(u32(uint32(len(entries))), cat(entries...)) }

func str(s string) []byte { return cat(u32(uint32(len(s))), []byte(s)) }

func body(code ...byte) []byte { return cat(u32(uint32(len(code))), code) }

// spinModule exports "spin" (function 0, no parameters or results) with
// the given body; function 1, "inner", loops a thousand times. withMemory
// adds a memory (the rewriter refuses a module without one).
func spinModule(withMemory bool, spin []byte) []byte {
	inner := []byte{
		0x01, 0x01, 0x7F, // one i32 local
		0x41, 0xE8, 0x07, 0x21, 0x00, // local.set 0 (i32.const 1000)
		0x03, 0x40, // loop
		0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00, // br_if 0 (local.tee 0 (local.get 0 - 1))
		0x0B, 0x0B,
	}
	sections := [][]byte{
		{0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00},
		sec(1, vec([]byte{0x60, 0x00, 0x00})),
		sec(3, vec([]byte{0x00}, []byte{0x00})),
	}
	if withMemory {
		sections = append(sections, sec(5, vec([]byte{0x00, 0x01})))
	}
	sections = append(sections,
		sec(7, vec(cat(str("spin"), []byte{0x00, 0x00}))),
		sec(10, vec(body(spin...), body(inner...))))
	return cat(sections...)
}

// The spinning bodies: each never returns.
var spins = []struct {
	name string
	code []byte
}{
	{"for {}", []byte{0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B}},
	{"nested, the inner loop spins", []byte{0x00, 0x03, 0x40, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B, 0x0B}},
	{"nested, the outer loop spins around a finite inner one", []byte{
		0x01, 0x01, 0x7F,
		0x03, 0x40, // outer loop
		0x41, 0x64, 0x21, 0x00, // local.set 0 (i32.const 100)
		0x03, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00, 0x0B, // inner: 100 rounds
		0x0C, 0x00, // br outer
		0x0B, 0x0B}},
	{"a loop calling a function with a loop", []byte{0x00, 0x03, 0x40, 0x10, 0x01, 0x0C, 0x00, 0x0B, 0x0B}},
}

func compileBytes(t *testing.T, eng runtime.Engine, wasm []byte) runtime.Compiled {
	t.Helper()
	c, err := eng.Compile(context.Background(), wasm, runtime.Config{Name: "spin"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// spinEnv set: the test runs as the child of TestSpinningGuestLetsGCRun.
const spinEnv = "AIOD_TEST_SPIN_CHILD"

// TestSpinningGuestLetsGCRun: a guest spinning in a loop (native code the
// Go scheduler cannot preempt) must not block a stop-the-world pause.
// runtime.GC runs over and over while the guest spins; every collection
// completes within a bound, and the call stops at its deadline. A blocked
// stop-the-world stops every goroutine of the process, this test's timers
// included, so the spinning runs in a child process that this one kills
// after a bound.
func TestSpinningGuestLetsGCRun(t *testing.T) {
	if os.Getenv(spinEnv) == "" {
		// Build the Go plugin here (the child reuses the build cache).
		testplugins.Warm(t, testplugins.Wasm(t, "host/plugin/testdata/hostile"))
		const bound = 2 * time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSpinningGuestLetsGCRun$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), spinEnv+"=1")
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("the child did not finish in %v: a spinning guest blocks the garbage collector\n%s", bound, out)
		}
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	eng, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) }) // after instrumented's
	type guest struct {
		name string
		call func(ctx context.Context) error
	}
	var guests []guest
	for _, s := range spins {
		c := compileBytes(t, eng, spinModule(true, s.code))
		if err := wazero.InterruptErr(c); err != nil {
			t.Fatalf("%s: not instrumented: %v", s.name, err)
		}
		inst, err := c.Instantiate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close(context.Background())
		guests = append(guests, guest{s.name, func(ctx context.Context) error {
			_, err := inst.Call(ctx, &hostfn.Call{}, "spin")
			return err
		}})
	}
	hinst := instrumented(t, eng, testplugins.Wasm(t, "host/plugin/testdata/hostile"), "hostile")
	guests = append(guests, guest{"a Go plugin's for {}", func(ctx context.Context) error {
		c := &hostfn.Call{Plugin: "hostile", Input: []byte("loop{}"), MaxOutput: 1 << 20}
		_, err := hinst.Call(ctx, c, "aiod_call", 1, 4, 2)
		return err
	}})

	const deadline = time.Second
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			var (
				mu       sync.Mutex
				returned bool // the call has returned
				gcs      int  // collections completed before it did
				maxGC    time.Duration
			)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					goruntime.GC()
					d := time.Since(start)
					mu.Lock()
					if !returned {
						gcs++
					}
					maxGC = max(maxGC, d)
					mu.Unlock()
				}
			}()
			start := time.Now()
			err := g.call(ctx)
			took := time.Since(start)
			mu.Lock()
			returned = true
			mu.Unlock()
			close(stop)
			<-done
			if !errors.Is(err, runtime.ErrTimeout) {
				t.Fatalf("got %v, want a timeout", err)
			}
			if took < deadline || took > deadline+5*time.Second {
				t.Fatalf("stopped after %v, deadline %v", took, deadline)
			}
			mu.Lock()
			defer mu.Unlock()
			// Without the trip into Go the first collection never ends (and
			// the child is killed); the bounds are loose for a loaded machine.
			if gcs < 1 || maxGC > 5*time.Second {
				t.Fatalf("%d collections while the guest spun, the longest %v", gcs, maxGC)
			}
			t.Logf("stopped after %v; %d collections while spinning, the longest %v", took, gcs, maxGC)
		})
	}
}

// TestInstrumented: the Go plugins are instrumented and answer as the
// original does (the echo plugin's answer is known; compiling the original
// as well would cost minutes under -race); a module the rewriter refuses
// (no memory) falls back to wazero's checks and is stopped at its deadline
// all the same.
func TestInstrumented(t *testing.T) {
	eng, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) }) // after instrumented's
	echo := testplugins.Wasm(t, "plugins/examples/echo")
	testplugins.Warm(t, echo)
	inst := instrumented(t, eng, echo, "echo")
	for _, text := range []string{"hi", "", strings.Repeat("é\"\\ x", 3000)} {
		q, _ := json.Marshal(text)
		args := `{"text":` + string(q) + `}`
		want := `{"content":[{"type":"text","text":` + string(q) + `}],"isError":false}`
		for range 3 {
			call := &hostfn.Call{Plugin: "echo", Input: []byte("echo" + args), MaxOutput: 1 << 20}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			ret, err := inst.Call(ctx, call, "aiod_call", 1, 4, uint64(len(args)))
			cancel()
			if err != nil || ret != 0 || string(call.Output) != want {
				t.Fatalf("echo %.40q: %d %v\ngot  %.200s\nwant %.200s", text, ret, err, call.Output, want)
			}
		}
	}

	c := compileBytes(t, eng, spinModule(false, spins[0].code))
	if err := wazero.InterruptErr(c); err == nil || !strings.Contains(err.Error(), "no memory") {
		t.Fatalf("a module without memory: interrupt error %v", err)
	}
	sinst, err := c.Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer sinst.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := sinst.Call(ctx, &hostfn.Call{}, "spin"); !errors.Is(err, runtime.ErrTimeout) || time.Since(start) > 5*time.Second {
		t.Fatalf("fallback: %v after %v", err, time.Since(start))
	}
}

// instrumented compiles wasm on eng, fails unless the rewriter
// instrumented it, and returns an instance (closed at cleanup, with the
// module).
func instrumented(t *testing.T, eng runtime.Engine, wasm []byte, name string) runtime.Instance {
	t.Helper()
	c, err := eng.Compile(context.Background(), wasm, runtime.Config{Name: name, Families: []hostfn.Family{core.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if err := wazero.InterruptErr(c); err != nil {
		t.Fatalf("%s is not instrumented: %v", name, err)
	}
	inst, err := c.Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}
