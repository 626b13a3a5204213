package wazero_test

import (
	"context"
	"encoding/json"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/testwasm"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// snapCompile compiles pkg on an engine with snapshots on, collecting the
// engine's notices.
func snapCompile(t *testing.T, pkg string) (runtime.Compiled, *[]string) {
	t.Helper()
	e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir(), Snapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	wasm := testwasm.Wasm(t, pkg)
	testwasm.Warm(t, wasm)
	var mu sync.Mutex
	notices := &[]string{}
	c, err := e.Compile(context.Background(), wasm, runtime.Config{Name: "t", Families: []hostfn.Family{core.New()},
		Notice: func(s string) { mu.Lock(); *notices = append(*notices, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, notices
}

// text calls tool on inst and returns the text of its result.
func text(t *testing.T, inst runtime.Instance, tool, args string) string {
	t.Helper()
	c := &hostfn.Call{Plugin: "t", Input: []byte(tool + args), MaxOutput: 1 << 20}
	ret, err := inst.Call(context.Background(), c, "aiod_call", 1, uint64(len(tool)), uint64(len(args)))
	if err != nil || ret != 0 {
		t.Fatalf("%s: ret %d err %v out %s", tool, ret, err, c.Output)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(c.Output, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("%s: %s (%v)", tool, c.Output, err)
	}
	return res.Content[0].Text
}

func instFor(t *testing.T, c runtime.Compiled, owner string) runtime.Instance {
	t.Helper()
	inst, err := runtime.InstantiateFor(context.Background(), c, owner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

// TestSnapshotOwners: an owner's later instances start from its snapshot,
// see the initialisation its first one saw, and do not see each other's
// writes; two owners never share one.
func TestSnapshotOwners(t *testing.T) {
	c, notices := snapCompile(t, "host/runtime/wazero/testdata/snapguest")
	a1 := instFor(t, c, "a")
	ok, size, pages, runs := wazero.Snapshot(c, "a")
	if !ok {
		t.Fatalf("no snapshot for a after its first instance; notices %q", *notices)
	}
	t.Logf("snapshot: %d bytes of memory, %d pages changed by the initialisation in %d runs", size, pages, runs)
	a2, a3 := instFor(t, c, "a"), instFor(t, c, "a")
	seedA := text(t, a1, "seed", "{}")
	if s2, s3 := text(t, a2, "seed", "{}"), text(t, a3, "seed", "{}"); s2 != seedA || s3 != seedA {
		t.Fatalf("owner a's instances saw different initialisations: %s %s %s", seedA, s2, s3)
	}
	// copy-on-write: each instance counts its own calls
	if got := text(t, a2, "bump", "{}"); got != "1" {
		t.Fatalf("a2's first bump: %s", got)
	}
	if got := text(t, a2, "bump", "{}"); got != "2" {
		t.Fatalf("a2's second bump: %s", got)
	}
	if got := text(t, a3, "bump", "{}"); got != "1" {
		t.Fatalf("a3 saw a2's writes: bump %s", got)
	}
	if got := text(t, a1, "bump", "{}"); got != "1" {
		t.Fatalf("a1 saw another's writes: bump %s", got)
	}
	a4 := instFor(t, c, "a")
	if got := text(t, a4, "bump", "{}"); got != "1" {
		t.Fatalf("a later instance saw earlier ones' writes: bump %s", got)
	}
	b1, b2 := instFor(t, c, "b"), instFor(t, c, "b")
	_, size, pages, runs = wazero.Snapshot(c, "b")
	t.Logf("owner b's snapshot: %d bytes of memory, %d pages its own in %d runs", size, pages, runs)
	seedB := text(t, b1, "seed", "{}")
	if seedB == seedA {
		t.Fatalf("owners a and b share an initialisation (seed %s)", seedA)
	}
	if got := text(t, b2, "seed", "{}"); got != seedB {
		t.Fatalf("owner b's instances differ: %s %s", seedB, got)
	}
	if len(*notices) != 0 {
		t.Fatalf("notices %q", *notices)
	}
}

// TestSnapshotEcho: the echo plugin from a snapshot answers as from scratch.
func TestSnapshotEcho(t *testing.T) {
	c, notices := snapCompile(t, "plugins/examples/echo")
	scratch, err := c.Instantiate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close(context.Background())
	instFor(t, c, "o")
	if ok, _, _, _ := wazero.Snapshot(c, "o"); !ok {
		t.Fatalf("echo is not snapshotted: %q", *notices)
	}
	restored := instFor(t, c, "o")
	for _, in := range []string{`{"text":"hi"}`, `{"text":"` + strings.Repeat("x", 100000) + `"}`, `{"text":""}`} {
		if a, b := text(t, scratch, "echo", in), text(t, restored, "echo", in); a != b {
			t.Fatalf("echo %.40s: scratch %.40q, snapshot %.40q", in, a, b)
		}
	}
}

// TestSnapshotInitReach: a module whose initialisation calls the host is
// not snapshotted, says why once, and works.
func TestSnapshotInitReach(t *testing.T) {
	c, notices := snapCompile(t, "host/runtime/wazero/testdata/snapinit")
	for range 3 {
		if got := text(t, instFor(t, c, "o"), "hello", "{}"); got != "hello" {
			t.Fatalf("hello: %s", got)
		}
	}
	if ok, _, _, _ := wazero.Snapshot(c, "o"); ok {
		t.Fatal("a module whose initialisation calls the host was snapshotted")
	}
	if len(*notices) != 1 || !strings.Contains((*notices)[0], "host function") {
		t.Fatalf("notices %q, want one naming the host function call", *notices)
	}
}

// TestSnapshotCycles: instantiating from a snapshot and closing leaves the
// process's file descriptors and mappings flat.
func TestSnapshotCycles(t *testing.T) {
	c, _ := snapCompile(t, "host/runtime/wazero/testdata/snapguest")
	instFor(t, c, "o")
	count := func() (fds, maps int) {
		ents, _ := os.ReadDir("/proc/self/fd")
		b, _ := os.ReadFile("/proc/self/maps")
		return len(ents), strings.Count(string(b), "\n")
	}
	cycle := func() {
		inst, err := runtime.InstantiateFor(context.Background(), c, "o")
		if err != nil {
			t.Fatal(err)
		}
		inst.Close(context.Background())
	}
	for range 100 {
		cycle()
	}
	fds0, maps0 := count()
	const n = 10000
	for range n {
		cycle()
	}
	fds1, maps1 := count()
	if fds1 > fds0+2 || maps1 > maps0+20 {
		t.Fatalf("after %d cycles: fds %d -> %d, mappings %d -> %d", n, fds0, fds1, maps0, maps1)
	}
}

// BenchmarkSnapshotTenants: the memory each tenant (owner) with one warm
// echo instance adds, with snapshots on and off.
//
//	go test ./host/runtime/wazero -run '^$' -bench SnapshotTenants -benchtime 200x
func BenchmarkSnapshotTenants(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "scratch", true: "snapshots"}[on], func(b *testing.B) {
			c := compileWith(b, "plugins/examples/echo", 64*16, wazero.Options{Snapshots: on})
			ctx := context.Background()
			warm, err := runtime.InstantiateFor(ctx, c, "warm") // the module's first capture
			if err != nil {
				b.Fatal(err)
			}
			defer warm.Close(ctx)
			insts := make([]runtime.Instance, 0, b.N)
			goruntime.GC()
			debug.FreeOSMemory()
			start := pssKiB(b)
			b.ResetTimer()
			for i := range b.N {
				inst, err := runtime.InstantiateFor(ctx, c, strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := call(ctx, inst, "echo", `{"text":"hi"}`); err != nil {
					b.Fatal(err)
				}
				insts = append(insts, inst)
			}
			b.StopTimer()
			goruntime.GC()
			debug.FreeOSMemory()
			per := (pssKiB(b) - start) / float64(b.N)
			b.ReportMetric(per, "PSS-KiB/tenant")
			b.ReportMetric(1<<20/per, "tenants/GiB")
			for _, i := range insts {
				i.Close(ctx)
			}
		})
	}
}

// BenchmarkSnapshotNewTenant: the first instance of a tenant never seen
// before, and its first echo call, when the module's spare snapshot is
// ready (it is captured in the background after each new tenant).
//
//	go test ./host/runtime/wazero -run '^$' -bench SnapshotNewTenant -benchtime 100x
func BenchmarkSnapshotNewTenant(b *testing.B) {
	c := compileWith(b, "plugins/examples/echo", 64*16, wazero.Options{Snapshots: true})
	ctx := context.Background()
	warm, err := runtime.InstantiateFor(ctx, c, "warm")
	if err != nil {
		b.Fatal(err)
	}
	defer warm.Close(ctx)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if !wazero.WaitSpare(c) {
			b.Fatal("no spare snapshot")
		}
		b.StartTimer()
		inst, err := runtime.InstantiateFor(ctx, c, strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := call(ctx, inst, "echo", `{"text":"hi"}`); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		inst.Close(ctx)
		b.StartTimer()
	}
}
