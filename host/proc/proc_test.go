package proc

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	force := cfg.Isolation == isolationUserNS
	if force {
		cfg.Isolation = IsolationNone
	}
	m := New(cfg)
	if force {
		<-m.ready // New's set-up chose the isolation: replace it
		m.iso = isoUserPidNS
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// isolations runs f once per containment mode: IsolationAuto (a PID
// namespace where the machine allows it), IsolationNone, and, where it
// works, the user+PID namespace that non-root hosts get (forced through
// forceIso, which newManager applies).
func isolations(t *testing.T, f func(t *testing.T, iso Isolation)) {
	t.Run("auto", func(t *testing.T) { f(t, IsolationAuto) })
	t.Run("none", func(t *testing.T) { f(t, IsolationNone) })
	if runtime.GOOS == "linux" && isoWorks(isoUserPidNS) {
		t.Run("userns", func(t *testing.T) { f(t, isolationUserNS) })
	}
}

// isolationUserNS asks newManager for the user+PID namespace.
const isolationUserNS Isolation = 100

// gone reports whether pid has exited (a zombie counts as gone).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// waitGone waits up to d for every pid to be gone.
func waitGone(t *testing.T, d time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still alive after %v", pid, d)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func pids(t *testing.T, out []byte) []int {
	t.Helper()
	var ps []int
	for _, f := range bytes.Fields(out) {
		p, err := strconv.Atoi(string(f))
		if err != nil {
			t.Fatalf("not a pid: %q in %q", f, out)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		t.Fatalf("no pids in %q", out)
	}
	return ps
}

func heapAllocs() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// bombGuard asserts the kernel's bound while a fork bomb runs: no unit's
// cgroup ever holds more tasks than the unit's limit (pids.current, and
// pids.peak, which also catches what happens between two polls, where the
// kernel has it). As a safety net for the machine, past 1500 tasks more on
// the system than at the start, it kills every unit of m and fails.
func bombGuard(t *testing.T, m *Manager) {
	base := procTotal()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			m.mu.Lock()
			for u := range m.units {
				if u.cg == nil {
					continue
				}
				if cur, peak := u.cg.count(); cur > u.limit || peak > u.limit {
					t.Errorf("bomb guard: unit %d has %d tasks (peak %d), limit %d", u.pid, cur, peak, u.limit)
				}
			}
			if base >= 0 && procTotal() >= base+1500 {
				t.Error("bomb guard: the system's task count ran away; killing")
				for u := range m.units {
					killSession(u) // also if the cgroup failed to hold it
					killTree(u)
				}
			}
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
