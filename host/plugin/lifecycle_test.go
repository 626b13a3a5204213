package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/fsroot"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/files"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/sdk/abi"
)

// noCleanup hides the Lifecycle of the files family, to check that the
// reload test fails without Cleanup.
type noCleanup struct{ f *files.Family }

func (n noCleanup) Name() abi.Family   { return n.f.Name() }
func (n noCleanup) Defs() []hostfn.Def { return n.f.Defs() }

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func rssKiB(t *testing.T) int {
	t.Helper()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(l); len(f) >= 2 && string(f[0]) == "VmRSS:" {
			n, _ := strconv.Atoi(string(f[1]))
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// reloadChanged reloads a plugin holding file roots n times, changing its
// manifest each time and calling it so its roots are opened, and returns
// the open fds after the first reload and at the end.
func reloadChanged(t *testing.T, n int, cleanup bool) (fdFirst, fdLast, rssFirst, rssLast int) {
	dir := t.TempDir()
	pkg := testplugins.Package(t, dir, "host/plugin/testdata/importer", []hostfn.Family{filesStub{}}, nil)
	mpath := filepath.Join(pkg, "manifest.json")
	orig, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	// the importer reads /etc/hostname: grant /etc so that each call
	// opens the plugin's root
	root := "/etc"
	policy := &caps.Policy{Plugins: map[string]abi.Capabilities{
		"importer": {Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: root, Mode: abi.ReadOnly}}}},
	}}
	fs := files.New(fsroot.Options{})
	defer fs.Close()
	fam := hostfn.Family(fs)
	if !cleanup {
		fam = noCleanup{fs}
	}
	ctx := context.Background()
	reg, err := plugin.New(ctx, plugin.Options{Engine: engine(t), Policy: policy, Env: caps.Env{Tmp: root}, Dir: dir, Logger: quiet(),
		Families: func(g *caps.Grant) []hostfn.Family {
			if g.Has(abi.FamilyFiles) {
				return []hostfn.Family{fam}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	for i := 0; i < n; i++ {
		m := map[string]any{}
		if err := json.Unmarshal(orig, &m); err != nil {
			t.Fatal(err)
		}
		m["description"] = fmt.Sprintf("generation %d", i)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(mpath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := reg.Reload(ctx); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if _, err := reg.CallTool(ctx, plugin.CallRequest{Name: "peek", Args: []byte(`{}`)}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i == 0 {
			fdFirst, rssFirst = openFDs(t), rssKiB(t)
		}
	}
	return fdFirst, openFDs(t), rssFirst, rssKiB(t)
}

// TestReloadChangedPluginCleansUp: 200 reloads of a changed plugin that
// holds file roots leave the open fds and RSS at their level after the
// first reload; without Cleanup (checked over 30 reloads) the fds grow by
// one root per reload.
func TestReloadChangedPluginCleansUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		cleanup bool
	}{{"with cleanup", 200, true}, {"without cleanup", 30, false}} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			fd0, fd1, rss0, rss1 := reloadChanged(t, n, tc.cleanup)
			t.Logf("fds %d -> %d, RSS %d -> %d KiB", fd0, fd1, rss0, rss1)
			leaked := fd1-fd0 > 10
			if leaked == tc.cleanup {
				t.Fatalf("cleanup %v: fds %d after the first reload, %d after %d", tc.cleanup, fd0, fd1, n)
			}
			// (in a race build RSS grows by itself: race_on_test.go;
			// TestReloadSwapSoak counts memory mappings there)
			if tc.cleanup && !raceEnabled && rss1-rss0 > 32<<10 {
				t.Fatalf("RSS grew from %d to %d KiB over %d reloads", rss0, rss1, n)
			}
		})
	}
}
