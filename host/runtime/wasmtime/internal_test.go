//go:build cgo

package wasmtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// TestRawPointers checks the layout rawptr relies on: the C pointer is the
// first field of the wasmtime-go objects it is used on.
func TestRawPointers(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[wasmtime.Store](), reflect.TypeFor[wasmtime.WasiConfig](), reflect.TypeFor[wasmtime.Linker](), reflect.TypeFor[wasmtime.Module](), reflect.TypeFor[wasmtime.Config]()} {
		f := typ.Field(0)
		if f.Name != "_ptr" || f.Offset != 0 || f.Type.Kind() != reflect.Pointer {
			t.Errorf("%s: first field %s %s at %d, want _ptr pointer at 0", typ, f.Name, f.Type, f.Offset)
		}
	}
	// instancePre.instantiate writes a C wasmtime_instance_t (uint64
	// store id, size_t) over a wasmtime.Instance.
	if typ := reflect.TypeFor[wasmtime.Instance](); typ.NumField() != 1 || typ.Size() != 16 || typ.Field(0).Name != "val" {
		t.Errorf("wasmtime.Instance: %d fields, %d bytes, want one 16-byte val", typ.NumField(), typ.Size())
	}
}

func TestVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := modulePath + " " + strings.TrimPrefix(version, "wasmtime-go-")
	if !strings.Contains(string(b), want) {
		t.Fatalf("go.mod does not require %q: update version in cache.go", want)
	}
}

const modulePath = "github.com/bytecodealliance/wasmtime-go/v39"

// emptyModule is the smallest valid module.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00")

func TestDiskCache(t *testing.T) {
	eng := wasmtime.NewEngine()
	m, err := wasmtime.NewModule(eng, emptyModule)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	other := append([]byte{}, emptyModule...)
	other = append(other, 0, 4, 'n', 'a', 'm', 'e') // a custom section: same code, other digest
	cases := []struct {
		name    string
		corrupt func(path string, b []byte) []byte // nil: leave the file alone
		wasm    []byte                             // what is loaded
		hit     bool
	}{
		{"written file is loaded", nil, emptyModule, true},
		{"other module misses", nil, other, false},
		{"flipped blob byte", func(_ string, b []byte) []byte { b[len(b)-1] ^= 1; return b }, emptyModule, false},
		{"flipped header byte", func(_ string, b []byte) []byte { b[len(magic)+3] ^= 1; return b }, emptyModule, false},
		{"truncated", func(_ string, b []byte) []byte { return b[:len(b)/2] }, emptyModule, false},
		{"empty", func(string, []byte) []byte { return nil }, emptyModule, false},
		{"a file of the metered flavor", func(string, []byte) []byte {
			o, err := newDiskCache(t.TempDir(), Version()+"+fuel")
			if err != nil {
				t.Fatal(err)
			}
			if err := o.store(m, emptyModule); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(o.path(sha256.Sum256(emptyModule)))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, emptyModule, false},
		{"raw serialization without our header", func(string, []byte) []byte {
			raw, err := m.Serialize()
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}, emptyModule, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newDiskCache(t.TempDir(), Version())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.store(m, emptyModule); err != nil {
				t.Fatal(err)
			}
			if tc.corrupt != nil {
				p := c.path(sha256.Sum256(emptyModule))
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, tc.corrupt(p, b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := c.load(eng, tc.wasm)
			if (got != nil) != tc.hit {
				t.Fatalf("hit %v, want %v", got != nil, tc.hit)
			}
			if got != nil {
				got.Close()
			}
			ents, _ := os.ReadDir(c.dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".tmp-") {
					t.Fatalf("temp file left: %s", e.Name())
				}
			}
		})
	}
}

func TestCorruptCacheFileIsRecompiled(t *testing.T) {
	dir := t.TempDir()
	e, err := New(Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	en := e.(*engine)
	m, err := en.plain.module(emptyModule)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	p := en.plain.cache.path(sha256.Sum256(emptyModule))
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(good[:len(good)-8:len(good)-8], "garbage!"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err = en.plain.module(emptyModule); err != nil {
		t.Fatal(err)
	}
	m.Close()
	again, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(again, good) {
		t.Fatalf("corrupt cache file not rewritten (err %v)", err)
	}
}
