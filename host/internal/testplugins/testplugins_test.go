package testplugins_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/internal/testwasm"
)

// minimal is the smallest module with a function, so that it has code to
// compile and cache.
var minimal = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
	0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code section: empty body
}

type entry struct {
	mtime int64
	ino   uint64
	size  int64
}

func entries(t *testing.T, dir string) map[string]entry {
	t.Helper()
	m := map[string]entry{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		m[rel] = entry{fi.ModTime().UnixNano(), fi.Sys().(*syscall.Stat_t).Ino, fi.Size()}
		return nil
	})
	return m
}

// TestWarmCommandKeysLikeATestBinary builds cmd/aiodtestcache as make
// runs it (a build whose build info names wazero's release), warms a cache
// with it for this test binary's key ("dev" under a plain `go test`,
// wazero's release under make's TESTFLAGS), then compiles the same module
// in this test binary: it must find the entry the command wrote instead of
// writing one of its own.
func TestWarmCommandKeysLikeATestBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "aiodtestcache")
	build := exec.Command("go", "build", "-o", bin, "./cmd/aiodtestcache")
	build.Dir = testplugins.Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mod := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(mod, minimal, 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	var stderr bytes.Buffer
	key := testwasm.CacheKey()
	cmd := exec.Command(bin, "-cache-dir", cache, "-key", key, mod)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("aiodtestcache: %v\n%s", err, stderr.String())
	}
	warmed := entries(t, cache)
	compiled := 0
	for rel := range warmed {
		if strings.HasPrefix(rel, "aiod-prepared"+string(filepath.Separator)) {
			continue // the instrumented module, keyed by its bytes alone
		}
		compiled++
		if !strings.HasPrefix(rel, "wazero-"+key+"-") {
			t.Errorf("cache entry %s: want it under wazero-%s-* (the name this test binary reads)", rel, key)
		}
	}
	if compiled == 0 {
		t.Fatalf("no compiled entry written: %v", warmed)
	}
	if err := host.Precompile(context.Background(), minimal, host.PackOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	after := entries(t, cache)
	for rel, e := range after {
		if w, ok := warmed[rel]; !ok {
			t.Errorf("the test binary wrote %s: the command's entries were not a hit", rel)
		} else if w != e {
			t.Errorf("the test binary rewrote %s instead of reading it", rel)
		}
	}
}
