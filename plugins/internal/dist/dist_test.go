package dist_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/aiodhq/aiod/plugins/internal/dist"
)

func TestSubAndPresent(t *testing.T) {
	built := fstest.MapFS{"dist/echo/manifest.json": {Data: []byte("{}")}, "dist/order": {Data: []byte("echo\n")}}
	sub := dist.Sub(built)
	if b, err := fs.ReadFile(sub, "order"); err != nil || string(b) != "echo\n" {
		t.Fatalf("order: %q %v", b, err)
	}
	if !dist.Present(sub) {
		t.Error("a dist with a package: not present")
	}
	// a clone built without make: the dist directory holds only its README
	bare := dist.Sub(fstest.MapFS{"dist/README.md": {Data: []byte("build outputs")}})
	if dist.Present(bare) {
		t.Error("a dist without a package: present")
	}
}
