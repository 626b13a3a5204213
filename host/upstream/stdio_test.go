package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// stdioServerBin builds testdata/stdioserver into a directory outside /tmp
// (a command server has its own /tmp, which would hide it) and returns its
// path; the directory is to be shown read-only.
func stdioServerBin(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bubblewrap (bwrap) is needed: Debian package bubblewrap")
	}
	dir, err := os.MkdirTemp("/var/tmp", "aiod-stdio-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "stdioserver")
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/stdioserver")
	cmd.Dir = filepath.Dir(file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func sha256File(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// syncLog is a slog text sink tests read.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func stdioServer(name, bin string, args ...string) Server {
	return Server{Name: name, Prefix: name, Stdio: &Stdio{Command: bin, Args: args, ReadOnly: []string{filepath.Dir(bin)}}}
}

// TestStdioSandbox: a command server runs as the sandbox user in its own
// /workspace (written through to <StdioDir>/<name>/workspace), with only
// the variables named (plus PATH, HOME, TMPDIR), no network (a loopback
// listener of the test is not reachable) unless hosts are named, its
// stderr nowhere.
func TestStdioSandbox(t *testing.T) {
	bin := stdioServerBin(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Setenv("AIOD_STDIO_PASSED", "passed-value")
	t.Setenv("AIOD_STDIO_SECRET", "not-passed-value")
	dir := t.TempDir()
	var logs syncLog
	closed := stdioServer("closed", bin)
	closed.Stdio.Env = []string{"AIOD_STDIO_PASSED", "AIOD_STDIO_UNSET"}
	open := stdioServer("open", bin)
	open.Stdio.Hosts = []string{ln.Addr().String()}
	s := newSet(t, Options{StdioDir: dir, ListTimeout: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, closed, open)
	got := strings.Join(names(s.Tools(context.Background())), ",")
	if !strings.Contains(got, "closed_inspect") || !strings.Contains(got, "open_dial") {
		t.Fatalf("tools: %s\n%s", got, logs.String())
	}
	r := call(t, s, "closed_inspect", `{}`)
	out := r.text()
	for _, want := range []string{"uid=10001", "wd=/workspace", "write=<nil>", "AIOD_STDIO_PASSED=passed-value", "HOME=/workspace", "TMPDIR=/tmp"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "not-passed-value") || strings.Contains(out, "AIOD_STDIO_UNSET") || strings.Contains(out, "home=<nil>") {
		t.Errorf("inspect: more than it was given:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "closed", "workspace", "written")); err != nil {
		t.Errorf("its /workspace is not <StdioDir>/closed/workspace: %v", err)
	}
	if r := call(t, s, "closed_dial", `{"text":"`+ln.Addr().String()+`"}`); r.text() == "dial: ok" {
		t.Errorf("a command without hosts reached the network: %s", r.text())
	}
	if r := call(t, s, "open_dial", `{"text":"`+ln.Addr().String()+`"}`); r.text() != "dial: ok" {
		t.Errorf("a command with hosts: %s", r.text())
	}
	if r := call(t, s, "closed_stderr", `{"text":"stderr-secret-123"}`); r.text() != "written" {
		t.Errorf("stderr: %+v", r)
	}
	var progress []string
	raw, err := s.Call(context.Background(), "closed_progress", []byte(`{}`), func(method string, params json.RawMessage) {
		progress = append(progress, method+" "+string(params))
	})
	if err != nil || !strings.Contains(string(raw), "done") || len(progress) != 3 || !strings.Contains(progress[2], `"progress":3`) {
		t.Errorf("progress: %s %v %q", raw, err, progress)
	}
	s.Close()
	if strings.Contains(logs.String(), "stderr-secret-123") || strings.Contains(logs.String(), "passed-value") {
		t.Errorf("the log holds the server's stderr or its environment:\n%s", logs.String())
	}
}

// TestStdioRestart: a command that exits is started again, after a
// backoff that doubles while it keeps dying; its calls in between answer
// isError naming the server; it answers again once restarted.
func TestStdioRestart(t *testing.T) {
	bin := stdioServerBin(t)
	var logs syncLog
	s := newSet(t, Options{StdioDir: t.TempDir(), ListTimeout: 20 * time.Second, RestartBackoff: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, stdioServer("crashy", bin))
	if got := names(s.Tools(context.Background())); len(got) == 0 {
		t.Fatalf("no tools: %s", logs.String())
	}
	if n := s.starts("crashy"); n != 1 {
		t.Fatalf("starts = %d", n)
	}
	r := call(t, s, "crashy_crash", `{}`)
	if !r.IsError || !strings.Contains(r.text(), `"crashy"`) {
		t.Fatalf("the crashing call: %+v", r)
	}
	// in the backoff: a clear error naming the server
	r = call(t, s, "crashy_echo", `{"text":"x"}`)
	if !r.IsError || !strings.Contains(r.text(), `"crashy"`) || !strings.Contains(r.text(), "started again") {
		t.Fatalf("a call during the backoff: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.starts("crashy") < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r := call(t, s, "crashy_echo", `{"text":"back"}`); r.IsError || r.text() != "back" {
		t.Fatalf("after the restart: %+v (starts %d)\n%s", r, s.starts("crashy"), logs.String())
	}
	if !strings.Contains(logs.String(), "its command exited; starting it again in 200ms") {
		t.Fatalf("log:\n%s", logs.String())
	}
}

// TestStdioBackoff: a command that dies at once is started again and
// again, each wait twice the last (200 ms, 400 ms, 800 ms...).
func TestStdioBackoff(t *testing.T) {
	bin := stdioServerBin(t)
	var logs syncLog
	s := newSet(t, Options{StdioDir: t.TempDir(), ListTimeout: 5 * time.Second, RestartBackoff: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, stdioServer("dying", bin, "-exit-at-start"))
	start := time.Now()
	s.Tools(context.Background())
	for s.starts("dying") < 4 && time.Since(start) < 15*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	// starts at 0, >=0.2, >=0.6, >=1.4 s
	if n := s.starts("dying"); n < 4 || elapsed < 1400*time.Millisecond {
		t.Fatalf("%d starts in %s (want 4, no sooner than 1.4 s)\n%s", n, elapsed, logs.String())
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.starts("dying"); n != 4 {
		t.Fatalf("started %d times within 1.7 s: the backoff did not double", n)
	}
}

// TestStdioPins: a command whose file does not match its sha256 pin is not
// run (its calls say why); with RequirePins an unpinned command is not run;
// a matching pin runs.
func TestStdioPins(t *testing.T) {
	bin := stdioServerBin(t)
	sum := sha256File(t, bin)
	good := stdioServer("good", bin)
	good.Stdio.SHA256 = sum
	bad := stdioServer("bad", bin)
	bad.Stdio.SHA256 = strings.Repeat("0", 64)
	unpinned := stdioServer("unpinned", bin)
	s := newSet(t, Options{StdioDir: t.TempDir(), ListTimeout: 20 * time.Second, RequirePins: true}, good, bad, unpinned)
	got := strings.Join(names(s.Tools(context.Background())), ",")
	if !strings.Contains(got, "good_echo") || strings.Contains(got, "bad_") || strings.Contains(got, "unpinned_") {
		t.Fatalf("tools: %s", got)
	}
	if r := call(t, s, "bad_echo", `{}`); !r.IsError || !strings.Contains(r.text(), "does not match its sha256 pin") && !strings.Contains(r.text(), "started again") {
		t.Fatalf("bad pin: %+v", r)
	}
	outside := stdioServer("outside", bin)
	outside.Stdio.ReadOnly = nil
	s2 := newSet(t, Options{StdioDir: t.TempDir(), ListTimeout: 5 * time.Second}, outside)
	if r := call(t, s2, "outside_echo", `{}`); !r.IsError || !strings.Contains(r.text(), "is not inside its jail") {
		t.Fatalf("a command outside the jail: %+v", r)
	}
	if s.starts("bad") != 0 || s.starts("unpinned") != 0 {
		t.Fatalf("an unpinned or mispinned command ran: %d %d", s.starts("bad"), s.starts("unpinned"))
	}
}

// TestStdioHostile: a command that floods its stdout with a message over
// the 16 MiB bound, or writes a line that is not JSON-RPC, fails the call
// in flight with an isError naming the server (no hang, no crash of
// aiod); the command is started again and answers.
func TestStdioHostile(t *testing.T) {
	bin := stdioServerBin(t)
	for _, tool := range []string{"flood", "garbage"} {
		t.Run(tool, func(t *testing.T) {
			s := newSet(t, Options{StdioDir: t.TempDir(), ListTimeout: 20 * time.Second, RestartBackoff: 100 * time.Millisecond}, stdioServer("bad", bin))
			s.Tools(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			raw, err := s.Call(ctx, "bad_"+tool, []byte(`{}`), nil)
			if err != nil || !strings.Contains(string(raw), `"isError":true`) || !strings.Contains(string(raw), `\"bad\"`) {
				t.Fatalf("call: %s %v", raw, err)
			}
			if ctx.Err() != nil {
				t.Fatal("the call ran to its deadline")
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				r := call(t, s, "bad_echo", `{"text":"still here"}`)
				if !r.IsError && r.text() == "still here" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not answering after the restart: %+v (starts %d)", r, s.starts("bad"))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if s.starts("bad") < 2 {
				t.Fatalf("starts = %d", s.starts("bad"))
			}
		})
	}
}

// FuzzRelayProgress: a progress notification's params, as a command or
// SSE server sends them, never panic the relay; they reach a call only
// when they carry its token, and then unchanged.
func FuzzRelayProgress(f *testing.F) {
	for _, s := range []string{`{"progressToken":"aiod-1","progress":1}`, `{"progressToken":1}`, `{"progressToken":null}`, `[]`, `"x"`, `{`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		u := &upstream{}
		var got []json.RawMessage
		u.tokens.Store("aiod-1", &slot{notify: func(_ string, p json.RawMessage) { got = append(got, p) }})
		u.relayProgress(params)
		if len(got) > 1 || len(got) == 1 && string(got[0]) != string(params) {
			t.Fatalf("relayed %q for %q", got, params)
		}
		var p struct {
			Token any `json:"progressToken"`
		}
		if len(got) == 1 && (json.Unmarshal(params, &p) != nil || p.Token != "aiod-1") {
			t.Fatalf("relayed %q without the call's token", params)
		}
	})
}
