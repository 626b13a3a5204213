package hooks_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hooks"
)

// needBwrap fails the test without bubblewrap, and skips it only under
// -short on a machine that lacks it.
func needBwrap(t testing.TB) {
	t.Helper()
	for _, p := range []string{"bwrap", "prlimit"} {
		if _, err := exec.LookPath(p); err != nil {
			if testing.Short() {
				t.Skipf("%s is not installed (Debian packages bubblewrap, util-linux): command hooks run in its sandbox", p)
			}
			t.Fatalf("command hooks run in the bubblewrap sandbox: %s not found: %v", p, err)
		}
	}
}

// script writes an executable shell script into a fresh directory.
func script(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return p
}

func newRunner(t testing.TB) *hooks.Runner {
	t.Helper()
	needBwrap(t)
	r, err := hooks.NewRunner("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRunner(t *testing.T) {
	r := newRunner(t)
	// a listener on the host's loopback the sandbox must not reach
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ev := &hooks.Event{Event: caps.HookBeforeTool, Tenant: "alice", Session: "s1", Era: "legacy", Tool: "sandbox_bash",
		Input: json.RawMessage(`{"cmd":"ls"}`)}
	for _, tc := range []struct {
		name, body string
		timeout    int64
		exit       int
		killed     string
		stdout     string // substring of stdout
		stderr     string
		notStdout  string // must not be in stdout
	}{
		{name: "allow", body: "exit 0", exit: 0},
		{name: "block with a reason", body: "echo 'no shell today' >&2; exit 2", exit: 2, stderr: "no shell today"},
		{name: "other status", body: "exit 7", exit: 7},
		{name: "reads the event on stdin", body: "cat", stdout: `"tool":"sandbox_bash"`},
		{name: "input in the event", body: "cat", stdout: `"input":{"cmd":"ls"}`},
		{name: "environment", body: `echo "$AIO_HOOK_EVENT $AIO_HOOK_TOOL $AIO_TENANT $AIO_SESSION"`, stdout: "before-tool sandbox_bash alice s1"},
		{name: "not root", body: "id -u", stdout: "10001"},
		{name: "starts in its scratch directory", body: "pwd; echo x > note && cat note", stdout: "/hook\nx"},
		{name: "no host secrets", body: "cat /etc/shadow 2>/dev/null && echo LEAK; ls /root 2>/dev/null && echo LEAK; echo checked",
			stdout: "checked", notStdout: "LEAK"},
		{name: "no network", body: "exec /bin/bash -c 'echo hi > /dev/tcp/127.0.0.1/" + port + " && echo REACHED || echo unreachable'",
			stdout: "unreachable", notStdout: "REACHED"},
		{name: "out of time", body: "sleep 30", timeout: 300, exit: -1, killed: "timeout"},
		{name: "children killed with it", body: "(sleep 30 &) ; sleep 30", timeout: 300, exit: -1, killed: "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := caps.Hook{Event: caps.HookBeforeTool, Command: []string{script(t, tc.body)}, TimeoutMs: tc.timeout}
			start := time.Now()
			out, err := r.Run(context.Background(), h, ev)
			if err != nil {
				t.Fatal(err)
			}
			if out.Exit != tc.exit || out.Killed != tc.killed {
				t.Fatalf("exit %d killed %q (%s), want %d %q; stderr %q", out.Exit, out.Killed, out.Ending(), tc.exit, tc.killed, out.Stderr)
			}
			if !strings.Contains(string(out.Stdout), tc.stdout) || !strings.Contains(string(out.Stderr), tc.stderr) ||
				tc.notStdout != "" && strings.Contains(string(out.Stdout), tc.notStdout) {
				t.Fatalf("stdout %q stderr %q, want %q and %q", out.Stdout, out.Stderr, tc.stdout, tc.stderr)
			}
			if tc.killed == "timeout" && time.Since(start) > 10*time.Second {
				t.Fatalf("a 300 ms hook ran %s", time.Since(start))
			}
		})
	}
}

// TestRunnerRefuses: a program others may change, or none, never runs.
func TestRunnerRefuses(t *testing.T) {
	r := newRunner(t)
	ev := &hooks.Event{Event: caps.HookBeforeTool, Tenant: "default", Tool: "echo", Input: json.RawMessage(`{}`)}
	writable := script(t, "exit 0")
	if err := os.Chmod(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, prog, want string }{
		{"writable by others", writable, "writable by others than its owner"},
		{"missing", filepath.Join(dir, "nope.sh"), "no such file"},
		{"a directory", dir, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Run(context.Background(), caps.Hook{Event: caps.HookBeforeTool, Command: []string{tc.prog}}, ev)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ran: %+v, err %v; want an error with %q", out, err, tc.want)
			}
		})
	}
	// a tenant name that is not one never becomes a directory
	bad := &hooks.Event{Event: caps.HookBeforeTool, Tenant: "../etc", Tool: "echo", Input: json.RawMessage(`{}`)}
	if _, err := r.Run(context.Background(), caps.Hook{Event: caps.HookBeforeTool, Command: []string{script(t, "exit 0")}}, bad); err == nil {
		t.Fatal("a hook ran for tenant ../etc")
	}
	// closed: idempotent, and nothing runs after
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), caps.Hook{Event: caps.HookBeforeTool, Command: []string{script(t, "exit 0")}}, ev); err == nil {
		t.Fatal("a closed runner ran a hook")
	}
}

func TestCheckPolicyFile(t *testing.T) {
	prog := script(t, "exit 0")
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withHook := `{"hooks":[{"event":"before-tool","command":["` + prog + `"]}]}`
	inTenant := `{"tenants":{"alice":{"keys":[],"hooks":[{"event":"after-tool","command":["` + prog + `"]}]}}}`
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		want       string // "" accepted
	}{
		{"no hooks, any mode", `{}`, 0o666, ""},
		{"hooks, owner-only", withHook, 0o644, ""},
		{"hooks, group-writable", withHook, 0o664, "writable by others than its owner"},
		{"hooks, world-writable", withHook, 0o646, "writable by others than its owner"},
		{"tenant hooks, world-writable", inTenant, 0o666, "writable by others than its owner"},
		{"missing program", `{"hooks":[{"event":"before-tool","command":["/nonexistent/hook"]}]}`, 0o600, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(strings.ReplaceAll(tc.name, " ", "_")+".json", tc.body, tc.mode)
			p, err := caps.ParsePolicy([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			err = hooks.CheckPolicyFile(path, p)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
