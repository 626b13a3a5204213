//go:build !race

package sandboxtest

// A volume test: flooding 20 MB through the shell's marker scan and the
// plugin under the race detector costs minutes of instrumented byte loops
// (the shell's output pump and the bounds run under -race in host/proc's
// own tests). It is built only without -race; make test runs this package
// without -race (NORACE in the Makefile).

import (
	"strings"
	"testing"
	"time"
)

func TestHugeOutput(t *testing.T) { onEngines(t, testHugeOutput) }

func testHugeOutput(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	start := time.Now()
	// 20 MB: past every bound below (30,000 characters, 16 MiB) with room
	// to spare; the flood's size changes nothing but the time.
	m := shOK(t, s, map[string]any{"cmd": "head -c 20000000 /dev/zero | tr '\\0' x; echo done >&2", "timeout": 120})
	out := m["output"].(string)
	if !strings.HasPrefix(out, strings.Repeat("x", 30000)+"\n... [output truncated") || m["exit_code"] != float64(0) {
		t.Errorf("20 MB output: %d bytes, exit %v", len(out), m["exit_code"])
	}
	t.Logf("20 MB through bash (truncated): %v", time.Since(start))
	start = time.Now()
	m = shOK(t, s, map[string]any{"cmd": "head -c 20000000 /dev/zero | tr '\\0' x", "truncate": false, "timeout": 120})
	out = m["output"].(string)
	if len(out) != 16<<20+len("\n... [output truncated at 16 MiB]") || !strings.HasSuffix(out, "\n... [output truncated at 16 MiB]") {
		t.Errorf("20 MB output, truncate false: %d bytes", len(out))
	}
	t.Logf("20 MB through bash (truncate: false, 16 MiB returned): %v", time.Since(start))
	// 12 MB from python, past its 8 MiB bound.
	r := s.call(t, "sandbox_execute_code", map[string]any{"code": "import sys\nfor _ in range(12):\n    sys.stdout.write('y' * 1000000)\n"})
	o := r.Object(t)
	if o["status"] != "ok" || len(o["stdout"].(string)) > 9<<20 || !strings.HasSuffix(o["stdout"].(string), "[stdout truncated at 8 MiB]") {
		t.Errorf("12 MB from python: status %v, %d bytes", o["status"], len(o["stdout"].(string)))
	}
	s.alive(t)
}
