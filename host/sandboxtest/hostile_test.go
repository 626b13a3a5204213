package sandboxtest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// secret is the content of the file outside the sandbox; no answer may
// ever contain it.
const secret = "TOPSECRET-aiod-escape-probe"

// outsideDir is a directory outside the default sandbox roots (/tmp and
// the home directory), with secret.txt in it.
func outsideDir(t *testing.T) string {
	t.Helper()
	base := "/var/tmp"
	if home, _ := os.UserHomeDir(); strings.HasPrefix(base+"/", home+"/") {
		t.Skip("no directory outside the sandbox roots to probe")
	}
	if err := os.MkdirAll(base, 0o1777); err != nil {
		t.Fatalf("a directory outside the sandbox roots: %v", err)
	}
	d, err := os.MkdirTemp(base, "aiod-outside-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	writeFile(t, d+"/secret.txt", secret+"\n")
	must(t, os.Mkdir(d+"/sub", 0o755))
	return d
}

var (
	wsOnce sync.Once
	wsDir  string
)

// workspace is the --workspace directory of the second shared host.
func workspace(t *testing.T) string {
	wsOnce.Do(func() {
		d, err := os.MkdirTemp("/tmp", "aiod-ws-")
		must(t, err)
		wsDir = d
	})
	return wsDir
}

// escapeProbe plants links from inside (a directory inside the roots) to
// outside (a directory outside them) and tries every file action and the
// editor through `..` and through the links.
func escapeProbe(t *testing.T, s *server, inside, outside string) {
	rel := func(from, to string) string {
		r, err := filepath.Rel(from, to)
		must(t, err)
		return r
	}
	must(t, os.Symlink(outside, inside+"/abs"))
	must(t, os.Symlink(rel(inside, outside), inside+"/rel"))
	must(t, os.Symlink(outside+"/secret.txt", inside+"/fabs"))
	must(t, os.Symlink(rel(inside, outside+"/secret.txt"), inside+"/frel"))
	dotdot := inside + "/" + strings.Repeat("../", strings.Count(inside, "/")) + strings.TrimPrefix(outside, "/")

	files := []string{dotdot + "/secret.txt", inside + "/abs/secret.txt", inside + "/rel/secret.txt", inside + "/fabs", inside + "/frel"}
	dirs := []string{dotdot, inside + "/abs", inside + "/rel", inside + "/abs/sub"}

	check := func(what string, r *toolResult) {
		t.Helper()
		if strings.Contains(r.Text(), secret) {
			t.Errorf("%s leaked the secret: %s", what, r.Text())
		}
		if !r.IsError {
			t.Errorf("%s was not refused: %s", what, r.Text())
		}
		if readFile(t, outside+"/secret.txt") != secret+"\n" {
			t.Fatalf("%s changed the file outside", what)
		}
	}
	denied := func(what string, r *toolResult) {
		t.Helper()
		check(what, r)
		if !strings.Contains(r.Text(), `"error_type":"permission_denied"`) {
			t.Errorf("%s: not a permission_denied file error: %s", what, r.Text())
		}
	}
	for _, p := range files {
		for _, args := range fileProbes(p, "TOPSECRET") {
			denied(fmtJSON(args), s.call(t, fileOps, args))
		}
		for _, args := range []map[string]any{
			{"command": "view", "path": p},
			{"command": "view", "path": p, "view_range": []int{1, 1}},
			{"command": "create", "path": p, "file_text": "pwned"},
			{"command": "str_replace", "path": p, "old_str": "TOPSECRET", "new_str": "pwned"},
			{"command": "insert", "path": p, "insert_line": 0, "new_str": "pwned"},
			{"command": "undo_edit", "path": p},
		} {
			check("editor "+fmtJSON(args), s.call(t, editorTool, args))
		}
	}
	for _, d := range dirs {
		for _, args := range dirProbes(d, "TOP") {
			denied(fmtJSON(args), s.call(t, fileOps, args))
		}
		check("editor view "+d, s.call(t, editorTool, map[string]any{"command": "view", "path": d}))
		check("editor create in "+d, s.call(t, editorTool, map[string]any{"command": "create", "path": d + "/new.txt", "file_text": "pwned"}))
		if _, err := os.Stat(outside + "/new.txt"); err == nil {
			t.Fatalf("a file was created outside through %s", d)
		}
		if _, err := os.Stat(outside + "/sub/new.txt"); err == nil {
			t.Fatalf("a file was created outside through %s", d)
		}
	}
	// Walking the inside directory lists the links but never descends
	// through them.
	for _, args := range []map[string]any{
		{"action": "list", "path": inside, "recursive": true, "show_hidden": true},
		{"action": "find", "path": inside, "pattern": "*.txt", "show_hidden": true},
		{"action": "grep", "path": inside, "pattern": "TOP", "show_hidden": true},
		{"action": "glob", "path": inside, "pattern": "**/*", "show_hidden": true, "files_only": false},
	} {
		r := s.call(t, fileOps, args)
		if r.IsError || strings.Contains(r.Text(), secret) || strings.Contains(r.Text(), "/secret.txt") {
			t.Errorf("%s: %s", fmtJSON(args), r.Text())
		}
	}
	r := s.call(t, editorTool, map[string]any{"command": "view", "path": inside})
	if r.IsError || strings.Contains(r.Text(), "secret.txt") {
		t.Errorf("editor view of the inside directory: %s", r.Text())
	}
	// A link made at run time by the shell is no way out either.
	shOK(t, s, map[string]any{"cmd": "ln -s " + outside + " late && ln -s " + rel(inside, outside) + " late2", "cwd": inside})
	for _, p := range []string{inside + "/late/secret.txt", inside + "/late2/secret.txt"} {
		denied("read "+p, s.call(t, fileOps, map[string]any{"action": "read", "path": p}))
		denied("write "+p, s.call(t, fileOps, map[string]any{"action": "write", "path": p, "content": "pwned"}))
		check("editor "+p, s.call(t, editorTool, map[string]any{"command": "str_replace", "path": p, "old_str": "TOP", "new_str": "x"}))
	}
	// A link that stays inside works.
	writeFile(t, inside+"/real/ok.txt", "fine")
	must(t, os.Symlink("real", inside+"/inlink"))
	if m, e := fo(t, s, map[string]any{"action": "read", "path": inside + "/inlink/ok.txt"}); e || m["content"] != "fine" {
		t.Errorf("link inside: %s", fmtJSON(m))
	}
	s.alive(t)
}

func TestEscapes(t *testing.T) { onEngines(t, testEscapes) }

func testEscapes(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	escapeProbe(t, s, tmpDir(t), outsideDir(t))
}

// TestEscapesWorkspace: with --workspace every file operation and every
// working directory is confined to the workspace, /tmp included.
func TestEscapesWorkspace(t *testing.T) { onEngines(t, testEscapesWorkspace) }

func testEscapesWorkspace(t *testing.T, engine string) {
	ws := workspace(t)
	s := sharedServerOn(t, ws, engine)
	inside, err := os.MkdirTemp(ws, "in-")
	must(t, err)
	outside := tmpDir(t) // in /tmp: outside the workspace
	writeFile(t, outside+"/secret.txt", secret+"\n")
	must(t, os.Mkdir(outside+"/sub", 0o755))
	escapeProbe(t, s, inside, outside)

	home, _ := os.UserHomeDir()
	for _, p := range []string{outside + "/secret.txt", home + "/.profile", "/etc/passwd"} {
		m, e := fo(t, s, map[string]any{"action": "read", "path": p})
		wantFileErr(t, m, e, "permission_denied", "Failed to read file: "+p+" is outside the plugin's granted roots")
	}
	// Working directories: bash and code start in the workspace and may
	// not leave it.
	m, e := sh(t, s, map[string]any{"cmd": "pwd", "cwd": outside})
	if !e || m["error"] != "cwd "+outside+" is outside the granted directories" {
		t.Errorf("bash cwd outside the workspace: %s", fmtJSON(m))
	}
	m = shOK(t, s, map[string]any{"cmd": "pwd", "new_session": true})
	if m["cwd"] != ws {
		t.Errorf("new session starts in %v, want the workspace %s", m["cwd"], ws)
	}
	r := s.call(t, "sandbox_execute_code", map[string]any{"code": "import os; print(os.getcwd())"})
	if r.Object(t)["stdout"] != ws+"\n" {
		t.Errorf("code cwd: %s", r.Text())
	}
	m, e = fo(t, s, map[string]any{"action": "write", "path": inside + "/ok.txt", "content": "in"})
	wantOK(t, m, e)
}

func TestHugeAndBinaryFiles(t *testing.T) { onEngines(t, testHugeAndBinaryFiles) }

func testHugeAndBinaryFiles(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	d := tmpDir(t)
	f, err := os.Create(d + "/huge.bin")
	must(t, err)
	must(t, f.Truncate(1<<30)) // 1 GB, sparse
	f.Close()
	start := time.Now()
	for _, args := range []map[string]any{
		{"action": "read", "path": d + "/huge.bin"},
		{"action": "read", "path": d + "/huge.bin", "encoding": "base64"},
		{"action": "read", "path": d + "/huge.bin", "start_line": 0, "end_line": 1},
		{"action": "replace", "path": d + "/huge.bin", "content": "a", "target": "b"},
		{"action": "search", "path": d + "/huge.bin", "content": "a"},
	} {
		m, e := fo(t, s, args)
		wantFileErr(t, m, e, "bad_request", "file exceeds the 16 MiB buffered text limit")
	}
	m, e := fo(t, s, map[string]any{"action": "grep", "path": d, "pattern": "a"})
	if wantOK(t, m, e); m["files_searched"] != float64(0) {
		t.Errorf("grep searched the huge file: %s", fmtJSON(m))
	}
	m, e = ed(t, s, map[string]any{"command": "view", "path": d + "/huge.bin"})
	edFail(t, m, e, "File validation failed for "+d+"/huge.bin: File is too large (1024.0MB). Maximum allowed size is 10MB.")
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("the huge file took %v", el)
	}
	// Binary content: refused as text, served as base64.
	bin := []byte{0x7f, 'E', 'L', 'F', 0, 0, 0xff, 0xfe, '\n', 0x80}
	must(t, os.WriteFile(d+"/b.bin", bin, 0o644))
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/b.bin"})
	wantFileErr(t, m, e, "decode_error", "Failed to read file: stream did not contain valid UTF-8")
	m, e = fo(t, s, map[string]any{"action": "search", "path": d + "/b.bin", "content": "ELF"})
	wantFileErr(t, m, e, "decode_error", "Failed to read file: stream did not contain valid UTF-8")
	m, e = fo(t, s, map[string]any{"action": "read", "path": d + "/b.bin", "encoding": "base64"})
	if wantOK(t, m, e); m["content"] != "f0VMRgAA//4KgA==" {
		t.Errorf("base64: %s", fmtJSON(m))
	}
	m, e = ed(t, s, map[string]any{"command": "str_replace", "path": d + "/b.bin", "old_str": "ELF", "new_str": "X"})
	edFail(t, m, e, "File validation failed for "+d+"/b.bin: File appears to be binary and this file type cannot be read or edited by this tool.")
	m = shOK(t, s, map[string]any{"cmd": "cat " + d + "/b.bin"})
	if !strings.HasPrefix(m["output"].(string), "\x7fELF\x00\x00\ufffd\ufffd\n\ufffd") {
		t.Errorf("binary output: %q", m["output"])
	}
	s.alive(t)
}

func TestForkBomb(t *testing.T) { onEngines(t, testForkBomb) }

func testForkBomb(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	d := tmpDir(t)
	start := time.Now()
	m, e := sh(t, s, map[string]any{"cmd": "bomb() { bomb | bomb & }; bomb; sleep 5", "new_session": true, "timeout": 20, "cwd": d})
	// The host's watchdog kills the session's processes (terminated), or,
	// under a low process limit, the forks fail and the command ends.
	if e || m["status"] == "" {
		t.Errorf("fork bomb: %s", fmtJSON(m))
	}
	t.Logf("fork bomb: %s after %v", m["status"], time.Since(start))
	// The code tool too.
	r := s.call(t, "sandbox_execute_code", map[string]any{"code": "import os\nwhile True:\n    os.fork()", "timeout": 20})
	o := r.Object(t)
	if o["status"] == "ok" {
		t.Errorf("python fork bomb: %s", r.Text())
	}
	t.Logf("python fork bomb: %s, %s", o["status"], strings.TrimSpace(o["stderr"].(string)))
	s.alive(t)
	m = shOK(t, s, map[string]any{"cmd": "echo shared ok", "cwd": d})
	if m["output"] != "shared ok\n" {
		t.Errorf("shared session after the bomb: %s", fmtJSON(m))
	}
}

func TestInfiniteLoops(t *testing.T) { onEngines(t, testInfiniteLoops) }

func testInfiniteLoops(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	start := time.Now()
	// the three loops at once: each waits out its own deadline (a group
	// returns when its parallel subtests have ended)
	t.Run("loops", func(t *testing.T) {
		t.Run("python", func(t *testing.T) {
			t.Parallel()
			r := s.call(t, "sandbox_execute_code", map[string]any{"code": "x = 0\nwhile True:\n    x += 1", "timeout": 3})
			if o := r.Object(t); o["status"] != "timeout" || o["exit_code"] != nil {
				t.Errorf("python loop: %s", r.Text())
			}
		})
		t.Run("node", func(t *testing.T) {
			t.Parallel()
			r := s.call(t, "sandbox_execute_code", map[string]any{"code": "for(;;){}", "language": "javascript", "timeout": 3})
			if o := r.Object(t); o["status"] != "timeout" {
				t.Errorf("node loop: %s", r.Text())
			}
		})
		t.Run("bash", func(t *testing.T) {
			t.Parallel()
			m, _ := sh(t, s, map[string]any{"cmd": "while :; do :; done", "timeout": 2})
			if m["status"] != "hard_timeout" {
				t.Errorf("bash loop: %s", fmtJSON(m))
			}
		})
	})
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("loops took %v", el)
	}
	s.alive(t)
}

// fileProbes are the sandbox_file_operations calls that read, write,
// search or list path p, whose content holds secret (replace and search
// aim at it).
func fileProbes(p, secret string) []map[string]any {
	return []map[string]any{
		{"action": "read", "path": p},
		{"action": "read", "path": p, "encoding": "base64"},
		{"action": "write", "path": p, "content": "pwned"},
		{"action": "write", "path": p, "content": "pwned", "append": true},
		{"action": "replace", "path": p, "content": secret, "target": "pwned"},
		{"action": "search", "path": p, "content": secret[:3]},
		{"action": "grep", "path": p, "pattern": secret[:3]},
		{"action": "list", "path": p},
		{"action": "find", "path": p, "pattern": "*"},
		{"action": "glob", "path": p, "pattern": "*"},
	}
}

// dirProbes are the sandbox_file_operations calls that list, search or
// write into directory d, where a file holds text.
func dirProbes(d, text string) []map[string]any {
	return []map[string]any{
		{"action": "list", "path": d},
		{"action": "list", "path": d, "recursive": true},
		{"action": "find", "path": d, "pattern": "*"},
		{"action": "grep", "path": d, "pattern": text},
		{"action": "glob", "path": d, "pattern": "**/*"},
		{"action": "write", "path": d + "/new.txt", "content": "pwned"},
	}
}
