package plugin_test

import (
	"context"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
)

// TestNoInstanceUntilCalled: a loaded plugin holds no instance (the load
// check's is closed) until its first call, which makes one.
func TestNoInstanceUntilCalled(t *testing.T) {
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	reg := newRegistry(t, dir)
	if err := reg.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := reg.Catalog().Lookup("echo").Plugin
	if n := p.IdleInstances(plugin.DefaultOwner); n != 0 {
		t.Fatalf("%d instances after load, want none", n)
	}
	call(t, reg, "echo", `{"text":"x"}`)
	if n := p.IdleInstances(plugin.DefaultOwner); n != 1 {
		t.Fatalf("%d instances after the first call, want 1", n)
	}
}
