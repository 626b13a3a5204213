package plugin_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/filedigest"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

var (
	swapOnce       sync.Once
	swapV1, swapV2 string
	swapBase       string
)

// TestMain removes what the test binary packaged once for all its tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if swapBase != "" {
		os.RemoveAll(swapBase)
	}
	os.Exit(code)
}

// swapVersions copies both versions of the swap test plugin, packaged
// once per test binary (describing a module is slow under -race), into
// dir/v1/swap and dir/v2/swap.
func swapVersions(t testing.TB, dir string) (v1, v2 string) {
	t.Helper()
	swapOnce.Do(func() {
		base, err := os.MkdirTemp("", "aiod-swap-")
		if err != nil {
			t.Fatal(err)
		}
		swapBase = base
		swapV1 = testplugins.Package(t, filepath.Join(base, "v1"), "host/plugin/testdata/swapv1", nil, nil)
		swapV2 = testplugins.Package(t, filepath.Join(base, "v2"), "host/plugin/testdata/swapv2", nil, nil)
	})
	if swapV1 == "" {
		t.Fatal("packaging the swap plugin failed in an earlier test")
	}
	v1, v2 = filepath.Join(dir, "v1", "swap"), filepath.Join(dir, "v2", "swap")
	copyPackage(t, swapV1, v1)
	copyPackage(t, swapV2, v2)
	return v1, v2
}

// relink points the link at target atomically, as deploy tools do: a new
// link renamed over the old one.
func relink(t testing.TB, target, link string) {
	t.Helper()
	tmp := link + ".new"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

func copyPackage(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"manifest.json", "plugin.wasm"} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReloadSymlinkedPackage(t *testing.T) {
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	os.MkdirAll(dir, 0o755)
	link := filepath.Join(dir, "swap")
	relink(t, v1, link)
	reg := newRegistry(t, dir)
	if got := text(call(t, reg, "which", `{"text":"a"}`)); got != "v1:a" {
		t.Fatalf("a linked package: got %q, want v1:a", got)
	}
	relink(t, v2, link)
	rep, err := reg.ReloadReport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := text(call(t, reg, "which", `{"text":"b"}`)); got != "v2:b" {
		t.Fatalf("after relinking: got %q, want v2:b", got)
	}
	if !slices.Equal(rep.Changed, []string{"swap"}) || len(rep.Added)+len(rep.Removed)+len(rep.Kept) != 0 {
		t.Errorf("report %+v, want swap changed", rep)
	}
	// unchanged: nothing to tell clients
	prev := reg.Catalog()
	rep, err = reg.ReloadReport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unchanged != 1 || len(rep.Changed) != 0 {
		t.Errorf("second reload %+v, want 1 unchanged", rep)
	}
	if tl, pr, rs := reg.Catalog().Changed(prev); tl || pr || rs {
		t.Errorf("an unchanged reload changed the lists: %v %v %v", tl, pr, rs)
	}
	if prev.Lookup("which").Plugin != reg.Catalog().Lookup("which").Plugin {
		t.Error("an unchanged plugin was not carried over")
	}
}

// TestReloadRefusedVersionKeepsServing: a new version that does not load
// never replaces the one serving; a fixed one then does.
func TestReloadRefusedVersionKeepsServing(t *testing.T) {
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	wasm2, _ := os.ReadFile(filepath.Join(v2, "plugin.wasm"))
	man2, _ := os.ReadFile(filepath.Join(v2, "manifest.json"))
	for _, tc := range []struct {
		name    string
		breakIt func(pkg string)
		err     string
	}{
		{"not wasm", func(pkg string) {
			os.WriteFile(filepath.Join(pkg, "manifest.json"), editManifest(func(m map[string]any) { delete(m, "sha256") })(man2), 0o644)
			os.WriteFile(filepath.Join(pkg, "plugin.wasm"), []byte("#!/bin/sh\n"), 0o644)
		}, "not a wasm module"},
		{"half-written module", func(pkg string) { os.WriteFile(filepath.Join(pkg, "plugin.wasm"), wasm2[:len(wasm2)/2], 0o644) }, "swap"},
		{"manifest does not parse", func(pkg string) { os.WriteFile(filepath.Join(pkg, "manifest.json"), man2[:len(man2)/2], 0o644) }, "invalid manifest"},
		{"digest mismatch", func(pkg string) {
			os.WriteFile(filepath.Join(pkg, "manifest.json"), editManifest(func(m map[string]any) { m["sha256"] = strings.Repeat("0", 64) })(man2), 0o644)
		}, "does not match"},
		{"module gone", func(pkg string) { os.Remove(filepath.Join(pkg, "plugin.wasm")) }, "module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "swap")
			copyPackage(t, v1, pkg)
			reg := newRegistry(t, dir)
			copyPackage(t, v2, pkg)
			tc.breakIt(pkg)
			rep, err := reg.ReloadReport(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("reload error %v, want one containing %q", err, tc.err)
			}
			if !slices.Equal(rep.Kept, []string{"swap"}) {
				t.Errorf("report %+v, want swap kept", rep)
			}
			if got := text(call(t, reg, "which", `{"text":"x"}`)); got != "v1:x" {
				t.Fatalf("after a refused version: got %q, want the old v1:x", got)
			}
			if reg.Catalog().LoadError("swap") == "" {
				t.Error("no load error recorded")
			}
			copyPackage(t, v2, pkg)
			if err := reg.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := text(call(t, reg, "which", `{"text":"y"}`)); got != "v2:y" {
				t.Fatalf("after the fix: got %q, want v2:y", got)
			}
			if reg.Catalog().LoadError("swap") != "" {
				t.Error("load error kept after a good reload")
			}
		})
	}
}

func TestReloadRemovedPackage(t *testing.T) {
	work := t.TempDir()
	v1, _ := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	copyPackage(t, v1, filepath.Join(dir, "swap"))
	reg := newRegistry(t, dir)
	call(t, reg, "which", `{"text":"a"}`)
	os.RemoveAll(filepath.Join(dir, "swap"))
	rep, err := reg.ReloadReport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Removed, []string{"swap"}) || reg.Catalog().Lookup("which") != nil {
		t.Errorf("report %+v; the tool is still listed: %v", rep, reg.Catalog().Lookup("which") != nil)
	}
	if tl, _, _ := reg.Catalog().Changed(nil); !tl {
		t.Error("Changed(nil) must report every list")
	}
}

// TestReloadPrewarms: a changed plugin's new version starts with as many
// warm instances as the old one had live.
func TestReloadPrewarms(t *testing.T) {
	defer plugin.SetPrewarmBudget(time.Minute)() // four instantiations under -race
	reg, v2, link := burstSwap(t)
	before := reg.Catalog().Lookup("which").Plugin.IdleInstances(plugin.DefaultOwner)
	relink(t, v2, link)
	if err := reg.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := reg.Catalog().Lookup("which").Plugin.IdleInstances(plugin.DefaultOwner)
	if after != before {
		t.Errorf("new version has %d warm instances, the old one had %d", after, before)
	}
}

// compileLog records, for each plugin the registry loads, whether it
// compiled its module (the "compiled" attribute of "plugin loaded").
type compileLog struct {
	mu       sync.Mutex
	compiled []bool
	checked  []bool // and whether it ran the check (instantiate, describe)
}

func (l *compileLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *compileLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *compileLog) WithGroup(string) slog.Handler            { return l }
func (l *compileLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "plugin loaded" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		l.mu.Lock()
		switch a.Key {
		case "compiled":
			l.compiled = append(l.compiled, a.Value.Bool())
		case "checked":
			l.checked = append(l.checked, a.Value.Bool())
		}
		l.mu.Unlock()
		return true
	})
	return nil
}

// TestReloadReusesCompiledModule: swapping back to the version replaced
// last (an A/B deploy, a rollback) compiles nothing: the module compiled
// for it is kept once released; a version that only changes its
// manifest's text shares the module of the version it replaces.
func TestReloadReusesCompiledModule(t *testing.T) {
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	os.MkdirAll(dir, 0o755)
	link := filepath.Join(dir, "swap")
	relink(t, v1, link)
	log := &compileLog{}
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	for i, target := range []string{v2, v1, v2, v1} {
		relink(t, target, link)
		if err := reg.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("v%d:x", 2-i%2)
		if got := text(call(t, reg, "which", `{"text":"x"}`)); got != want {
			t.Fatalf("swap %d: %q, want %q", i, got, want)
		}
	}
	// v1 at start-up and v2 compile; the swaps back and forth do not,
	// and a version that passed its check is not checked again
	if want := []bool{true, true, false, false, false}; !slices.Equal(log.compiled, want) {
		t.Errorf("compiled per load %v, want %v", log.compiled, want)
	}
	if want := []bool{true, true, false, false, false}; !slices.Equal(log.checked, want) {
		t.Errorf("checked per load %v, want %v", log.checked, want)
	}
	man, _ := os.ReadFile(filepath.Join(v1, "manifest.json"))
	os.WriteFile(filepath.Join(v1, "manifest.json"), editManifest(func(m map[string]any) { m["description"] = "edited" })(man), 0o644)
	rep, err := reg.ReloadReport(ctx)
	if err != nil || !slices.Equal(rep.Changed, []string{"swap"}) {
		t.Fatalf("reload of an edited manifest: %+v %v", rep, err)
	}
	if last := log.compiled[len(log.compiled)-1]; last || len(log.compiled) != 6 {
		t.Errorf("an edited manifest: compiled per load %v, want a sixth load without compiling", log.compiled)
	}
	// a new manifest is checked against the module, even on a module held
	if last := log.checked[len(log.checked)-1]; !last {
		t.Errorf("an edited manifest: checked per load %v, want the sixth load checked", log.checked)
	}
}

// mappings counts the process's memory mappings: each wasm memory and each
// compiled module's code is one or more, so a leaked instance or module
// shows here even in a race build, where RSS grows by itself.
func mappings(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestReloadSwapSoak: 200 swaps between two versions, alternating the two
// deploy forms (a link renamed over the package's link; a new directory
// renamed into place, the old one moved aside and removed), each version
// called after its swap: the open fds, the memory mappings and (without
// the race detector) RSS stay within 10% of their level after the first
// swap.
func TestReloadSwapSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak (200 swaps): make test runs it, make test-short does not")
	}
	const swaps = 200
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	os.MkdirAll(dir, 0o755)
	pkg := filepath.Join(dir, "swap")
	aside := func(i int) {
		if st, err := os.Lstat(pkg); err == nil && st.IsDir() {
			old := filepath.Join(work, fmt.Sprintf("old-%d", i))
			if err := os.Rename(pkg, old); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(old)
		}
	}
	swapTo := func(i int, target string) {
		if i%2 == 0 {
			// a link renamed over the link (or, after a directory
			// swap, the directory moved aside first)
			tmp := pkg + ".new"
			if err := os.Symlink(target, tmp); err != nil {
				t.Fatal(err)
			}
			aside(i)
			if err := os.Rename(tmp, pkg); err != nil {
				t.Fatal(err)
			}
			return
		}
		next := filepath.Join(work, fmt.Sprintf("next-%d", i))
		copyPackage(t, target, next)
		if st, err := os.Lstat(pkg); err == nil && st.Mode()&os.ModeSymlink != 0 {
			os.Remove(pkg)
		}
		aside(i)
		if err := os.Rename(next, pkg); err != nil {
			t.Fatal(err)
		}
	}
	relink(t, v1, pkg)
	reg := newRegistry(t, dir)
	ctx := context.Background()
	var fd0, map0, rss0 int
	began := time.Now()
	for i := range swaps {
		target, want := v2, "v2:s"
		if i%2 == 1 {
			target, want = v1, "v1:s"
		}
		swapTo(i, target)
		rep, err := reg.ReloadReport(ctx)
		if err != nil || !slices.Equal(rep.Changed, []string{"swap"}) {
			t.Fatalf("swap %d: %+v %v", i, rep, err)
		}
		if got := text(call(t, reg, "which", `{"text":"s"}`)); got != want {
			t.Fatalf("swap %d: %q, want %q", i, got, want)
		}
		if i == 0 {
			fd0, map0, rss0 = openFDs(t), mappings(t), rssKiB(t)
		}
	}
	fd1, map1, rss1 := openFDs(t), mappings(t), rssKiB(t)
	t.Logf("%d swaps in %v: fds %d -> %d, mappings %d -> %d, RSS %d -> %d KiB (race detector %v)",
		swaps, time.Since(began).Round(time.Millisecond), fd0, fd1, map0, map1, rss0, rss1, raceEnabled)
	within := func(a, b int) bool { return b <= a+a/10 }
	if !within(fd0, fd1) || !within(map0, map1) {
		t.Errorf("after %d swaps: fds %d -> %d, mappings %d -> %d: over 10%% more than after the first", swaps, fd0, fd1, map0, map1)
	}
	if !raceEnabled && !within(rss0, rss1) {
		t.Errorf("after %d swaps: RSS %d -> %d KiB, over 10%% more than after the first", swaps, rss0, rss1)
	}
}

// TestReloadDuplicateNotLoaded: a second package naming a plugin already
// loaded (a link about to be renamed over the package, caught by a
// reload in between) is refused without being compiled or checked.
func TestReloadDuplicateNotLoaded(t *testing.T) {
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	os.MkdirAll(dir, 0o755)
	relink(t, v1, filepath.Join(dir, "swap"))
	if err := os.Symlink(v2, filepath.Join(dir, "swap.next")); err != nil {
		t.Fatal(err)
	}
	log := &compileLog{}
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: slog.New(log)})
	if err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Fatalf("load of a duplicate: %v", err)
	}
	defer reg.Close(ctx)
	if got := text(call(t, reg, "which", `{"text":"d"}`)); got != "v1:d" {
		t.Errorf("%q, want the first package's v1:d", got)
	}
	if len(log.compiled) != 1 {
		t.Errorf("%d plugins loaded, want 1 (the duplicate refused before loading)", len(log.compiled))
	}
}

// TestReloadReadsOnlyChanged: a reload reads and hashes only the modules
// whose files changed since they were last hashed: an unchanged package
// and a package relinked to a version seen before are not read again; a
// module overwritten is read, refused for its digest, and the version
// before keeps serving.
func TestReloadReadsOnlyChanged(t *testing.T) {
	defer func(s time.Duration) { filedigest.Settle = s }(filedigest.Settle)
	filedigest.Settle = 0 // the packages were written just now
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	os.MkdirAll(dir, 0o755)
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	link := filepath.Join(dir, "swap")
	relink(t, v1, link)
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: &caps.Policy{}, Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	reads := func(what string, f func() *plugin.Report, want int64, answer string) {
		t.Helper()
		n := plugin.ModuleReads()
		rep := f()
		if got := plugin.ModuleReads() - n; got != want {
			t.Errorf("%s: %d modules read, want %d (report %+v)", what, got, want, rep)
		}
		if got := text(call(t, reg, "which", `{"text":"x"}`)); got != answer {
			t.Errorf("%s: which answers %q, want %q", what, got, answer)
		}
		if got := text(call(t, reg, "echo", `{"text":"e"}`)); got != "e" {
			t.Errorf("%s: echo answers %q", what, got)
		}
	}
	reload := func() *plugin.Report {
		rep, _ := reg.ReloadReport(ctx)
		return rep
	}
	reads("unchanged", reload, 0, "v1:x")
	reads("to v2, first time", func() *plugin.Report { relink(t, v2, link); return reload() }, 1, "v2:x")
	reads("back to v1", func() *plugin.Report { relink(t, v1, link); return reload() }, 0, "v1:x")
	reads("to v2 again", func() *plugin.Report { relink(t, v2, link); return reload() }, 0, "v2:x")
	// v2's module overwritten with v1's bytes: its manifest pins v2's digest
	mod := filepath.Join(v2, "plugin.wasm")
	good, _ := os.ReadFile(mod)
	bad, _ := os.ReadFile(filepath.Join(v1, "plugin.wasm"))
	reads("overwritten", func() *plugin.Report {
		os.WriteFile(mod, bad, 0o644)
		rep := reload()
		if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "does not match") || !slices.Equal(rep.Kept, []string{"swap"}) {
			t.Errorf("overwritten module: errors %v, kept %v", rep.Errors, rep.Kept)
		}
		return rep
	}, 1, "v2:x")
	reads("restored", func() *plugin.Report { os.WriteFile(mod, good, 0o644); return reload() }, 1, "v2:x")
	reads("restored, again", reload, 0, "v2:x")
}

// TestReloadPrewarmBudget: prewarm stops once its budget is spent (having
// made at least one instance), so a version that had a burst of calls
// does not hold its successor back; the new pool grows on demand.
func TestReloadPrewarmBudget(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2)) // one prewarm goroutine
	defer plugin.SetPrewarmBudget(time.Nanosecond)()
	reg, v2, link := burstSwap(t)
	relink(t, v2, link)
	if err := reg.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := reg.Catalog().Lookup("which").Plugin
	if n := p.IdleInstances(plugin.DefaultOwner); n != 1 {
		t.Errorf("new version has %d warm instances within a spent budget, want 1", n)
	}
	if got := text(call(t, reg, "which", `{"text":"y"}`)); got != "v2:y" {
		t.Errorf("after the swap: %q", got)
	}
}

// burstSwap serves the swap plugin at v1 from a linked package and makes
// four calls to it at once, which leave four idle instances; it returns
// the registry, v2's package and the link to relink.
func burstSwap(t *testing.T) (reg *plugin.Registry, v2, link string) {
	t.Helper()
	work := t.TempDir()
	v1, v2 := swapVersions(t, work)
	dir := filepath.Join(work, "plugins")
	link = filepath.Join(dir, "swap")
	os.MkdirAll(dir, 0o755)
	relink(t, v1, link)
	reg = newRegistry(t, dir)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			call(t, reg, "which", `{"text":"z","sleep_ms":300}`)
		}()
	}
	close(release)
	wg.Wait()
	if n := reg.Catalog().Lookup("which").Plugin.IdleInstances(plugin.DefaultOwner); n != 4 {
		t.Fatalf("four overlapping calls left %d idle instances, want 4", n)
	}
	return reg, v2, link
}
