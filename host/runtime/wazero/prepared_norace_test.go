//go:build !race

package wazero_test

// Built only without -race (make test-go's non-race pass, NORACE_RUN):
// the cache file's format, checked sequentially, with a cold compile of a
// 5 MB module that takes tens of seconds under the race detector.

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	rt "github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// TestPreparedCache: the first compile writes the rewritten module into
// the cache directory and later ones read it; what they read is byte for
// byte the rewrite, and a cached file that was damaged, cut short or
// replaced is never used (the module is rewritten and the file written
// again). The module compiled from the cache is instrumented and answers.
func TestPreparedCache(t *testing.T) {
	wasm := testplugins.Wasm(t, "plugins/examples/echo")
	dir := t.TempDir()
	e, err := wazero.New(wazero.Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	path := wazero.PreparedPath(e, wasm)
	if path == "" || filepath.Dir(filepath.Dir(path)) != dir {
		t.Fatalf("prepared path %q, not under %s", path, dir)
	}
	want := wazero.Rewrite(e, wasm)
	if bytes.Equal(want, wasm) {
		t.Fatal("the rewrite changed nothing: the test proves nothing")
	}
	if got := wazero.Prepare(e, wasm); !bytes.Equal(got, want) {
		t.Fatal("first prepare differs from the rewrite")
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("nothing cached: %v", err)
	}
	if !bytes.HasSuffix(file, want) {
		t.Fatal("the cached file does not hold the rewrite")
	}
	head := len(file) - len(want)

	// a file that does not match its checksum is refused
	damaged := bytes.Clone(file)
	damaged[head+len(want)/2] ^= 0xff
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"damaged body", damaged},
		{"cut short", file[:head+len(want)/3]},
		{"header only", file[:head]},
		{"empty", nil},
		{"another module", append(bytes.Clone(file[:head]), wasm...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, c.file, 0o644); err != nil {
				t.Fatal(err)
			}
			if got := wazero.Prepare(e, wasm); !bytes.Equal(got, want) {
				t.Fatal("a bad cached file was used")
			}
			if again, _ := os.ReadFile(path); !bytes.Equal(again, file) {
				t.Fatal("the bad file was not written again")
			}
		})
	}

	// and a consistent file is what prepare returns: plant one
	planted := []byte("planted")
	sum := binary.BigEndian.AppendUint32(nil, crc32.Checksum(planted, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, append(append(bytes.Clone(file[:head-len(sum)]), sum...), planted...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := wazero.Prepare(e, wasm); !bytes.Equal(got, planted) {
		t.Fatal("a later prepare did not read the cache")
	}
	os.Remove(path)

	// a changed input is another file
	if other := wazero.PreparedPath(e, append(bytes.Clone(wasm), 0, 0)); other == path {
		t.Fatal("two modules share a cache file")
	}

	ctx := context.Background()
	c, err := e.Compile(ctx, wasm, rt.Config{Name: "t", Families: []hostfn.Family{core.New()}, MemoryPages: 64 * 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := wazero.InterruptErr(c); err != nil {
		t.Fatalf("compiled from the cache, not instrumented: %v", err)
	}
	inst, err := c.Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(ctx)
	if out, err := call(ctx, inst, "echo", `{"text":"hi"}`); err != nil || !bytes.Contains([]byte(out), []byte("hi")) {
		t.Fatalf("echo from the cached module: %q, %v", out, err)
	}
}
