package sandboxtest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

const bashTool = "sandbox_execute_bash"

// sh runs a command and decodes the result object.
func sh(t *testing.T, s *server, args map[string]any) (map[string]any, bool) {
	t.Helper()
	r := s.call(t, bashTool, args)
	if r.IsError {
		return map[string]any{"error": r.Text()}, true
	}
	m := r.Object(t)
	// aiod's four keys; truncated and next_cursor on a cut output (cursor_test.go)
	if n := len(m); n != 4 && !(m["truncated"] == true && (n == 5 || n == 6 && m["next_cursor"] != nil)) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		t.Errorf("bash result keys: %v", keys)
	}
	return m, false
}

func shOK(t *testing.T, s *server, args map[string]any) map[string]any {
	t.Helper()
	m, e := sh(t, s, args)
	if e || m["status"] != "completed" {
		t.Fatalf("%v: %s", args["cmd"], fmtJSON(m))
	}
	return m
}

func TestBashBasics(t *testing.T) {
	defaultEngine(t, "the bash interpreter's commands: the plugin's logic; the engine's part (exit, deadline, output cap, concurrency) is in the TestBash* that run on every engine")
	s := sharedServer(t, "")
	d := tmpDir(t)
	m := shOK(t, s, map[string]any{"cmd": "echo out; echo err >&2; exit 3", "cwd": d})
	if m["output"] != "out\nerr\n" || m["exit_code"] != float64(3) || m["cwd"] != d {
		t.Errorf("basic: %s", fmtJSON(m))
	}
	// cd and export persist in the shared session; the result reports
	// the cwd the session ended in.
	must(t, os.Mkdir(d+"/sub", 0o755))
	m = shOK(t, s, map[string]any{"cmd": "cd sub && export AIOD_T=v1", "cwd": d})
	if m["cwd"] != d+"/sub" {
		t.Errorf("cd: %s", fmtJSON(m))
	}
	m = shOK(t, s, map[string]any{"cmd": "pwd; echo $AIOD_T"})
	if m["output"] != d+"/sub\nv1\n" {
		t.Errorf("persistence: %s", fmtJSON(m))
	}
	// Passing cwd back syncs the session.
	m = shOK(t, s, map[string]any{"cmd": "pwd", "cwd": d})
	if m["output"] != d+"\n" || m["cwd"] != d {
		t.Errorf("cwd sync: %s", fmtJSON(m))
	}
	// new_session: a fresh shell, which neither sees nor changes the
	// shared one.
	m = shOK(t, s, map[string]any{"cmd": "echo ${AIOD_T:-unset}; cd /; AIOD_T=v2", "new_session": true, "cwd": d + "/sub"})
	if m["output"] != "unset\n" || m["cwd"] != "/" {
		t.Errorf("new_session: %s", fmtJSON(m))
	}
	m = shOK(t, s, map[string]any{"cmd": "echo $AIOD_T; pwd"})
	if m["output"] != "v1\n"+d+"\n" {
		t.Errorf("shared after new_session: %s", fmtJSON(m))
	}
	shOK(t, s, map[string]any{"cmd": "unset AIOD_T"})

	// preserve_symlinks: the cwd reported is the one given, not its
	// physical path (while the command stays there).
	must(t, os.Symlink("sub", d+"/link"))
	m = shOK(t, s, map[string]any{"cmd": "true", "cwd": d + "/link"})
	if m["cwd"] != d+"/sub" {
		t.Errorf("physical cwd: %s", fmtJSON(m))
	}
	m = shOK(t, s, map[string]any{"cmd": "echo x", "cwd": d + "/link", "preserve_symlinks": true})
	if m["cwd"] != d+"/link" || m["output"] != "x\n" {
		t.Errorf("preserve_symlinks: %s", fmtJSON(m))
	}
	m = shOK(t, s, map[string]any{"cmd": "cd ..", "cwd": d + "/link", "preserve_symlinks": true})
	if m["cwd"] != d {
		t.Errorf("preserve_symlinks after cd: %s", fmtJSON(m))
	}
}

func TestBashErrors(t *testing.T) {
	defaultEngine(t, "the bash tool's argument errors: the plugin's logic")
	s := sharedServer(t, "")
	for _, args := range []map[string]any{{}, {"cmd": ""}, {"cmd": "   "}, {"cwd": "/tmp"}} {
		r := s.call(t, bashTool, args)
		if !r.IsError || r.Text() != "cmd is required" || len(r.Content) != 1 {
			t.Errorf("%v: isError=%v %q", args, r.IsError, r.Text())
		}
	}
	m, e := sh(t, s, map[string]any{"cmd": "pwd", "cwd": "/nonexistent-aiod-dir"})
	if !e || !strings.Contains(m["error"].(string), "/nonexistent-aiod-dir") {
		t.Errorf("bad cwd: %s", fmtJSON(m))
	}
	m, e = sh(t, s, map[string]any{"cmd": "pwd", "cwd": "relative/dir"})
	if !e || !strings.Contains(m["error"].(string), "must be an absolute path") {
		t.Errorf("relative cwd: %s", fmtJSON(m))
	}
	m, e = sh(t, s, map[string]any{"cmd": "pwd", "cwd": "/etc"})
	if !e || m["error"] != "cwd /etc is outside the granted directories" {
		t.Errorf("cwd outside: %s", fmtJSON(m))
	}
}

func TestBashTimeout(t *testing.T) { onEngines(t, testBashTimeout) }

func testBashTimeout(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	d := tmpDir(t)
	start := time.Now()
	m, e := sh(t, s, map[string]any{"cmd": "echo before; sleep 30; echo after", "timeout": 1, "cwd": d})
	if e || m["status"] != "hard_timeout" || m["exit_code"] != nil || m["output"] != "before\n" {
		t.Errorf("timeout: %s", fmtJSON(m))
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("timeout took %v", el)
	}
	// The shared session survives, and kept its directory.
	m = shOK(t, s, map[string]any{"cmd": "pwd"})
	if m["output"] != d+"\n" {
		t.Errorf("after timeout: %s", fmtJSON(m))
	}
}

func TestBashTruncate(t *testing.T) { onEngines(t, testBashTruncate) }

func testBashTruncate(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	m := shOK(t, s, map[string]any{"cmd": "yes é | head -c 120000 | tr -d '\\n'"})
	out := m["output"].(string)
	if !strings.HasSuffix(out, "\n... [output truncated to the first 30000 characters; call again with truncate: false for the full output]") ||
		!strings.HasPrefix(out, strings.Repeat("é", 30000)) || strings.Count(out, "é") != 30000 {
		t.Errorf("truncated output: %d chars, tail %q", len([]rune(out)), out[len(out)-120:])
	}
	m = shOK(t, s, map[string]any{"cmd": "head -c 40000 /dev/zero | tr '\\0' a", "truncate": false})
	if m["output"] != strings.Repeat("a", 40000) {
		t.Errorf("truncate false: %d bytes", len(m["output"].(string)))
	}
	m = shOK(t, s, map[string]any{"cmd": "head -c 30000 /dev/zero | tr '\\0' a"})
	if m["output"] != strings.Repeat("a", 30000) {
		t.Errorf("exactly 30000: %d bytes", len(m["output"].(string)))
	}
}

// TestBashExitExec: `exit` and `exec` in a command end the command, not the
// shared session, and never hang it.
func TestBashExitExec(t *testing.T) { onEngines(t, testBashExitExec) }

func testBashExitExec(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	d := tmpDir(t)
	shOK(t, s, map[string]any{"cmd": "export AIOD_KEEP=yes", "cwd": d})
	for _, c := range []struct {
		cmd  string
		out  string
		exit float64
	}{
		{"echo x; exit 0", "x\n", 0},
		{"exit 7", "", 7},
		{"exec echo replaced", "replaced\n", 0},
		{"exec sh -c 'exit 4'", "", 4},
		{"exec 1>&-; echo gone", "bash: line 1: echo: write error: Bad file descriptor\n", 1},
		{"kill -9 $BASHPID", "", 137},
		{"kill -9 $$", "", -1}, // the session's own shell: any outcome, but it must recover
		{"exec bash -c 'kill -9 $PPID'", "", -1},
	} {
		m, e := sh(t, s, map[string]any{"cmd": c.cmd, "timeout": 10})
		if c.exit >= 0 && (e || m["output"] != c.out || m["exit_code"] != c.exit) {
			t.Errorf("%q: %s", c.cmd, fmtJSON(m))
		}
		m = shOK(t, s, map[string]any{"cmd": "echo $AIOD_KEEP; pwd"})
		if m["output"] != "yes\n"+d+"\n" {
			t.Errorf("after %q: %s", c.cmd, fmtJSON(m))
		}
	}
	shOK(t, s, map[string]any{"cmd": "unset AIOD_KEEP"})
}

// TestBashConcurrent: eight calls at once on the shared session run one
// after the other, each with its own output.
func TestBashConcurrent(t *testing.T) { onEngines(t, testBashConcurrent) }

func testBashConcurrent(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	d := tmpDir(t)
	var wg sync.WaitGroup
	outs := make([]string, 8)
	start := time.Now()
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.call(t, bashTool, map[string]any{"cmd": fmt.Sprintf("echo start %d >> %s/log; sleep 0.2; echo %d; echo end %d >> %s/log", i, d, i, i, d)})
			outs[i] = r.Object(t)["output"].(string)
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o != fmt.Sprintf("%d\n", i) {
			t.Errorf("call %d: %q", i, o)
		}
	}
	if el := time.Since(start); el < 1600*time.Millisecond {
		t.Errorf("8 x 0.2s took %v: not serialized", el)
	}
	// Serialized: every start is followed by its own end.
	lines := strings.Split(strings.TrimSpace(readFile(t, d+"/log")), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if strings.TrimPrefix(lines[i], "start ") != strings.TrimPrefix(lines[i+1], "end ") {
			t.Fatalf("interleaved: %q", lines)
		}
	}
}
