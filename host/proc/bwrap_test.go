//go:build linux

package proc

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newSandboxed is a sandboxed Manager whose owners each get
// <root>/<owner>/{workspace,tmp} at /workspace and /tmp.
func newSandboxed(t *testing.T, cfg Config) (*Manager, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs bubblewrap: make test runs it, make test-short does not")
	}
	if _, err := lookIn("bwrap", DefaultPath); err != nil {
		t.Fatalf("these tests need bubblewrap (Debian package bubblewrap): %v", err)
	}
	root := t.TempDir()
	cfg.Sandbox = &Sandbox{Dirs: func(owner string) ([]Mount, error) {
		return []Mount{
			{Host: filepath.Join(root, owner, "workspace"), Path: "/workspace"},
			{Host: filepath.Join(root, owner, "tmp"), Path: "/tmp"},
		}, nil
	}}
	if cfg.BaseEnv == nil {
		cfg.BaseEnv = SandboxEnv(SafeBaseEnv(os.Environ()), "/workspace")
	}
	return newManager(t, cfg), root
}

func sandboxSh(t *testing.T, m *Manager, owner, script string) *SpawnResult {
	t.Helper()
	res, err := m.Spawn(ctxT(t), SpawnRequest{Owner: owner, Path: "/bin/bash", Args: []string{"bash", "-c", script},
		Env: m.Config().BaseEnv, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSandboxProbes(t *testing.T) {
	m, root := newSandboxed(t, Config{})
	if err := m.CheckSandbox(ctxT(t), "alice"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(filepath.Join(root, "bob", "workspace", "bob-secret-7f3a"), []byte("bob's"), 0o600); err != nil {
		// bob's directories are made on his first start
		sandboxSh(t, m, "bob", "true")
		if err := os.WriteFile(filepath.Join(root, "bob", "workspace", "bob-secret-7f3a"), []byte("bob's"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, script string
		want         []string // each must be in stdout+stderr
		refuse       []string // none may be
	}{
		{"id", "id", []string{"uid=10001(sandbox) gid=10001(sandbox)"}, nil},
		{"home and cwd", `echo "home=$HOME pwd=$PWD tmp=$TMPDIR"`, []string{"home=/workspace pwd=/workspace tmp=/tmp"}, nil},
		{"usr read-only", "touch /usr/x; touch /usr/local/x; echo > /etc/x; touch /x", []string{"/usr/x': Read-only file system", "/usr/local/x': Read-only file system"}, []string{"SHOULD"}},
		{"write workspace and tmp", "echo a > /workspace/a && echo b > /tmp/b && cat /workspace/a /tmp/b", []string{"a\nb\n"}, nil},
		{"no host files", "ls /root /home /var /proc/1/root/root 2>&1; cat /etc/shadow 2>&1; ls " + shQuote(root) + " 2>&1", []string{"cannot access '/root'", "cannot access '/home'", "No such file"}, []string{"bob", "bob-secret-7f3a"}},
		{"other tenant", "cat " + shQuote(filepath.Join(root, "bob", "workspace", "bob-secret-7f3a")) + " 2>&1; ls /workspace /tmp; find / -name bob-secret-7f3a 2>/dev/null | grep -c .", []string{"No such file", "\n0\n"}, []string{"bob's"}},
		{"escape by /proc/1/root and ..", "ls /proc/1/root/ | tr '\\n' ' '; cd /workspace/../../..; pwd; ls /proc/1/root/workspace/..", []string{"workspace"}, []string{"bob-secret-7f3a", "bob"}},
		{"symlink out of workspace", "ln -s " + shQuote(filepath.Join(root, "bob")) + " /workspace/l; ls /workspace/l/ 2>&1; cat /workspace/l/workspace/bob-secret-7f3a 2>&1", []string{"No such file"}, []string{"bob's"}},
		{"no network", "(exec 3<>/dev/tcp/127.0.0.1/" + port + ") 2>&1 && echo CONNECTED; ip -o link 2>&1 | cut -d: -f2", []string{"Connection refused"}, []string{"CONNECTED", "eth"}},
		{"limits", "ulimit -a", []string{"cpu time                   (seconds, -t) 120", "virtual memory              (kbytes, -v) 4194304", "file size                   (blocks, -f) 524288"}, nil},
		{"limits hard", "ulimit -t 200 2>&1; prlimit --cpu=unlimited -p $$ 2>&1; ulimit -Ht", []string{"120"}, []string{"unlimited"}},
		{"no capabilities", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status", []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000"}, nil},
		{"no privilege gain", "unshare -r true 2>&1 || echo refused", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := sandboxSh(t, m, "alice", tc.script)
			out := string(res.Stdout) + string(res.Stderr)
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
	if b, err := os.ReadFile(filepath.Join(root, "alice", "workspace", "a")); err != nil || string(b) != "a\n" {
		t.Errorf("alice's /workspace/a on the host: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "bob", "workspace", "a")); err == nil {
		t.Error("alice's file is in bob's workspace")
	}
	if _, err := os.Lstat("/usr/x"); err == nil {
		t.Error("/usr/x exists on the host")
	}
}

func TestSandboxConnectToHostFails(t *testing.T) {
	m, _ := newSandboxed(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	res := sandboxSh(t, m, "alice", "curl -sS -m 3 http://127.0.0.1:"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)+"/health; echo rc=$?")
	if !strings.Contains(string(res.Stdout), "rc=7") {
		t.Errorf("curl to the host's port: %s %s", res.Stdout, res.Stderr)
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the sandbox")
	default:
	}
}

func TestSandboxShellSession(t *testing.T) {
	m, root := newSandboxed(t, Config{})
	key := Key{Plugin: "p", Owner: "alice", Session: "s"}
	exec := func(cmd, cwd string, timeout time.Duration) *ExecResult {
		t.Helper()
		res, err := m.Exec(ctxT(t), key, cmd, cwd, timeout, ExecOptions{StartDir: "/workspace"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := exec("mkdir -p sub && cd sub && X=1 && id -u", "", 10*time.Second)
	if res.Status != StatusCompleted || strings.TrimSpace(string(res.Output)) != "10001" || res.Cwd != "/workspace/sub" {
		t.Fatalf("first command: %+v %q", res, res.Output)
	}
	res = exec("echo x=$X; pwd", "", 10*time.Second)
	if got := string(res.Output); got != "x=1\n/workspace/sub\n" {
		t.Errorf("state kept: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "alice", "workspace", "sub")); err != nil {
		t.Errorf("sub on the host: %v", err)
	}
	// A command past its timeout: its job is killed (found by its pid in
	// the sandbox), the session survives.
	res = exec("sleep 30", "", 500*time.Millisecond)
	if res.Status != StatusHardTimeout {
		t.Fatalf("sleep: %+v", res)
	}
	res = exec("echo after $X", "/tmp", 10*time.Second)
	if got := string(res.Output); got != "after 1\n" || res.Cwd != "/tmp" || res.Restarted {
		t.Errorf("after the timeout: %q cwd %s restarted %v", got, res.Cwd, res.Restarted)
	}
	if _, err := m.Exec(ctxT(t), key, "true", filepath.Join(root, "bob"), time.Second, ExecOptions{}); err == nil {
		// the path is checked by the caller (CheckCwdFor); here it just
		// does not exist in the sandbox, so cd fails
		res = exec("pwd", "", time.Second)
		if strings.Contains(string(res.Output), "bob") {
			t.Errorf("cwd in bob's directory: %q", res.Output)
		}
	}
}

func TestSandboxCheckCwdFor(t *testing.T) {
	m, root := newSandboxed(t, Config{})
	sandboxSh(t, m, "alice", "mkdir -p /workspace/d; ln -s /tmp /workspace/abs; ln -s ../../../bob /workspace/rel")
	sandboxSh(t, m, "bob", "true")
	roots := []string{"/workspace", "/tmp"}
	tests := []struct {
		dir, want string
		ok        bool
	}{
		{"/workspace/d", "/workspace/d", true},
		{"/workspace/d/../d", "/workspace/d", true},
		{"/tmp", "/tmp", true},
		{"/workspace/rel", "", false},
		{"/workspace/abs", "", false}, // resolves on the host to the host's /tmp
		{"/workspace/../..", "", false},
		{filepath.Join(root, "bob", "workspace"), "", false},
		{"/etc", "", false},
		{"/workspace/missing", "", false},
	}
	for _, tc := range tests {
		got, err := m.CheckCwdFor("alice", tc.dir, roots)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("CheckCwdFor(%s) = %q, %v; want %q ok=%v", tc.dir, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(tc.dir, root) && strings.Contains(err.Error(), root) {
			t.Errorf("CheckCwdFor(%s): the error shows the host path: %v", tc.dir, err)
		}
	}
}

// TestSandboxForkBomb: a fork bomb in one owner's sandbox stays within
// the unit's cgroup limit; the host and another owner's programs go on.
func TestSandboxForkBomb(t *testing.T) {
	m, _ := newSandboxed(t, Config{MaxProcs: 64, WatchInterval: 20 * time.Millisecond})
	if c := m.Containment(); c.Mode == ModeWatchdog {
		t.Fatalf("the fork bomb test needs kernel process limits (a cgroup), have %+v", c)
	}
	bombGuard(t, m)
	start := time.Now()
	done := make(chan *SpawnResult, 1)
	go func() {
		res, err := m.Spawn(ctxT(t), SpawnRequest{Owner: "mallory", Path: "/bin/bash", Args: []string{"bash", "-c", `:(){ :|:& };: ; sleep 30`},
			Env: m.Config().BaseEnv, Timeout: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(200 * time.Millisecond)
	other := sandboxSh(t, m, "alice", "echo fine")
	if string(other.Stdout) != "fine\n" {
		t.Errorf("another owner during the bomb: %q %q", other.Stdout, other.Stderr)
	}
	res := <-done
	if res != nil && res.Killed != reasonProcLimit {
		t.Errorf("bomb killed %q, want %s", res.Killed, reasonProcLimit)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestSandboxSessionDirLinks: a sandboxed shell can change its session's
// directory (/run/aiod); a link it puts where the host writes the next
// command is removed, never followed to a host file.
func TestSandboxSessionDirLinks(t *testing.T) {
	m, _ := newSandboxed(t, Config{})
	victim := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := Key{Plugin: "p", Owner: "alice", Session: "s"}
	for i, plant := range []string{"ln -sf " + shQuote(victim) + " /run/aiod/cmd", "rm -f /run/aiod/cmd && mkfifo /run/aiod/cmd", "rm -f /run/aiod/cmd && mkdir -p /run/aiod/cmd/x"} {
		res, err := m.Exec(ctxT(t), key, plant, "", 10*time.Second, ExecOptions{})
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("%s: %+v %v", plant, res, err)
		}
		res, err = m.Exec(ctxT(t), key, "echo next"+strconv.Itoa(i), "", 10*time.Second, ExecOptions{})
		if err != nil || string(res.Output) != "next"+strconv.Itoa(i)+"\n" {
			t.Errorf("after %s: %+v %v", plant, res, err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "untouched" {
			t.Fatalf("after %s the host file holds %q", plant, b)
		}
	}
}

// TestSandboxSpawnReadOnly: a spawn's ReadOnly paths are shown read-only
// at their place for that program only; a path that is not absolute is
// refused.
func TestSandboxSpawnReadOnly(t *testing.T) {
	m, _ := newSandboxed(t, Config{})
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho ran; echo x > "+prog+" 2>/dev/null && echo WROTE; ls "+dir+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "other"), []byte("x"), 0o644)
	for _, tc := range []struct {
		name    string
		ro      []string
		want    string // in stdout
		notWant string
		errWant string
	}{
		{"the program alone", []string{prog}, "ran\nprog.sh\n", "WROTE", ""},
		{"not given: not there", nil, "", "ran", ""},
		{"relative", []string{"prog.sh"}, "", "", "not absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Spawn(ctxT(t), SpawnRequest{Owner: "alice", Path: prog, Args: []string{prog}, Env: m.Config().BaseEnv,
				Timeout: 20 * time.Second, ReadOnly: tc.ro})
			if tc.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWant) {
					t.Fatalf("err %v, want %q", err, tc.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout)
			if !strings.Contains(out, tc.want) || tc.notWant != "" && strings.Contains(out, tc.notWant) {
				t.Fatalf("stdout %q stderr %q, want %q without %q", out, res.Stderr, tc.want, tc.notWant)
			}
		})
	}
}
