package wazero_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	rt "github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

func compileImage(t *testing.T, on bool) (rt.Compiled, func()) {
	t.Helper()
	wasm := testplugins.Wasm(t, "plugins/examples/echo")
	testplugins.Warm(t, wasm)
	restore := wazero.SetImage(on)
	defer restore()
	e, err := wazero.New(wazero.Options{CacheDir: testplugins.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.Compile(context.Background(), wasm, rt.Config{Name: "t", Families: []hostfn.Family{core.New()}, MemoryPages: 64 * 16})
	if err != nil {
		t.Fatal(err)
	}
	if wazero.HasImage(c) != on {
		t.Fatalf("data image %v, want %v", wazero.HasImage(c), on)
	}
	return c, func() { c.Close(context.Background()); e.Close(context.Background()) }
}

// TestImageSameMemory: an instance that starts from the data image has,
// before its _initialize, byte for byte the memory wazero's own copy of
// the data segments gives; and it answers.
func TestImageSameMemory(t *testing.T) {
	ctx := context.Background()
	var images [2][]byte
	for i, on := range []bool{false, true} {
		c, done := compileImage(t, on)
		var err error
		if images[i], err = wazero.MemoryAtStart(ctx, c); err != nil {
			t.Fatal(err)
		}
		if on {
			inst, err := c.Instantiate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := call(ctx, inst, "echo", `{"text":"imaged"}`); err != nil || !bytes.Contains([]byte(out), []byte("imaged")) {
				t.Fatalf("echo from an imaged instance: %q %v", out, err)
			}
			inst.Close(ctx)
		}
		done()
	}
	if !bytes.Equal(images[0], images[1]) {
		t.Fatal("memory at start differs with the data image")
	}
}

// TestImageCopyOnWrite: what one instance writes over its image is its
// own: another instance, and one made afterwards, still read the image;
// the zero-page release does not bring the image back under a page the
// guest zeroed; compiling and closing leaves no file descriptor behind.
func TestImageCopyOnWrite(t *testing.T) {
	ctx := context.Background()
	fds := func() int { es, _ := os.ReadDir("/proc/self/fd"); return len(es) }
	before := fds()
	c, done := compileImage(t, true)
	size := wazero.ImageSize(c)
	a, err := c.Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := c.Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if maps, _ := os.ReadFile("/proc/self/maps"); runtime.GOOS == "linux" && !bytes.Contains(maps, []byte("memfd:aiod-data-image")) {
		t.Fatal("the image is not mapped into the instances")
	}
	// a page of the image the guest's start leaves non-zero (rodata)
	mb := wazero.InstanceMemory(b)
	page := -1
	for off := 1 << 16; off+4096 <= size; off += 4096 {
		got, _ := mb.Read(uint32(off), 4096)
		if !bytes.Equal(got, make([]byte, 4096)) {
			page = off
			break
		}
	}
	if page < 0 {
		t.Fatalf("no non-zero page in a %d-byte image", size)
	}
	want, _ := mb.Read(uint32(page), 4096)
	want = bytes.Clone(want)
	ma := wazero.InstanceMemory(a)
	if !ma.Write(uint32(page), make([]byte, 4096)) {
		t.Fatal("write")
	}
	wazero.DropZeroPages(a)
	if got, _ := ma.Read(uint32(page), 4096); !bytes.Equal(got, make([]byte, 4096)) {
		t.Fatal("the zero-page release brought the image back under a page the guest zeroed")
	}
	if got, _ := mb.Read(uint32(page), 4096); !bytes.Equal(got, want) {
		t.Fatal("one instance's write reached another's memory")
	}
	d, err := c.Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := wazero.InstanceMemory(d).Read(uint32(page), 4096); !bytes.Equal(got, want) {
		t.Fatal("one instance's write reached a later instance")
	}
	d.Close(ctx)
	if out, err := call(ctx, a, "echo", `{"text":"a"}`); err != nil || !bytes.Contains([]byte(out), []byte(`"a"`)) {
		t.Fatalf("echo after the writes: %q %v", out, err)
	}
	a.Close(ctx)
	b.Close(ctx)
	done()
	for range 5 {
		_, done := compileImage(t, true)
		done()
	}
	if after := fds(); after > before {
		t.Errorf("open fds %d before, %d after compiling and closing", before, after)
	}
}
