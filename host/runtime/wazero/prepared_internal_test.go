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
)

// preparedDigests records, for each prepareVersion, the sha256 of the
// prepared form of testdata/prepare.wasm. When a change to the interrupt
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
	// 3: the table filled on first use (host/internal/lazytable); this
	// module has too few entries for it (lazytable_test.go covers it).
	{3, "6dba58e2e0df41c7bced4fce065db3ac884cc9a7137e7e278457e3ac80944964"},
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

	sum := sha256.Sum256(out)
	got := hex.EncodeToString(sum[:])
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
