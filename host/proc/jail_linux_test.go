package proc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/proc"
)

// TestJail: a program in a Jail runs as the sandbox user in /workspace
// (the given directory, writable), with its own /tmp, the environment it
// was given and nothing else, a read-only /usr, and only loopback unless
// the network is shared.
func TestJail(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap (bwrap) is needed: Debian package bubblewrap")
	}
	j := proc.NewJail(proc.Sandbox{})
	defer j.Close()
	dir, tmp := t.TempDir(), t.TempDir()
	t.Setenv("AIOD_JAIL_LEAK", "leaked")
	script := `id -u; pwd; echo "env:$(env | sort | tr '\n' ' ')"; touch /workspace/made /tmp/made; if touch /usr/.x 2>/dev/null; then echo usr-writable; fi; echo "net:$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"`
	run := func(share bool) string {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = []string{"PATH=" + proc.DefaultPath, "ONLY=this"}
		if err := j.Command(cmd, dir, tmp, share); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	out := run(false)
	lines := strings.Split(out, "\n")
	if lines[0] != "10001" || lines[1] != "/workspace" || strings.Contains(out, "usr-writable") || strings.Contains(out, "leaked") ||
		!strings.Contains(out, "ONLY=this") || !strings.Contains(out, "net:lo \n") {
		t.Fatalf("jail:\n%s", out)
	}
	for _, f := range []string{filepath.Join(dir, "made"), filepath.Join(tmp, "made")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("not written through: %v", err)
		}
	}
	if out := run(true); strings.Contains(out, "net:lo \n") {
		t.Fatalf("shared network shows only loopback:\n%s", out)
	}
}
