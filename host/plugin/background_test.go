package plugin_test

import (
	"context"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime"
)

// TestBackgroundLoad: with Options.Background the catalogue comes from the
// manifests before any module is compiled; calls wait for their plugin; a
// plugin refused while loading answers why and is then dropped.
func TestBackgroundLoad(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, dir, "host/plugin/testdata/swapv1", nil, nil)
	// the importer imports aiod:files, which the (empty) policy does not
	// grant: refused at link time, after it was listed
	testplugins.Package(t, dir, "host/plugin/testdata/importer", []hostfn.Family{filesStub{}}, nil)
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: filepath.Clean(dir), Logger: quiet(), Background: true})
	if err != nil {
		t.Fatalf("New: %v (link-time refusals come later in the background)", err)
	}
	defer reg.Close(ctx)
	var listed []string
	for _, tl := range reg.Catalog().Tools {
		listed = append(listed, tl.Decl.Name)
	}
	if !slices.Equal(listed, []string{"echo", "peek", "which"}) {
		t.Fatalf("listed at once: %v", listed)
	}
	// a call waits for its plugin
	if got := text(call(t, reg, "echo", `{"text":"hi"}`)); got != "hi" {
		t.Errorf("echo while loading: %q", got)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := reg.WaitLoaded(wctx); err != nil {
		t.Fatal(err)
	}
	if l := reg.Loading(); len(l) != 0 {
		t.Errorf("still loading after WaitLoaded: %v", l)
	}
	// the refused one is gone, and says why
	deadline := time.Now().Add(10 * time.Second)
	for reg.Catalog().Lookup("peek") != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if reg.Catalog().Lookup("peek") != nil {
		t.Fatal("a plugin refused in the background is still listed")
	}
	if e := reg.Catalog().LoadError("importer"); !strings.Contains(e, "not granted") {
		t.Errorf("load error %q", e)
	}
	if got := text(call(t, reg, "which", `{"text":"w"}`)); got != "v1:w" {
		t.Errorf("which after the drop: %q", got)
	}
}

// TestBackgroundCallOfRefusedPlugin: a call that reached a plugin before
// its background load failed answers isError naming the failure.
func TestBackgroundCallOfRefusedPlugin(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "host/plugin/testdata/importer", []hostfn.Family{filesStub{}}, nil)
	ctx := context.Background()
	// A call made right after New reaches the plugin while it compiles and
	// waits for it; should the refusal win the race and drop the plugin
	// first, the call is an unknown tool instead: try again, so that the
	// waiting path is the one checked.
	for try := 1; ; try++ {
		reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet(), Background: true})
		if err != nil {
			t.Fatal(err)
		}
		if reg.Catalog().Lookup("peek") == nil {
			t.Fatal("not listed at once")
		}
		out, err := reg.CallTool(ctx, plugin.CallRequest{Name: "peek"})
		reg.Close(ctx)
		switch {
		case err == nil:
			if !strings.Contains(string(out), "not available") || !strings.Contains(string(out), "not granted") {
				t.Errorf("call of a plugin refused while loading: %s", out)
			}
			return
		case err != plugin.ErrUnknownTool:
			t.Fatal(err)
		case try == 5:
			t.Fatal("five calls in a row found the plugin already dropped: the waiting path was never taken")
		}
	}
}

// countingEngine makes every compile take at least delay and records the
// most compiles under way at once.
type countingEngine struct {
	runtime.Engine
	delay     time.Duration
	mu        sync.Mutex
	now, most int
}

func (e *countingEngine) Compile(ctx context.Context, wasm []byte, cfg runtime.Config) (runtime.Compiled, error) {
	e.mu.Lock()
	e.now++
	e.most = max(e.most, e.now)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.now--
		e.mu.Unlock()
	}()
	t := time.Now()
	c, err := e.Engine.Compile(ctx, wasm, cfg)
	time.Sleep(e.delay - time.Since(t))
	return c, err
}

// TestBackgroundLoaders: the start-up loaders leave one core to calls
// while compiles are short (a warm cache), and take it once a compile has
// run coldCompile (a cold one).
func TestBackgroundLoaders(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2))
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, dir, "host/plugin/testdata/swapv1", nil, nil)
	testplugins.Package(t, dir, "plugins/examples/hash", nil, nil)
	for _, c := range []struct {
		name        string
		cold, delay time.Duration
		want        int
	}{
		{"warm", time.Hour, 300 * time.Millisecond, 1},
		{"cold", 100 * time.Millisecond, 600 * time.Millisecond, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer plugin.SetColdCompile(c.cold)()
			e := &countingEngine{Engine: engine(t), delay: c.delay}
			ctx := context.Background()
			reg, _ := plugin.New(ctx, plugin.Options{Engine: e, Policy: &caps.Policy{}, Dir: filepath.Clean(dir), Logger: quiet(), Background: true})
			defer reg.Close(ctx)
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := reg.WaitLoaded(wctx); err != nil {
				t.Fatal(err)
			}
			if e.most != c.want {
				t.Errorf("%d compiles at once on 2 cores, want %d", e.most, c.want)
			}
		})
	}
}

// gateEngine holds its first compile until gate closes, telling started
// which plugin it holds.
type gateEngine struct {
	runtime.Engine
	once    sync.Once
	gate    chan struct{}
	started chan string
}

func (e *gateEngine) Compile(ctx context.Context, wasm []byte, cfg runtime.Config) (runtime.Compiled, error) {
	first := false
	e.once.Do(func() { first = true })
	if first {
		e.started <- cfg.Name
		select {
		case <-e.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.Engine.Compile(ctx, wasm, cfg)
}

// TestBackgroundCallFirst: a call that waits for a plugin still loading
// has it compiled at once, beside the start-up loader, rather than after
// the loaders' queue: with the one loader (two cores, one left to calls)
// held by a compile that does not end, a call of another plugin is
// answered, and the held one is still loading.
func TestBackgroundCallFirst(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2))
	defer plugin.SetColdCompile(time.Hour)()
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, dir, "host/plugin/testdata/swapv1", nil, nil)
	testplugins.Package(t, dir, "plugins/examples/hash", nil, nil)
	e := &gateEngine{Engine: engine(t), gate: make(chan struct{}), started: make(chan string, 1)}
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: e, Policy: &caps.Policy{}, Dir: filepath.Clean(dir), Logger: quiet(), Background: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	defer close(e.gate)
	var held string
	select {
	case held = <-e.started:
	case <-time.After(time.Minute):
		t.Fatal("no compile started")
	}
	// a tool of a plugin the loader does not hold
	tool, args, want := "echo", `{"text":"first"}`, "first"
	if held == "echo" {
		tool, args, want = "which", `{"text":"first"}`, "v1:first"
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := reg.CallTool(cctx, plugin.CallRequest{Name: tool, Args: []byte(args)})
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("%s while the loader is held by %s: %s %v", tool, held, out, err)
	}
	if !slices.Contains(reg.Loading(), held) {
		t.Fatalf("%s no longer loading (%v): the gate did not hold it", held, reg.Loading())
	}
}
