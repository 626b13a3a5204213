package mcp

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingServed: the protocol layer owns the types it serves
// (host/mcp/catalog) and depends on nothing of what serves them.
func TestImportsNothingServed(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".", "./catalog").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/aiodhq/aiod/host/plugin" || strings.HasPrefix(dep, "github.com/aiodhq/aiod/host/plugin/") {
			t.Errorf("host/mcp depends on %s", dep)
		}
	}
}
