//go:build linux

package proc

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// boundedForks starts n background sleeps that print their host pids: more
// processes than the limit under test, but a bounded number, so that the
// watchdog-only fallback can be tested without a race against a bomb.
func boundedForks(n int) string {
	return `for i in $(seq ` + strconv.Itoa(n) + `); do sh -c 'read p rest </proc/self/stat; echo "pid=$p."; exec sleep 30' & done; wait`
}

// forkPids parses the "pid=N." lines of boundedForks. A line cut short by
// the kill (or by the shell's output handling) is ignored rather than read
// as another process's pid.
func forkPids(out []byte) []int {
	var ps []int
	for _, line := range bytes.Split(out, []byte("\n")) {
		v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("pid="))
		if !ok {
			continue
		}
		v, ok = bytes.CutSuffix(v, []byte("."))
		if n, err := strconv.Atoi(string(v)); ok && err == nil {
			ps = append(ps, n)
		}
	}
	return ps
}

// TestWatchdogProcessLimit forces the fallback (no cgroup): the watchdog
// counts the unit's processes in /proc and kills it past MaxProcs.
func TestWatchdogProcessLimit(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := newManager(t, Config{Isolation: iso, MaxProcs: 16, WatchInterval: 20 * time.Millisecond, noCgroup: true})
		if c := m.Containment(); c.Mode != ModeWatchdog || c.Reason == "" {
			t.Fatalf("containment %+v", c)
		}
		bash, err := lookIn("bash", DefaultPath)
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Spawn(ctxT(t), SpawnRequest{Path: bash, Args: []string{"bash", "-c", boundedForks(40)}, Env: m.Config().BaseEnv, Dir: t.TempDir(), Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Killed != reasonProcLimit {
			t.Errorf("spawn: killed %q, want %s", res.Killed, reasonProcLimit)
		}
		t.Logf("spawn pids %d", len(forkPids(res.Stdout)))
		waitGone(t, 5*time.Second, forkPids(res.Stdout)...)

		key := Key{Session: "forks"}
		r := exec1(t, m, key, boundedForks(40), "", 20*time.Second)
		if r.Status != StatusTerminated || r.Reason != reasonProcLimit {
			t.Errorf("session: %+v", r)
		}
		t.Logf("session pids %d", len(forkPids(r.Output)))
		waitGone(t, 5*time.Second, forkPids(r.Output)...)
		if r = exec1(t, m, key, "echo next", "", 5*time.Second); r.Status != StatusCompleted || string(r.Output) != "next\n" {
			t.Errorf("next call: %+v %q", r, r.Output)
		}
	})
}

// cgroupManager is a manager whose units have cgroups, or nil (after
// checking that the manager says why not).
func cgroupManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m := newManager(t, cfg)
	c := m.Containment()
	if c.Mode == ModeWatchdog {
		if c.Reason == "" || m.cg != nil {
			t.Errorf("watchdog without a reason: %+v", c)
		}
		return nil
	}
	if m.cg == nil || (c.Mode != ModeCgroupV1 && c.Mode != ModeCgroupV2) {
		t.Fatalf("containment %+v, cgroups %v", c, m.cg)
	}
	return m
}

// TestCgroupUnit: a session's shell runs in its own cgroup with pids.max =
// MaxProcs, which is removed with the session, and the parent with Close.
func TestCgroupUnit(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := cgroupManager(t, Config{Isolation: iso, MaxProcs: 37})
		if m == nil {
			return
		}
		key := Key{Session: "cg"}
		r := exec1(t, m, key, "cat /proc/self/cgroup", "", 5*time.Second)
		u := m.sessions[key].peekShell().u
		if u.cg == nil {
			t.Fatal("unit without a cgroup")
		}
		rel := filepath.Base(m.cg.pids) + "/" + filepath.Base(u.cg.pids)
		want := ":pids:/"
		if m.cg.v2 {
			want = "0::/"
		}
		found := false
		for _, line := range strings.Split(string(r.Output), "\n") {
			if strings.Contains(line, want) && strings.HasSuffix(line, "/"+rel) {
				found = true
			}
		}
		if !found {
			t.Errorf("command not in the unit's cgroup %s: %q", rel, r.Output)
		}
		if b, err := os.ReadFile(filepath.Join(u.cg.pids, "pids.max")); err != nil || strings.TrimSpace(string(b)) != "37" {
			t.Errorf("pids.max %q %v", b, err)
		}
		// Between commands the unit is the shell and the jobs it forked
		// for the next command and the one after it (prelude.bash), once
		// the last one has exited.
		var ps []int
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			// The shell forks the next jobs after it answers: under load
			// the listing can come before them.
			if ps = unitProcs(u); (len(ps) >= 2 && len(ps) <= 3) || time.Now().After(deadline) {
				break
			}
		}
		if len(ps) < 2 || len(ps) > 3 || !slices.Contains(ps, u.pid) {
			t.Errorf("unit processes %v, want the shell %d and its next jobs", ps, u.pid)
		}
		for _, p := range ps {
			st, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
			if err != nil || len(st) == 0 {
				continue // exited since the listing (a job that was finishing)
			}
			_, after, _ := bytes.Cut(st, []byte(") "))
			if f := strings.Fields(string(after)); p != u.pid && (len(f) < 2 || f[1] != strconv.Itoa(u.pid)) {
				t.Errorf("unit process %d is not a child of the shell %d: %s", p, u.pid, st)
			}
		}
		if _, err := m.CloseSession(ctxT(t), key); err != nil {
			t.Fatal(err)
		}
		// Removed at once, or, when its processes are still dying or the
		// spawner's thread is inside it (a loaded machine), by the
		// watchdog's retry (every WatchInterval).
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err = os.Stat(u.cg.pids); errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("unit cgroup left 5 s after the session: %v", err)
		}
		// The host's thread went home: a spawn runs in a unit cgroup, the
		// test process does not.
		self, _ := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/cgroup")
		if strings.Contains(string(self), filepath.Base(m.cg.pids)) {
			t.Errorf("host thread in a unit cgroup: %s", self)
		}
		_ = m.Close()
		if _, err := os.Stat(m.cg.pids); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("parent cgroup left after Close: %v", err)
		}
	})
}

// TestCgroupHostThreads: after many concurrent starts no thread of the
// host is in a unit's cgroup; on cgroup v1 the spawner's threads may wait
// each in a prepared cgroup holding no process (spawner_linux.go), and
// none is left after Close.
func TestCgroupHostThreads(t *testing.T) {
	m := cgroupManager(t, Config{})
	if m == nil {
		return
	}
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 10 {
				spawnSh(t, m, "true", nil)
			}
		}()
	}
	for range 8 {
		<-done
	}
	// hostThreads lists the host's threads in a cgroup under the parent,
	// with that cgroup's directory
	hostThreads := func() map[string]string {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]string{}
		for _, e := range tasks {
			b, _ := os.ReadFile("/proc/self/task/" + e.Name() + "/cgroup")
			for _, line := range strings.Split(string(b), "\n") {
				if _, rel, ok := strings.Cut(line, "/"+filepath.Base(m.cg.pids)+"/"); ok && strings.Contains(line, "pids") || ok && m.cg.v2 {
					in[e.Name()] = filepath.Join(m.cg.pids, rel)
				}
			}
		}
		return in
	}
	var in map[string]string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		in = hostThreads()
		prepared := len(in) <= spawnThreads && !m.cg.v2
		for _, dir := range in {
			// the spawner's cgroup: itself and no process of a unit
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			prepared = prepared && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid())
		}
		if len(in) == 0 || prepared || time.Now().After(deadline) {
			break
		}
	}
	if len(in) > spawnThreads || len(in) > 0 && m.cg.v2 {
		t.Errorf("host threads in unit cgroups: %v", in)
	}
	_ = m.Close()
	if in := hostThreads(); len(in) > 0 {
		t.Errorf("host threads in unit cgroups after Close: %v", in)
	}
	if _, err := os.Stat(m.cg.pids); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("parent cgroup left after Close: %v", err)
	}
}

// TestCgroupSpawner: on cgroup v1 a start takes the spawner's prepared
// cgroup (its thread is there when the unit's first process forks, and
// leaves after); the unit's cgroup is removed once both are gone. A kill of
// a cgroup the host's thread is in kills the unit's processes, never the
// host.
func TestCgroupSpawner(t *testing.T) {
	m := cgroupManager(t, Config{MaxProcs: 9})
	if m == nil {
		return
	}
	spawnSh(t, m, "true", nil) // the first start may be synchronous: it starts the spawner
	var cg *unitCgroup
	for deadline := time.Now().Add(10 * time.Second); cg == nil || cg.hostLeft == nil && !m.cg.v2; {
		if time.Now().After(deadline) {
			t.Fatal("no start took a prepared cgroup")
		}
		sh, _ := lookIn("sh", DefaultPath)
		r, err := m.Start(ctxT(t), SpawnRequest{Path: sh, Args: []string{"sh", "-c", "cat /proc/self/cgroup; sleep 30"}, Env: m.Config().BaseEnv, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		cg = r.u.cg
		if cg.hostLeft == nil && !m.cg.v2 {
			r.Wait(true)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		out, _ := r.Read(ctxT(t), 0, 5*time.Second)
		if !strings.Contains(string(out), "/"+filepath.Base(m.cg.pids)+"/"+filepath.Base(cg.pids)) {
			t.Errorf("the unit's first process is not in its cgroup %s: %s", cg.pids, out)
		}
		if b, err := os.ReadFile(filepath.Join(cg.pids, "pids.max")); err != nil || strings.TrimSpace(string(b)) != "9" {
			t.Errorf("pids.max %q %v", b, err)
		}
		if res := r.Wait(true); res.Killed != ReasonStopped {
			t.Errorf("result %+v", res)
		}
	}
	if m.cg.v2 {
		return // v2 clones straight into the cgroup: no spawner
	}
	select {
	case <-cg.hostLeft:
	case <-time.After(10 * time.Second):
		t.Fatal("the spawner's thread did not leave the unit's cgroup")
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(cg.pids); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unit cgroup %s left after the unit and the spawner's thread", cg.pids)
		}
	}

	// a host thread in a unit's cgroup beside a process of the unit: the
	// kill takes the process and leaves the host alone
	unit, err := m.cg.create(9)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		tid := strconv.Itoa(syscall.Gettid())
		if err := m.cg.moveThread(tid, unit); err != nil {
			errc <- err
			return
		}
		cmd := exec.Command("sleep", "30")
		err := cmd.Start()
		errc <- err
		<-release
		if m.cg.moveHome(tid) {
			runtime.UnlockOSThread()
		}
		if err == nil {
			_ = cmd.Wait()
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ps := unit.procs()
	if len(ps) != 1 || slices.Contains(ps, os.Getpid()) {
		t.Errorf("procs %v: want the sleep alone, never the host %d", ps, os.Getpid())
	}
	if !unit.kill() {
		t.Error("the kill left a process of the unit")
	}
	close(release)
	<-errc
	if !unit.remove() {
		t.Error("unit cgroup not removed")
	}
}

// TestCgroupMemoryLimit: with MaxMemory, a unit that allocates more is
// killed by the kernel; one that stays below runs.
func TestCgroupMemoryLimit(t *testing.T) {
	m := cgroupManager(t, Config{MaxMemory: 64 << 20})
	if m == nil {
		return
	}
	if c := m.Containment(); c.Reason != "" {
		if !strings.Contains(c.Reason, "memory") {
			t.Errorf("containment %+v", c)
		}
		return
	}
	bash, err := lookIn("bash", DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	grow := func(n int) *SpawnResult {
		script := `x=$(head -c ` + strconv.Itoa(n) + ` /dev/zero | tr '\0' a); echo ${#x}`
		res, err := m.Spawn(ctxT(t), SpawnRequest{Path: bash, Args: []string{"bash", "-c", script}, Env: m.Config().BaseEnv, Dir: t.TempDir(), Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := grow(1 << 20); string(res.Stdout) != "1048576\n" {
		t.Errorf("below the limit: %+v", res)
	}
	if res := grow(400 << 20); res.ExitCode == 0 || res.Signal != "SIGKILL" {
		t.Errorf("above the limit: exit %d signal %q stdout %q", res.ExitCode, res.Signal, res.Stdout)
	}
}

// TestCgroupCleanStale: New removes the cgroups of an aiod that died
// without Close (in its set-up, done before Containment answers and before
// the first unit starts), and leaves those of a live one.
func TestCgroupCleanStale(t *testing.T) {
	m := cgroupManager(t, Config{})
	if m == nil {
		return
	}
	home := m.cg.pidsHome
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("pid %d reused already", pid)
	}
	stale := filepath.Join(home, "aiod-"+strconv.Itoa(pid)+"-0badc0de")
	live := filepath.Join(home, "aiod-1-0badc0de") // pid 1 is alive
	for _, d := range []string{stale, filepath.Join(stale, "u1"), live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(stale, "u1")); _ = os.Remove(stale); _ = os.Remove(live) })
	m2 := newManager(t, Config{})
	m2.Containment() // waits for the set-up New started
	if m2.cg == nil {
		t.Fatal("second manager without cgroups")
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("live aiod's cgroup removed: %v", err)
	}
}

// BenchmarkUnitCgroup is what a cgroup adds to a start: make the unit's
// cgroup, move the starting thread in and back (v1), remove the cgroup.
func BenchmarkUnitCgroup(b *testing.B) {
	m := New(Config{})
	defer m.Close()
	if m.cg == nil {
		b.Fatalf("no cgroups: %+v", m.Containment())
	}
	for b.Loop() {
		cg, err := m.cg.create(512)
		if err != nil {
			b.Fatal(err)
		}
		if !m.cg.v2 {
			errc := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				errc <- m.cg.onThreadIn(cg, func() error { return nil })
			}()
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		}
		if !cg.remove() {
			b.Fatal("not removed")
		}
	}
}

// TestStartedUnitGoneAtWait: when a started program's Wait answers, every
// process of its unit is dead (a background child that kept stdout open
// too), though the empty cgroup's directories may still be there; they
// go right after (or by the watchdog's retry on a loaded machine).
func TestStartedUnitGoneAtWait(t *testing.T) {
	isolations(t, func(t *testing.T, iso Isolation) {
		m := cgroupManager(t, Config{Isolation: iso})
		if m == nil {
			return
		}
		// the parent exits first, the child still running (in a PID
		// namespace its end kills the child: the namespace's init)
		r := startSh(t, ctxT(t), m, `sh -c 'read p rest </proc/self/stat; echo "pid=$p."; exec sleep 30' & sleep 0.3; exit 0`, nil)
		if r.u.cg == nil {
			t.Fatal("unit without a cgroup")
		}
		var out []byte
		for deadline := time.Now().Add(10 * time.Second); !bytes.Contains(out, []byte(".")); {
			if time.Now().After(deadline) {
				t.Fatalf("no pid from the background child: %q", out)
			}
			b, eof := r.Read(ctxT(t), 1<<10, time.Second)
			out = append(out, b...)
			if eof {
				break
			}
		}
		_, rest, _ := bytes.Cut(out, []byte("pid="))
		num, _, _ := bytes.Cut(rest, []byte("."))
		pid, err := strconv.Atoi(string(num))
		if err != nil || pid <= 0 {
			t.Fatalf("output %q", out)
		}
		res := r.Wait(false)
		if res.ExitCode != 0 {
			t.Errorf("result %+v", res)
		}
		if !gone(pid) {
			t.Errorf("the unit's background child %d is alive after Wait answered", pid)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err = os.Stat(r.u.cg.pids); errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("unit cgroup left 5 s after Wait: %v", err)
		}
	})
}
