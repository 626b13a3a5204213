package sandboxtest

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
)

// A locked-down host serving the built-ins, its tenants called through
// the owner seam (plugin.CallRequest.Owner, what the authentication layer
// sets from a tenant's key), so that two tenants share one host.

const bobSecret = "BOBSECRET-aiod-tenant-probe"

type lockHost struct {
	s    *server
	data string // the --data-dir
}

// startLockdown starts a locked-down host on a fresh data directory.
func startLockdown(t testing.TB) *lockHost {
	t.Helper()
	return startLockdownOn(t, runtimetest.Default)
}

// startLockdownOn is startLockdown on the named engine.
func startLockdownOn(t testing.TB, engine string) *lockHost {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the built-ins under bubblewrap: make test runs it, make test-short does not")
	}
	// Outside /tmp: a host path under /tmp is, to a tenant, a path in its
	// own /tmp.
	data, err := os.MkdirTemp("/var/tmp", "aiod-lockdown-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(data) })
	s := startHost(t, host.Config{Builtins: os.DirFS(plugins(t)), APIKey: "lockdown-test-key", Engine: engine,
		Browser: browser.Config{Mode: browser.Off}, LockdownConfig: host.LockdownConfig{Lockdown: true, DataDir: data},
		TenancyConfig: host.TenancyConfig{AuditLog: filepath.Join(data, "audit.log")}})
	t.Cleanup(s.stop)
	return &lockHost{s: s, data: data}
}

// dir is a tenant's host directory (workspace or tmp).
func (l *lockHost) dir(owner, which string) string {
	return filepath.Join(l.data, "tenants", owner, which)
}

// call calls a tool as owner.
func (l *lockHost) call(t testing.TB, owner, tool string, args any) *toolResult {
	t.Helper()
	b, err := json.Marshal(args)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := l.s.h.Registry().CallTool(ctx, plugin.CallRequest{Owner: owner, Name: tool, Args: b})
	if err != nil {
		t.Fatalf("%s as %s: %v", tool, owner, err)
	}
	var r toolResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: bad result %s: %v", tool, out, err)
	}
	return &r
}

// bash runs a command in owner's shared shell session and returns the
// text of the result.
func (l *lockHost) bash(t *testing.T, owner, cmd string) string {
	t.Helper()
	return l.call(t, owner, "sandbox_execute_bash", map[string]any{"cmd": cmd}).Text()
}

// TestLockdownSeedWorkflow is seed 000's four calls for two tenants at
// once, in the same paths: each reads back its own sum, and the files are
// in its own directory.
func TestLockdownSeedWorkflow(t *testing.T) { onEngines(t, testLockdownSeedWorkflow) }

func testLockdownSeedWorkflow(t *testing.T, engine string) {
	l := startLockdownOn(t, engine)
	data := map[string]string{"alice": "3\n7\n12\n5\n", "bob": "100\n200\n"}
	want := map[string]string{"alice": "27", "bob": "300"}
	var wg sync.WaitGroup
	for _, owner := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := l.call(t, owner, fileOps, map[string]any{"action": "write", "path": "/tmp/agent-data.txt", "content": data[owner]})
			if r.IsError {
				t.Errorf("%s write: %s", owner, r.Text())
				return
			}
			r = l.call(t, owner, "sandbox_execute_bash", map[string]any{"cmd": "wc -l /tmp/agent-data.txt", "cwd": "/tmp"})
			if lines := strings.Count(data[owner], "\n"); r.IsError || !strings.Contains(r.Text(), string(rune('0'+lines))+" /tmp/agent-data.txt") {
				t.Errorf("%s wc: %s", owner, r.Text())
			}
			r = l.call(t, owner, "sandbox_execute_code", map[string]any{"language": "python",
				"code": "nums = [int(n) for n in open(\"/tmp/agent-data.txt\").read().split()]\nopen(\"/tmp/agent-result.txt\", \"w\").write(str(sum(nums)))\nprint(\"sum written\")"})
			if r.IsError || !strings.Contains(r.Text(), "sum written") {
				t.Errorf("%s python: %s", owner, r.Text())
			}
			m, isErr := lockFO(t, l, owner, map[string]any{"action": "read", "path": "/tmp/agent-result.txt"})
			if isErr || m["content"] != want[owner] {
				t.Errorf("%s read: %v", owner, m)
			}
		}()
	}
	wg.Wait()
	for owner, w := range want {
		if got := readFile(t, filepath.Join(l.dir(owner, "tmp"), "agent-result.txt")); got != w {
			t.Errorf("%s's result on the host: %q, want %q", owner, got, w)
		}
	}
}

func lockFO(t *testing.T, l *lockHost, owner string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	r := l.call(t, owner, fileOps, args)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Text()), &m); err != nil {
		t.Fatalf("%s: %s", fmtJSON(args), r.Text())
	}
	return m, r.IsError
}

// TestLockdownCrossTenantFiles: alice tries to reach bob's files through
// every file tool and action and the editor: by bob's host path, by `..`,
// by links she plants in her workspace (absolute, relative, made by the
// shell at run time), through /proc. Nothing answers with bob's file, and
// it is unchanged.
func TestLockdownCrossTenantFiles(t *testing.T) {
	defaultEngine(t, "bubblewrap's fences between tenants (TestLockdownSeedWorkflow runs the built-ins locked down on every engine)")
	l := startLockdown(t)
	r := l.call(t, "bob", fileOps, map[string]any{"action": "write", "path": "/workspace/secret.txt", "content": bobSecret + "\n"})
	if r.IsError {
		t.Fatal(r.Text())
	}
	bobWS := l.dir("bob", "workspace")
	bobFile := filepath.Join(bobWS, "secret.txt")
	l.bash(t, "alice", "mkdir -p /workspace/real && echo fine > /workspace/real/ok.txt")
	aliceWS := l.dir("alice", "workspace")
	rel, err := filepath.Rel(aliceWS, bobWS)
	must(t, err)
	must(t, os.Symlink(bobWS, filepath.Join(aliceWS, "abs")))
	must(t, os.Symlink(rel, filepath.Join(aliceWS, "rel")))
	must(t, os.Symlink(bobFile, filepath.Join(aliceWS, "fabs")))
	must(t, os.Symlink(filepath.Join(rel, "secret.txt"), filepath.Join(aliceWS, "frel")))
	// made by the shell inside the sandbox, at run time
	l.bash(t, "alice", "ln -s "+bobWS+" /workspace/late && ln -s "+rel+" /workspace/late2 && ln -s /proc/1/root /workspace/procroot")

	dotdot := "/workspace/" + strings.Repeat("../", 8) + strings.TrimPrefix(bobWS, "/")
	files := []string{bobFile, dotdot + "/secret.txt", "/workspace/abs/secret.txt", "/workspace/rel/secret.txt", "/workspace/fabs", "/workspace/frel",
		"/workspace/late/secret.txt", "/workspace/late2/secret.txt", "/workspace/procroot" + bobFile, "/proc/1/root" + bobFile, "/tmp/../" + strings.TrimPrefix(bobFile, "/")}
	dirs := []string{bobWS, dotdot, "/workspace/abs", "/workspace/rel", "/workspace/late", "/workspace/late2", "/proc/1/root" + bobWS}
	check := func(what string, r *toolResult) {
		t.Helper()
		if strings.Contains(r.Text(), bobSecret) {
			t.Errorf("%s leaked bob's file: %s", what, r.Text())
		}
		if !r.IsError {
			t.Errorf("%s was not refused: %s", what, r.Text())
		}
		if got := readFile(t, bobFile); got != bobSecret+"\n" {
			t.Fatalf("%s changed bob's file: %q", what, got)
		}
	}
	for _, p := range files {
		for _, args := range append(fileProbes(p, "BOBSECRET"), map[string]any{"action": "delete", "path": p}) {
			check("alice "+fmtJSON(args), l.call(t, "alice", fileOps, args))
		}
		for _, args := range []map[string]any{
			{"command": "view", "path": p},
			{"command": "create", "path": p, "file_text": "pwned"},
			{"command": "str_replace", "path": p, "old_str": "BOBSECRET", "new_str": "pwned"},
			{"command": "insert", "path": p, "insert_line": 0, "new_str": "pwned"},
			{"command": "undo_edit", "path": p},
		} {
			check("alice editor "+fmtJSON(args), l.call(t, "alice", editorTool, args))
		}
	}
	for _, d := range dirs {
		for _, args := range dirProbes(d, "BOB") {
			check("alice "+fmtJSON(args), l.call(t, "alice", fileOps, args))
		}
		check("alice editor view "+d, l.call(t, "alice", editorTool, map[string]any{"command": "view", "path": d}))
		if _, err := os.Stat(filepath.Join(bobWS, "new.txt")); err == nil {
			t.Fatalf("a file was created in bob's workspace through %s", d)
		}
	}
	// Her own tree lists the links but never follows them out.
	for _, args := range []map[string]any{
		{"action": "list", "path": "/workspace", "recursive": true, "show_hidden": true},
		{"action": "find", "path": "/", "pattern": "*.txt", "show_hidden": true},
		{"action": "grep", "path": "/workspace", "pattern": "BOB", "show_hidden": true},
		{"action": "grep", "path": "/tmp", "pattern": "BOB", "show_hidden": true},
		{"action": "glob", "path": "/workspace", "pattern": "**/*", "show_hidden": true, "files_only": false},
	} {
		r := l.call(t, "alice", fileOps, args)
		if strings.Contains(r.Text(), bobSecret) || strings.Contains(r.Text(), "secret.txt") {
			t.Errorf("alice %s: %s", fmtJSON(args), r.Text())
		}
	}
	// Her own files work, and the same path is bob's own for bob.
	if m, e := lockFO(t, l, "alice", map[string]any{"action": "read", "path": "/workspace/real/ok.txt"}); e || m["content"] != "fine\n" {
		t.Errorf("alice's own file: %v", m)
	}
	if m, e := lockFO(t, l, "alice", map[string]any{"action": "read", "path": "/workspace/secret.txt"}); !e || strings.Contains(fmtJSON(m), bobSecret) {
		t.Errorf("alice's /workspace/secret.txt: %v", m)
	}
	if m, e := lockFO(t, l, "bob", map[string]any{"action": "read", "path": "/workspace/secret.txt"}); e || m["content"] != bobSecret+"\n" {
		t.Errorf("bob's own file: %v", m)
	}
	// The same probes from bash.
	out := l.bash(t, "alice", strings.Join([]string{
		"cat " + bobFile, "cat " + dotdot + "/secret.txt", "cat /workspace/rel/secret.txt /workspace/late2/secret.txt /workspace/frel",
		"cat /workspace/abs/secret.txt /workspace/fabs /workspace/procroot" + bobFile, "cat /proc/1/root" + bobFile,
		"ls /proc/1/root/ /workspace/procroot/", "cd /workspace/../../.. && pwd && ls",
		"echo pwned > " + bobFile, "ls -la " + filepath.Dir(filepath.Dir(bobWS)),
	}, "; ")+"; echo done")
	if strings.Contains(out, bobSecret) || !strings.Contains(out, "done") {
		t.Errorf("bash as alice: %s", out)
	}
	// and the whole tree she sees, searched: it reads every file of the
	// host's /usr, longer than the tool's default 30 s beside a loaded CI
	// run's other tests
	out = l.call(t, "alice", "sandbox_execute_bash", map[string]any{
		"cmd": "grep -rs BOB / --exclude-dir=proc --exclude-dir=sys | head; echo done", "timeout": 300}).Text()
	if strings.Contains(out, bobSecret) || !strings.Contains(out, "done") {
		t.Errorf("grep as alice: %s", out)
	}
	if got := readFile(t, bobFile); got != bobSecret+"\n" {
		t.Fatalf("bash changed bob's file: %q", got)
	}
}

// TestLockdownProcessProbes: what a tenant's commands see.
func TestLockdownProcessProbes(t *testing.T) {
	defaultEngine(t, "bubblewrap's fences for processes")
	l := startLockdown(t)
	u, err := url.Parse(l.s.url)
	must(t, err)
	tests := []struct {
		name, cmd string
		want      []string
		refuse    []string
	}{
		{"id", "id; echo home=$HOME", []string{"uid=10001(sandbox) gid=10001(sandbox) groups=10001(sandbox)", "home=/workspace"}, nil},
		{"cwd", "pwd", []string{"/workspace"}, nil},
		{"writes to /usr", "touch /usr/x /usr/local/bin/x /bin/x 2>&1; echo > /etc/passwd 2>&1", []string{"/usr/x': Read-only file system", "/usr/local/bin/x': Read-only file system"}, nil},
		{"no network to aiod's own port", "curl -sS -m 5 http://" + u.Host + "/health 2>&1; echo rc=$?; (exec 3<>/dev/tcp/127.0.0.1/" + u.Port() + ") 2>&1; echo tcp=$?",
			[]string{"rc=7", "tcp=1", "Connection refused"}, []string{"ok", "rc=0", "tcp=0"}},
		{"no outside network", "curl -sS -m 5 http://example.com 2>&1; echo rc=$?", []string{"rc=6"}, []string{"rc=0"}},
		{"ulimit -a", "ulimit -a", []string{"cpu time                   (seconds, -t) 120", "virtual memory              (kbytes, -v) 4194304", "file size                   (blocks, -f) 524288"}, nil},
		{"limits cannot be raised", "ulimit -t unlimited 2>&1; ulimit -v unlimited 2>&1; ulimit -Ht", []string{"120"}, []string{"unlimited\n"}},
		{"no host home or tmp", "ls /root /home/* 2>&1; ls /tmp; ls " + l.data + " 2>&1", []string{"cannot access '/root'", "No such file"}, []string{"tenants"}},
		{"no capabilities", "grep CapEff /proc/self/status", []string{"0000000000000000"}, nil},
		{"the host's processes are not visible", "ps -e -o pid=,comm= | tr '\\n' ' '", []string{"1 bwrap", "bash"}, []string{"aiod", "sandboxtest", "go "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := l.bash(t, "alice", tc.cmd)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, r := range tc.refuse {
				if strings.Contains(out, r) {
					t.Errorf("output has %q:\n%s", r, out)
				}
			}
		})
	}
	// Code runs in the same sandbox.
	r := l.call(t, "alice", "sandbox_execute_code", map[string]any{"language": "python",
		"code": "import os\nprint('uid', os.getuid())\ntry:\n  open('/etc/shadow')\nexcept OSError as e:\n  print('shadow', e.errno)\n"})
	if !strings.Contains(r.Text(), "uid 10001") || !strings.Contains(r.Text(), "shadow 2") {
		t.Errorf("python: %s", r.Text())
	}
	// Output is capped at 64 KiB.
	r = l.call(t, "alice", "sandbox_execute_bash", map[string]any{"cmd": "head -c 200000 /dev/zero | tr '\\0' a"})
	if n := strings.Count(r.Text(), "a"); n > 64<<10+100 {
		t.Errorf("output of %d bytes, want at most 64 KiB", n)
	}
}

// TestLockdownForkBomb: a fork bomb in one tenant's shell is stopped at
// the unit's process limit (a cgroup); the host stays up and another
// tenant's calls run meanwhile, and the bomber's next call gets a new
// shell.
func TestLockdownForkBomb(t *testing.T) {
	defaultEngine(t, "bubblewrap's process limit")
	l := startLockdown(t)
	start := time.Now()
	done := make(chan string, 1)
	go func() {
		done <- l.call(t, "mallory", "sandbox_execute_bash", map[string]any{"cmd": ":(){ :|:& };: ; sleep 20", "timeout": 30}).Text()
	}()
	time.Sleep(300 * time.Millisecond)
	for i := range 3 {
		t0 := time.Now()
		if out := l.bash(t, "alice", "echo fine"); !strings.Contains(out, "fine") {
			t.Errorf("alice during the bomb (%d): %s", i, out)
		}
		t.Logf("alice's call %d during the bomb: %v", i, time.Since(t0))
	}
	select {
	case out := <-done:
		if !strings.Contains(out, `"status":"terminated"`) {
			t.Errorf("bomb result: %s", out)
		}
		t.Logf("the bomb's call ended after %v", time.Since(start))
	case <-time.After(60 * time.Second):
		t.Fatal("the bomb's call did not end")
	}
	t0 := time.Now()
	if out := l.bash(t, "mallory", "echo again"); !strings.Contains(out, "again") {
		t.Errorf("mallory after the bomb: %s", out)
	}
	t.Logf("mallory's next call: %v", time.Since(t0))
	if out := l.bash(t, "alice", "echo still"); !strings.Contains(out, "still") {
		t.Errorf("alice after the bomb: %s", out)
	}
}
