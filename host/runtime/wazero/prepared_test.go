package wazero_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime/wazero"
)

// TestPreparedNoCacheDir: an engine without a cache directory writes
// nothing and still instruments.
func TestPreparedNoCacheDir(t *testing.T) {
	wasm := testplugins.Wasm(t, "plugins/examples/echo")
	e, err := wazero.New(wazero.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if p := wazero.PreparedPath(e, wasm); p != "" {
		t.Fatalf("prepared path %q without a cache directory", p)
	}
	if bytes.Equal(wazero.Prepare(e, wasm), wasm) {
		t.Fatal("not rewritten")
	}
}
