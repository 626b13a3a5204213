package wazero

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/aiodhq/aiod/host/internal/interrupt"
	"github.com/aiodhq/aiod/host/internal/wasmbin"
	"github.com/aiodhq/aiod/host/runtime"
)

// preparedDigests records, for each prepareVersion, the sha256 of the
// prepared form of testdata/prepare.wasm (and from version 3 of
// tableModule's, after it). When a change to the interrupt
// rewriter or the data merge changes that output, TestPrepareVersion fails:
// bump prepareVersion (prepared.go) and append the new pair here, so that
// caches written by the older code are not read by the newer. Never edit a
// recorded pair.
var preparedDigests = []struct {
	version int
	sha256  string
}{
	{1, "2a6ab12689deb5e5fd7834b7d0bb48c3598d5db7df8158cfaa4223e34da1245c"},
	{2, "6dba58e2e0df41c7bced4fce065db3ac884cc9a7137e7e278457e3ac80944964"},
	// 3: the table filled on first use (host/internal/lazytable); from
	// here the digest also covers a generated module with a lazy table
	// (tableModule), the fixed one having too few entries for it.
	{3, "f3f5cdfe95fc0c91e1f9fcaaf76701d1790f957a5c02c692c65e4c3438bd747d"},
}

// TestPrepareVersion: the prepared form of a fixed module is the one
// recorded for the current prepareVersion, so that output and version
// change together (the cache keys on the version, not on the code).
func TestPrepareVersion(t *testing.T) {
	in, err := os.ReadFile("testdata/prepare.wasm")
	if err != nil {
		t.Fatal(err)
	}
	out, err := preparedForm(in)
	if err != nil {
		t.Fatalf("the fixed module is not prepared (it must be, for the test to mean anything): %v", err)
	}
	// the fixed module exercises both steps: instrumented and merged
	iw, err := interrupt.Instrument(in)
	if err != nil || Segments(out) >= Segments(in) || len(iw) <= len(in) {
		t.Fatalf("the fixed module is not both instrumented and merged: %d segments of %d, %d bytes of %d",
			Segments(out), Segments(in), len(out), len(in))
	}
	// and its output is valid wasm
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Fatalf("the prepared module does not compile: %v", err)
	}

	// and the table filled on first use (host/internal/lazytable), which
	// the fixed module is too small for: a generated one's prepared form
	// is in the digest too (from version 3)
	lazyOut, err := preparedForm(tableModule(300, false))
	if err != nil {
		t.Fatal(err)
	}
	if form := elemForm(t, lazyOut); form != 3 {
		t.Fatalf("the generated module's element segment is of form %d, not declarative", form)
	}
	if _, err := r.CompileModule(ctx, lazyOut); err != nil {
		t.Fatalf("the prepared module with a lazy table does not compile: %v", err)
	}

	h := sha256.New()
	h.Write(out)
	if prepareVersion >= 3 {
		h.Write(lazyOut)
	}
	got := hex.EncodeToString(h.Sum(nil))
	last := preparedDigests[len(preparedDigests)-1]
	seen := map[int]bool{}
	for i, d := range preparedDigests {
		if seen[d.version] || i > 0 && d.version <= preparedDigests[i-1].version {
			t.Fatalf("preparedDigests: version %d repeated or out of order", d.version)
		}
		seen[d.version] = true
	}
	switch {
	case last.version != prepareVersion:
		t.Fatalf("prepareVersion is %d and the last recorded digest is version %d's: append {%d, %q} to preparedDigests",
			prepareVersion, last.version, prepareVersion, got)
	case last.sha256 != got:
		t.Fatalf("the prepared output changed (sha256 %s, recorded for version %d: %s): bump prepareVersion to %d in prepared.go "+
			"and append {%d, %q} to preparedDigests, so that caches of the older output are not read",
			got, prepareVersion, last.sha256, prepareVersion+1, prepareVersion+1, got)
	}
}

// TestPreparedKey: the cache file of a module depends on the version and
// on every byte of the module.
func TestPreparedKey(t *testing.T) {
	in, err := os.ReadFile("testdata/prepare.wasm")
	if err != nil {
		t.Fatal(err)
	}
	k := preparedKey(prepareVersion, in)
	if k == preparedKey(prepareVersion+1, in) {
		t.Fatal("another version, the same key")
	}
	c := bytes.Clone(in)
	c[len(c)-1] ^= 1
	if k == preparedKey(prepareVersion, c) {
		t.Fatal("another module, the same key")
	}
	e := &engine{opts: Options{CacheDir: "cache"}}
	if p := e.preparedPath(in); p != filepath.Join("cache", "aiod-prepared", k+".wasm") {
		t.Fatalf("prepared path %q", p)
	}
}

// tableModule is a module of n functions () -> i32 (f_k returns k) in one
// table at offset 1, an exported "call" (i32) -> i32 calling the table at
// its argument (after a table.get of it with tableGet), a loop for the
// interrupt rewrite, a memory with data, and an _initialize that calls the
// table at 5 and stores what it returned at address 0 (a reactor,
// snapshotted).
func tableModule(n int, tableGet bool) []byte {
	sec := func(out []byte, id byte, p []byte) []byte {
		out, err := wasmbin.AppendSection(out, id, p)
		if err != nil {
			panic(err)
		}
		return out
	}
	u := wasmbin.AppendU32
	out := []byte(wasmbin.Header)
	out = sec(out, wasmbin.SecType, []byte{3, 0x60, 0, 1, 0x7F, 0x60, 1, 0x7F, 1, 0x7F, 0x60, 0, 0})
	p := u(nil, uint32(n+2))
	for range n {
		p = append(p, 0)
	}
	out = sec(out, wasmbin.SecFunction, append(p, 1, 2))
	out = sec(out, wasmbin.SecTable, u([]byte{1, 0x70, 0}, uint32(n+1)))
	out = sec(out, wasmbin.SecMemory, []byte{1, 0, 1})
	p = u([]byte{2, 4, 'c', 'a', 'l', 'l', 0}, uint32(n))
	p = u(append(p, 11, '_', 'i', 'n', 'i', 't', 'i', 'a', 'l', 'i', 'z', 'e', 0), uint32(n+1))
	out = sec(out, wasmbin.SecExport, p)
	p = u([]byte{1, 0, 0x41, 1, 0x0B}, uint32(n))
	for k := range n {
		p = u(p, uint32(k))
	}
	out = sec(out, wasmbin.SecElement, p)
	p = u(nil, uint32(n+2))
	for k := range n {
		body := append(wasmbin.AppendI32([]byte{0, 0x41}, int32(k)), 0x0B)
		p = append(u(p, uint32(len(body))), body...)
	}
	body := []byte{0, 0x03, 0x40, 0x0B} // loop end
	if tableGet {
		body = append(body, 0x20, 0, 0x25, 0, 0x1A) // local.get 0, table.get 0, drop
	}
	body = append(body, 0x20, 0, 0x11, 0, 0, 0x0B) // local.get 0, call_indirect type 0, end
	p = append(u(p, uint32(len(body))), body...)
	// _initialize: i32.const 0, call_indirect type 0 at 5, store the result at 0
	body = []byte{0, 0x41, 0, 0x41, 5, 0x11, 0, 0, 0x36, 2, 0, 0x0B}
	p = append(u(p, uint32(len(body))), body...)
	out = sec(out, wasmbin.SecCode, p)
	// data at 16 (the engine maps the data image: a snapshot needs one)
	return sec(out, wasmbin.SecData, []byte{1, 0, 0x41, 16, 0x0B, 5, 'h', 'e', 'l', 'l', 'o'})
}

// elemForm is the form (flags) of the first element segment of wasm, -1
// without one.
func elemForm(t *testing.T, wasm []byte) int {
	t.Helper()
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.ID == wasmbin.SecElement {
			return int(s.Payload(wasm)[1])
		}
	}
	return -1
}

// TestPreparedLazyTable: the engine fills a table on first use only where
// the module cannot tell (a table.get keeps the eager table), and an
// instance of either answers every index as the module says, from
// scratch and from an owner's snapshot.
func TestPreparedLazyTable(t *testing.T) {
	for _, tableGet := range []bool{false, true} {
		wasm := tableModule(300, tableGet)
		pw, err := preparedForm(wasm)
		if err != nil {
			t.Fatal(err)
		}
		if form, want := elemForm(t, pw), map[bool]int{false: 3, true: 0}[tableGet]; form != want {
			t.Fatalf("table.get %v: element segment of form %d, want %d", tableGet, form, want)
		}
		e, err := New(Options{Snapshots: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c, err := e.Compile(ctx, wasm, runtime.Config{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if c.(*compiled).snaps == nil {
			t.Fatalf("table.get %v: not snapshotted", tableGet)
		}
		for _, owner := range []string{"a", "a", "b"} {
			inst, err := runtime.InstantiateFor(ctx, c, owner)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 302 {
				got, err := inst.Call(ctx, nil, "call", uint64(i))
				switch {
				case i == 0 || i == 301:
					if err == nil {
						t.Fatalf("index %d: %d, want a trap", i, got)
					}
				case err != nil || got != int32(i-1):
					t.Fatalf("table.get %v, owner %s, index %d: %d %v", tableGet, owner, i, got, err)
				}
				if err != nil { // a trap discards the instance
					inst.Close(ctx)
					if inst, err = runtime.InstantiateFor(ctx, c, owner); err != nil {
						t.Fatal(err)
					}
				}
			}
			if m := inst.(*instance).m.Memory(); m != nil {
				if v, _ := m.ReadUint32Le(0); v != 4 {
					t.Fatalf("owner %s: _initialize stored %d, want 4 (f_4 at index 5)", owner, v)
				}
			}
			inst.Close(ctx)
		}
		if _, ok := c.(*compiled).snaps.Lookup("a"); !ok {
			t.Fatalf("table.get %v: no snapshot for owner a", tableGet)
		}
		c.Close(ctx)
		e.Close(ctx)
	}
}
