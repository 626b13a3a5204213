package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func exec1(t *testing.T, m *Manager, key Key, cmd, cwd string, timeout time.Duration) *ExecResult {
	t.Helper()
	res, err := execT(t, m, key, cmd, cwd, timeout)
	if err != nil {
		t.Fatalf("%q: %v", cmd, err)
	}
	return res
}

// execT is Exec with the test's context and a start directory.
func execT(t *testing.T, m *Manager, key Key, cmd, cwd string, timeout time.Duration) (*ExecResult, error) {
	return m.Exec(ctxT(t), key, cmd, cwd, timeout, ExecOptions{StartDir: os.TempDir()})
}

func code(r *ExecResult) string {
	if r.ExitCode == nil {
		return "nil"
	}
	return fmt.Sprint(*r.ExitCode)
}

// TestShellSession runs one session through steps whose state carries over.
func TestShellSession(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso})
		root, _ := filepath.EvalSymlinks(t.TempDir())
		sub := filepath.Join(root, "sub dir")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(sub, filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		key := Key{Plugin: "p", Owner: "o", Session: "default"}
		steps := []struct {
			cmd, cwd string
			want     string // exact output
			code     string
			wantCwd  string // "" = unchanged check skipped
		}{
			{cmd: `pwd`, cwd: root, want: root + "\n", code: "0", wantCwd: root},
			{cmd: `cd "sub dir"`, code: "0", wantCwd: sub},
			{cmd: `pwd`, want: sub + "\n", code: "0", wantCwd: sub},
			{cmd: `cd - >/dev/null; pwd; cd - >/dev/null`, want: root + "\n", code: "0", wantCwd: sub},
			{cmd: `cd -`, want: root + "\n", code: "0", wantCwd: root},
			{cmd: `cd -`, want: sub + "\n", code: "0", wantCwd: sub},
			{cmd: `echo "$# [$*] $0"`, want: "0 [] bash\n", code: "0"},
			{cmd: `cd ../link`, code: "0", wantCwd: sub}, // reported with symlinks resolved
			{cmd: `export FOO=bar; X="a b"; arr=(1 2 3); f() { echo "fn $1"; }; alias hi='echo alias'`, code: "0"},
			{cmd: `echo "$FOO|$X|${arr[2]}"; f 1; hi; sh -c 'echo "child $FOO"'`, want: "bar|a b|3\nfn 1\nalias\nchild bar\n", code: "0"},
			{cmd: `unset FOO; unset -f f; unalias hi`, code: "0"},
			{cmd: `echo "${FOO-unset}"; type f >/dev/null 2>&1 || echo nofn; alias hi 2>/dev/null || echo noalias`, want: "unset\nnofn\nnoalias\n", code: "0"},
			{cmd: `pwd`, cwd: root, want: root + "\n", code: "0", wantCwd: root}, // cwd sync
			// the shell cds to a given cwd, the command back (OLDPWD too):
			// the saved state is the text loaded before, yet it must be
			// loaded again
			{cmd: `cd "` + root + `"; OLDPWD="` + sub + `"`, cwd: sub, code: "0", wantCwd: root},
			{cmd: `pwd`, want: root + "\n", code: "0", wantCwd: root},
			{cmd: `echo out; echo err >&2; echo out2`, want: "out\nerr\nout2\n", code: "0"},
			{cmd: `printf abc`, want: "abc", code: "0"},
			{cmd: `read x; echo "got[$x] $?"`, want: "got[] 1\n", code: "0"}, // stdin is /dev/null
			{cmd: `hi`, want: "bash: line 1: hi: command not found\n", code: "127"},
			{cmd: `case $- in *m*) echo monitor;; esac; shopt -q sourcepath && echo sourcepath`, want: "sourcepath\n", code: "0"},
			{cmd: `false`, code: "1"},
			{cmd: `echo bye; exit 7; echo never`, want: "bye\n", code: "7"},
			{cmd: `echo alive`, want: "alive\n", code: "0"},
			{cmd: `cd "sub dir"; export AFTER=exit; exit 3`, code: "3", wantCwd: sub},
			{cmd: `echo "$AFTER"; pwd`, want: "exit\n" + sub + "\n", code: "0"},
			{cmd: `exec true`, code: "0"},
			{cmd: `echo after exec`, want: "after exec\n", code: "0"},
			{cmd: `exec sh -c 'echo replaced; exit 4'`, want: "replaced\n", code: "4"},
			{cmd: `echo still here`, want: "still here\n", code: "0"},
			{cmd: `set -e; false; echo never`, code: "1"},
			{cmd: `case $- in *e*) echo errexit kept;; esac; set +e`, want: "errexit kept\n", code: "0"},
			{cmd: `set -x; echo traced`, want: "++ echo traced\ntraced\n", code: "0"}, // one level of eval
			{cmd: `set +x`, want: "++ set +x\n", code: "0"},
			{cmd: `trap 'echo mine' EXIT; echo a`, want: "a\nmine\n", code: "0"},
			{cmd: `sh -c 'kill -TERM $$'`, code: "143"},
			{cmd: `echo "syntax error`, code: "2"},
			{cmd: "echo one\n  ( ", want: "one\nbash: eval: line 3: syntax error: unexpected end of file\n", code: "2"},
			{cmd: `echo ok`, want: "ok\n", code: "0"},
			{cmd: `cd /nonexistent-aiod`, code: "1"},
			{cmd: `echo $((1+1))`, want: "2\n", code: "0"},
		}
		for i, st := range steps {
			res := exec1(t, m, key, st.cmd, st.cwd, 10*time.Second)
			if res.Status != StatusCompleted || code(res) != st.code {
				t.Fatalf("step %d %q: status %s code %s, want completed %s (output %q)", i, st.cmd, res.Status, code(res), st.code, res.Output)
			}
			if st.want != "" || st.code == "0" && !strings.Contains(st.cmd, "error") {
				if st.want != "" && string(res.Output) != st.want || st.want == "" && len(res.Output) != 0 {
					t.Errorf("step %d %q: output %q, want %q", i, st.cmd, res.Output, st.want)
				}
			}
			if st.wantCwd != "" && res.Cwd != st.wantCwd {
				t.Errorf("step %d %q: cwd %q, want %q", i, st.cmd, res.Cwd, st.wantCwd)
			}
		}
	})
}

// TestShellKillShell: a command that kills the session's own shell ends
// with "terminated" (without a namespace) or is ignored (the shell is the
// namespace init); either way the next call works promptly.
func TestShellKillShell(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso})
		key := Key{Session: "k"}
		exec1(t, m, key, `export KEEP=1; cd /`, "", 5*time.Second)
		res := exec1(t, m, key, `kill -9 $$; sleep 1; echo survived`, "", 5*time.Second)
		switch {
		case res.Status == StatusTerminated && res.Reason == "exited":
		case res.Status == StatusCompleted && string(res.Output) == "survived\n":
		default:
			t.Fatalf("kill own shell: %+v output %q", res, res.Output)
		}
		start := time.Now()
		res = exec1(t, m, key, `echo "next $KEEP"; pwd`, "", 5*time.Second)
		if res.Status != StatusCompleted || string(res.Output) != "next 1\n/\n" || time.Since(start) > 2*time.Second {
			t.Fatalf("next call: %+v output %q after %v", res, res.Output, time.Since(start))
		}
	})
}

func TestShellTimeout(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso})
		key := Key{Session: "t"}
		exec1(t, m, key, `cd /; export V=kept`, "", 5*time.Second)
		start := time.Now()
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		res := exec1(t, m, key, bgPidSh+`echo before; sleep 300`, dir, 700*time.Millisecond)
		if d := time.Since(start); d > 1700*time.Millisecond {
			t.Errorf("returned after %v, timeout 700ms", d)
		}
		if res.Status != StatusHardTimeout || res.ExitCode != nil || res.Reason != "timeout" {
			t.Errorf("result %+v", res)
		}
		out := strings.TrimSuffix(string(res.Output), "before\n")
		if len(out) == len(res.Output) {
			t.Errorf("output %q lacks the partial output", res.Output)
		}
		waitGone(t, 2*time.Second, pids(t, []byte(out))...)
		res = exec1(t, m, key, `echo "$V"; pwd`, "", 5*time.Second)
		if res.Status != StatusCompleted || string(res.Output) != "kept\n"+dir+"\n" || res.Restarted {
			t.Errorf("after timeout: %+v output %q", res, res.Output)
		}
	})
}

// TestShellConcurrent: concurrent calls on one session are serialized and
// each gets its own output.
func TestShellConcurrent(t *testing.T) {
	m := newManager(t, Config{})
	dir := t.TempDir()
	key := Key{Session: "c"}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := execT(t, m, key, fmt.Sprintf(`echo "start %d" >>log; echo "out %d"; sleep 0.05; echo "end %d" >>log; N%d=%d`, i, i, i, i, i), dir, 30*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Status != StatusCompleted || string(res.Output) != fmt.Sprintf("out %d\n", i) {
				t.Errorf("call %d: %+v output %q", i, res, res.Output)
			}
		}()
	}
	wg.Wait()
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 16 {
		t.Fatalf("log %q", log)
	}
	for i := 0; i < 16; i += 2 {
		var a, b int
		fmt.Sscanf(lines[i], "start %d", &a)
		fmt.Sscanf(lines[i+1], "end %d", &b)
		if !strings.HasPrefix(lines[i], "start") || !strings.HasPrefix(lines[i+1], "end") || a != b {
			t.Fatalf("calls overlapped: %q", log)
		}
	}
	res := exec1(t, m, key, `echo $N0$N1$N2$N3$N4$N5$N6$N7`, "", 5*time.Second)
	if string(res.Output) != "01234567\n" {
		t.Errorf("state of the 8 calls: %q", res.Output)
	}
}

func TestShellOutputCap(t *testing.T) {
	m := newManager(t, Config{})
	key := Key{Session: "cap"}
	before := heapAllocs()
	res, err := m.Exec(ctxT(t), key, `head -c 104857600 /dev/zero; echo tail`, "", 30*time.Second, ExecOptions{MaxOutput: 1000, StartDir: os.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if allocated := heapAllocs() - before; allocated > 16<<20 {
		t.Errorf("allocated %d MiB for 100 MiB of output", allocated>>20)
	}
	if res.Status != StatusCompleted || len(res.Output) != 1000 || !res.Truncated {
		t.Errorf("status %s, %d bytes, truncated %v", res.Status, len(res.Output), res.Truncated)
	}
	res = exec1(t, m, key, `echo next`, "", 5*time.Second)
	if string(res.Output) != "next\n" || res.Truncated {
		t.Errorf("next: %q", res.Output)
	}
}

// TestShellForkBomb: the bomb stays within the process limit (bombGuard),
// the session is killed as "process_limit", nothing of the bomb is left,
// and the next call works.
func TestShellForkBomb(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the watchdog needs /proc")
	}
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso, MaxProcs: 64, WatchInterval: 20 * time.Millisecond})
		bombGuard(t, m)
		key := Key{Session: "bomb"}
		exec1(t, m, key, `export KEEP=yes`, "", 5*time.Second)
		s := m.sessions[key]
		u := s.peekShell().u
		res := exec1(t, m, key, `:(){ :|:& };:`, "", 10*time.Second)
		if res.Status != StatusCompleted && res.Status != StatusTerminated {
			t.Errorf("bomb: %+v", res)
		}
		deadline := time.Now().Add(10 * time.Second)
		for u.killReason() == "" || len(unitProcs(u)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("bomb not contained: reason %q, %d processes left", u.killReason(), len(unitProcs(u)))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if u.killReason() != "process_limit" {
			t.Errorf("kill reason %q", u.killReason())
		}
		start := time.Now()
		res = exec1(t, m, key, `echo "next $KEEP"`, "", 5*time.Second)
		if res.Status != StatusCompleted || string(res.Output) != "next yes\n" || !res.Restarted || time.Since(start) > 3*time.Second {
			t.Errorf("next call: %+v output %q after %v", res, res.Output, time.Since(start))
		}
		// A bomb that keeps the command running: the call itself ends.
		res = exec1(t, m, key, `:(){ :|:& };:; sleep 30`, "", 20*time.Second)
		if res.Status != StatusTerminated || res.Reason != "process_limit" {
			t.Errorf("running bomb: %+v", res)
		}
		res = exec1(t, m, key, `echo again`, "", 5*time.Second)
		if res.Status != StatusCompleted || string(res.Output) != "again\n" {
			t.Errorf("after running bomb: %+v output %q", res, res.Output)
		}
	})
}

// TestShellUserColon: a function a command defines named ":" (the fork
// bomb's name) persists for the later commands, a restarted shell's too,
// but the session's own code never calls it (it runs builtins only): else
// after a fork bomb the innocent next command would bomb again.
func TestShellUserColon(t *testing.T) {
	m := newManager(t, Config{})
	key := Key{Session: "colon"}
	mark := filepath.Join(t.TempDir(), "called")
	run := func(cmd, want string, restarted bool) {
		t.Helper()
		res := exec1(t, m, key, cmd, "", 5*time.Second)
		if res.Status != StatusCompleted || string(res.Output) != want || res.Restarted != restarted {
			t.Fatalf("%q: %+v output %q", cmd, res, res.Output)
		}
	}
	run(`:() { builtin echo "$BASHPID" >>`+shQuote(mark)+`; }`, "", false)
	run(`echo one`, "one\n", false)
	run(`echo two`, "two\n", false)
	m.sessions[key].peekShell().u.kill(reasonClosed)
	run(`echo three`, "three\n", true)
	run(`echo four; type -t :`, "four\nfunction\n", false)
	if b, err := os.ReadFile(mark); err == nil {
		t.Fatalf("the session's shell called the user's function \":\" (pids %q)", b)
	}
	run(`:`, "", false)
	if b, err := os.ReadFile(mark); err != nil || strings.Count(string(b), "\n") != 1 {
		t.Errorf("the user's own call of \":\": %q, %v", b, err)
	}
}

func TestShellSessionsIsolatedAndBounded(t *testing.T) {
	m := newManager(t, Config{MaxSessionsPerOwner: 2, MaxSessions: 3})
	set := func(k Key, v string) { exec1(t, m, k, "V="+v, "", 5*time.Second) }
	get := func(k Key) string { return string(exec1(t, m, k, `echo "${V-none}"`, "", 5*time.Second).Output) }
	a := Key{Plugin: "p", Owner: "alice", Session: "default"}
	b := Key{Plugin: "p", Owner: "bob", Session: "default"}
	q := Key{Plugin: "q", Owner: "alice", Session: "default"}
	set(a, "a")
	set(b, "b")
	if got := get(q); got != "none\n" {
		t.Errorf("other plugin sees %q", got)
	}
	if get(a) != "a\n" || get(b) != "b\n" {
		t.Errorf("owners mixed: %q %q", get(a), get(b))
	}
	if n := m.Sessions(); n != 3 {
		t.Errorf("%d sessions", n)
	}
	// A fourth session evicts the least recently used (q).
	a2 := Key{Plugin: "p", Owner: "alice", Session: "second"}
	set(a2, "a2")
	if n := m.Sessions(); n != 3 {
		t.Errorf("%d sessions after eviction", n)
	}
	if _, ok := m.sessions[q]; ok {
		t.Errorf("LRU session not evicted")
	}
	// A third session of alice evicts her least recently used one.
	set(Key{Plugin: "p", Owner: "alice", Session: "third"}, "a3")
	if get(a2) != "a2\n" {
		t.Errorf("most recent session of alice lost")
	}
	if _, ok := m.sessions[a]; ok {
		t.Errorf("alice's LRU session not evicted")
	}
	if ok, err := m.CloseSession(ctxT(t), b); !ok || err != nil {
		t.Errorf("close: %v %v", ok, err)
	}
	if get(b) != "none\n" {
		t.Errorf("closed session kept its state")
	}
	if ok, _ := m.CloseSession(ctxT(t), Key{Session: "never"}); ok {
		t.Errorf("closing an unknown session reported true")
	}
	if _, err := execT(t, m, Key{}, "true", "", time.Second); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty session id: %v", err)
	}
}

func TestShellIdleExpiry(t *testing.T) {
	m := newManager(t, Config{IdleTimeout: 200 * time.Millisecond, WatchInterval: 20 * time.Millisecond})
	exec1(t, m, Key{Session: "idle"}, "true", "", 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for m.Sessions() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle session not expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShellCloseKillsEverything(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso})
		var bg []int
		for i := range 3 {
			res := exec1(t, m, Key{Session: fmt.Sprint(i)}, bgPidSh, t.TempDir(), 5*time.Second)
			bg = append(bg, pids(t, res.Output)...)
		}
		var dirs []string
		for _, s := range m.sessions {
			dirs = append(dirs, s.dir)
		}
		// One call still running when Close comes.
		done := make(chan *ExecResult)
		go func() {
			res, _ := execT(t, m, Key{Session: "0"}, "sleep 300", "", time.Minute)
			done <- res
		}()
		time.Sleep(300 * time.Millisecond)
		_ = m.Close()
		_ = m.Close()
		select {
		case res := <-done:
			if res != nil && res.Status != StatusTerminated {
				t.Errorf("running call: %+v", res)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("running call did not return after Close")
		}
		waitGone(t, 2*time.Second, bg...)
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("session dir %s left behind", d)
			}
		}
		if _, err := execT(t, m, Key{Session: "0"}, "true", "", time.Second); !errors.Is(err, ErrClosed) {
			t.Errorf("exec after close: %v", err)
		}
	})
}

func BenchmarkShellExec(b *testing.B) {
	m := New(Config{})
	defer m.Close()
	key := Key{Session: "bench"}
	ctx := context.Background()
	for b.Loop() {
		res, err := m.Exec(ctx, key, "X=$((X+1))", "", 10*time.Second, ExecOptions{StartDir: os.TempDir()})
		if err != nil || res.Status != StatusCompleted {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkCountProcs(b *testing.B) {
	us := []*unit{{pid: 1, ns: "pid:[1]"}, {pid: 2}}
	for b.Loop() {
		countProcs(us)
	}
}

// TestShellNextJob: the job for the next command is forked while a command
// runs (prelude.bash). After a command that changed nothing, the job that
// ran it releases that next job itself ("sg" in its ok file); after one
// that changed variables, functions, aliases, options or the directory,
// or that ended by exit or exec, the parent loads the state and forks a
// fresh one: each next command must see exactly the state left behind.
func TestShellNextJob(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso})
		root, _ := filepath.EvalSymlinks(t.TempDir())
		sub := filepath.Join(root, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		key := Key{Session: "next"}
		steps := []struct {
			cmd, cwd, want string
			fast           bool // the job released the next one itself
		}{
			{cmd: `true`, cwd: root},
			{cmd: `true`, fast: true},
			{cmd: `echo same`, want: "same\n", fast: true},
			{cmd: `Y=2`},
			{cmd: `echo "$Y"`, want: "2\n", fast: true},
			{cmd: `unset Y`},
			{cmd: `echo "${Y-unset}"`, want: "unset\n", fast: true},
			{cmd: `f() { echo "f $1"; }`},
			{cmd: `f 1`, want: "f 1\n", fast: true},
			{cmd: `f() { echo "g $1"; }`},
			{cmd: `f 2`, want: "g 2\n", fast: true},
			{cmd: `alias a='echo al'`},
			{cmd: `a`, want: "al\n", fast: true},
			{cmd: `set -u; shopt -s nullglob`},
			{cmd: `echo "$-" | grep -q u && shopt -q nullglob && echo opts`, want: "opts\n", fast: true},
			{cmd: `set +u; shopt -u nullglob`},
			{cmd: `echo "$-" | grep -q u || shopt -q nullglob || echo default`, want: "default\n", fast: true},
			{cmd: `cd sub`},
			{cmd: `pwd`, want: sub + "\n", fast: true},
			{cmd: `Z=3; exit 4`},
			{cmd: `echo "$Z"`, want: "3\n", fast: true},
			{cmd: `exec true`, cwd: root},
			{cmd: `pwd; echo "$Z"`, want: root + "\n3\n"}, // the parent moved: its state is reloaded once
			{cmd: `pwd`, want: root + "\n", fast: true},
			{cmd: `trap 'echo mine' EXIT; W=1`, want: "mine\n"},
			{cmd: `echo "${W-none}"`, want: "none\n", fast: true},
		}
		for i, st := range steps {
			res := exec1(t, m, key, st.cmd, st.cwd, 10*time.Second)
			if res.Status != StatusCompleted || string(res.Output) != st.want {
				t.Fatalf("step %d %q: %+v output %q, want %q", i, st.cmd, res, res.Output, st.want)
			}
			if !st.fast {
				continue
			}
			// The job's ok file is written after its end marker.
			s := m.sessions[key]
			var ok []byte
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				ok, _ = os.ReadFile(filepath.Join(s.dir, fmt.Sprintf("ok.%d", (i+1)%2)))
				if strings.HasPrefix(string(ok), fmt.Sprint(i+1)+" ") {
					break
				}
			}
			if !strings.HasSuffix(string(ok), " sg\n") {
				t.Errorf("step %d %q: ok %q, want the next job released by this one", i, st.cmd, ok)
			}
		}
	})
}

// TestShellNextJobKilled: a command that kills the job waiting for the next
// command does not break the session: the next command runs in a fresh
// job, and the one after it sees the state of the one before.
func TestShellNextJobKilled(t *testing.T) {
	m := newManager(t, Config{Isolation: IsolationNone})
	key := Key{Session: "killnext"}
	exec1(t, m, key, `true`, "", 5*time.Second)
	// The waiting jobs are the shell's children other than this one.
	// In a subshell (whose parent is the command's job, spared), so that
	// the command changes nothing and its job releases the dead next one.
	kill := `(read -r _ _ _ job _ </proc/self/stat; for p in $(ps -o pid= --ppid $$); do [ "$p" = "$job" ] || kill -9 "$p"; done 2>/dev/null)`
	type step struct{ cmd, want string }
	var steps []step
	for i := range 5 {
		v := fmt.Sprint(i)
		steps = append(steps, step{kill, ""}, step{`V=` + v, ""}, step{`echo "v=$V"`, "v=" + v + "\n"}, step{`echo "v=$V"`, "v=" + v + "\n"})
	}
	for i, st := range steps {
		res := exec1(t, m, key, st.cmd, "", 5*time.Second)
		if res.Status != StatusCompleted || string(res.Output) != st.want {
			t.Fatalf("step %d %q: %+v output %q, want %q", i, st.cmd, res, res.Output, st.want)
		}
	}
}
