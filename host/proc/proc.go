// Package proc is the native process layer behind the aiod:process host
// functions: one-shot processes (Spawn) and persistent bash sessions owned
// by the host (Manager.Exec), with output caps, timeouts that kill whole
// process trees, and per-unit process and memory limits the kernel enforces
// (cgroups).
//
// # Containment
//
// Every process tree the package starts (a spawned program or a session's
// shell) is a unit: it is started in a new session (setsid), so in a new
// process group, with SIGKILL as its parent-death signal, and, where the
// kernel allows it, as the init of a new PID namespace (CLONE_NEWPID as
// root, CLONE_NEWUSER|CLONE_NEWPID with the caller's own uid and gid mapped
// otherwise). Killing the init of a PID namespace kills every process in
// it, even those that left the process group or session. Without a
// namespace a unit is killed by process group and by its cgroup (or, with
// no cgroup, by scanning /proc for members of its session).
//
// Each unit also gets its own cgroup, a child of one parent per Manager
// (aiod-<pid>-<token>, removed by Close; those of a crashed aiod are
// removed by the next New), with pids.max = Config.MaxProcs and, when
// Config.MaxMemory is set, a memory limit. The unit is in its cgroup before
// it can fork: cgroup v2 clones it straight into it (CLONE_INTO_CGROUP),
// used where the host's own cgroup delegates the pids controller; cgroup v1
// (the pids and memory hierarchies) starts it from an OS thread moved into
// the unit's cgroups for the fork and moved back after. A fork bomb then
// cannot exceed the limit, however fast it forks: the kernel refuses the
// fork. The watchdog (every Config.WatchInterval) reads the cgroup's
// pids.events and kills a unit the kernel refused a fork, reporting
// "process_limit"; a kill SIGKILLs every process in the cgroup until none
// is left.
//
// Where no cgroup can be made (not root and nothing delegated, a read-only
// hierarchy, no pids controller) the Manager says so once in its log and
// in Containment, and falls back to a watchdog that counts the processes
// of each unit in /proc (by PID namespace, else by session id) and kills a
// unit past Config.MaxProcs: a race a fast fork bomb can win for a while.
// RLIMIT_NPROC is not used: the kernel exempts root from it and it counts
// every process of the uid, the host's own included. No external tool
// (bwrap, prlimit, unshare, systemd-run) is needed.
//
// The namespace and the cgroup are a containment and cleanup boundary,
// not a sandbox: the processes share the host's filesystem, network and
// /proc, and a program run as root can leave by means of its own (write
// its pid to another cgroup, or nest a PID namespace).
//
// # Sandbox
//
// With Config.Sandbox (lockdown) every unit is also a bubblewrap sandbox
// (bwrap and prlimit from the machine): read-only system directories, the
// owner's directories writable, no network, uid 10001 without
// capabilities, per-process CPU, address space and file size limits; the
// cgroup limits above apply to it unchanged (see Sandbox).
package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Error kinds. Every error the package returns for a bad or refused request
// is an *Error wrapping one of them.
var (
	ErrDenied   = errors.New("denied")
	ErrInvalid  = errors.New("invalid request")
	ErrNotFound = errors.New("not found")
	ErrTooLarge = errors.New("too large")
	ErrBusy     = errors.New("busy")
	ErrClosed   = errors.New("process manager closed")
)

// Error is a request error of a given kind.
type Error struct {
	Kind error // one of the Err* kinds
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, a ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, a...)}
}

// Isolation selects how units are contained.
type Isolation int

const (
	// IsolationAuto uses a PID namespace when the kernel allows it and
	// falls back to process groups and sessions.
	IsolationAuto Isolation = iota
	// IsolationNone never creates namespaces.
	IsolationNone
)

// Config configures a Manager. Zero fields take the defaults below.
type Config struct {
	// DefaultTimeout applies when a request gives none (30s); MaxTimeout
	// caps what a request may ask for (10m).
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// DefaultMaxOutput is the output cap when a request gives none: per
	// stream for Spawn, for the combined output of Exec (1 MiB).
	// MaxOutputLimit caps what a request may ask for (16 MiB).
	DefaultMaxOutput int64
	MaxOutputLimit   int64
	// MaxProcs is the most processes one unit may have at a time (512).
	// Under a cgroup the kernel enforces it, counting tasks (threads
	// included); under the watchdog, processes.
	MaxProcs int
	// MaxMemory is the most memory, in bytes, one unit may use (0: no
	// limit). Only a cgroup enforces it; the kernel's OOM killer kills
	// within the unit when it is reached.
	MaxMemory int64
	// WatchInterval is how often the watchdog checks the units (100ms).
	WatchInterval time.Duration
	// MaxSessions bounds the shell sessions of the manager (32) and
	// MaxSessionsPerOwner those of one plugin and owner (8). When a bound
	// is reached the least recently used idle session is closed; if none
	// is idle, Exec fails with ErrBusy.
	MaxSessions         int
	MaxSessionsPerOwner int
	// IdleTimeout closes sessions unused for that long (30m).
	IdleTimeout time.Duration
	// KillGrace is how long a killed unit may take to report back before
	// the manager stops waiting (its pipes are closed, its shell
	// restarted) (2s).
	KillGrace time.Duration
	// BaseEnv is the environment every child starts from; nil means
	// SafeBaseEnv(os.Environ()).
	BaseEnv []string
	// Bash is the shell of sessions; empty means "bash" on the PATH of
	// BaseEnv.
	Bash string
	// TempDir holds the session directories; empty means $TMPDIR if
	// set, else /dev/shm on Linux when it is a writable tmpfs (the
	// sessions rewrite small files for every command: see memDir), else
	// os.TempDir().
	TempDir string
	// Isolation selects the containment (IsolationAuto).
	Isolation Isolation
	// Logger receives the one warning about weaker containment; nil
	// means slog.Default().
	Logger *slog.Logger
	// Sandbox, when set, runs every unit under bubblewrap (see Sandbox);
	// nil runs programs as the daemon's user with the host's filesystem.
	Sandbox *Sandbox

	noCgroup bool // tests: force the watchdog
}

func (c *Config) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DefaultTimeout, 30*time.Second)
	def(&c.MaxTimeout, 10*time.Minute)
	def(&c.WatchInterval, 100*time.Millisecond)
	def(&c.IdleTimeout, 30*time.Minute)
	def(&c.KillGrace, 2*time.Second)
	if c.DefaultMaxOutput <= 0 {
		c.DefaultMaxOutput = 1 << 20
	}
	if c.MaxOutputLimit <= 0 {
		c.MaxOutputLimit = 16 << 20
	}
	c.DefaultMaxOutput = min(c.DefaultMaxOutput, c.MaxOutputLimit)
	if c.MaxProcs <= 0 {
		c.MaxProcs = 512
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 32
	}
	if c.MaxSessionsPerOwner <= 0 {
		c.MaxSessionsPerOwner = 8
	}
	if c.BaseEnv == nil {
		c.BaseEnv = SafeBaseEnv(os.Environ())
	}
	if c.MaxMemory < 0 {
		c.MaxMemory = 0
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Containment describes how the manager contains its units.
type Containment struct {
	// Mode is "cgroup-v2" or "cgroup-v1" when the kernel enforces
	// MaxProcs (and MaxMemory) per unit, "watchdog" when a watchdog
	// counting processes in /proc has to do.
	Mode string `json:"mode"`
	// PIDNamespace is set when every unit is the init of its own PID
	// namespace.
	PIDNamespace bool `json:"pid_namespace"`
	// Reason says why the containment is weaker than a cgroup with
	// every configured limit, "" if it is not.
	Reason string `json:"reason,omitempty"`
}

// Containment modes.
const (
	ModeCgroupV2 = "cgroup-v2"
	ModeCgroupV1 = "cgroup-v1"
	ModeWatchdog = "watchdog"
)

// Manager runs processes and owns shell sessions. It is safe for
// concurrent use.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	units    map[*unit]struct{}
	sessions map[Key]*session
	closed   bool
	iso      isoMode  // containment, fixed once ready is closed
	cg       *cgroups // the units' cgroup parent, nil under the watchdog
	// ready is closed once iso, cg and contain are set: New probes the
	// namespaces and makes the cgroup parent in the background (a clone
	// and a few cgroupfs writes, 8-20 ms of a start), and whatever needs
	// them waits for it.
	ready   chan struct{}
	cgLeft  []*unitCgroup
	cgGone  bool // cg's parent was removed
	contain Containment
	sb      *sandboxState // with Config.Sandbox

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a Manager. Call Close to kill everything it started.
func New(cfg Config) *Manager {
	cfg.fill()
	if cfg.Sandbox != nil {
		sb := *cfg.Sandbox
		sb.fill()
		cfg.Sandbox = &sb
	}
	m := &Manager{
		cfg:      cfg,
		units:    map[*unit]struct{}{},
		sessions: map[Key]*session{},
		done:     make(chan struct{}),
		iso:      isoNone,
		sb:       &sandboxState{},
	}
	m.ready = make(chan struct{})
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		defer close(m.ready)
		if cfg.Isolation == IsolationAuto {
			m.iso = preferredIso()
		}
		m.setupCgroups()
	}()
	go m.watch()
	return m
}

// setupCgroups makes the units' cgroup parent or, failing that, settles
// for the watchdog and says so once.
func (m *Manager) setupCgroups() {
	m.contain = Containment{Mode: ModeWatchdog, PIDNamespace: m.iso != isoNone}
	if m.cfg.noCgroup {
		m.contain.Reason = "cgroups disabled"
		return
	}
	cg, memNote, err := newCgroups(m.cfg.MaxMemory)
	if err != nil {
		m.contain.Reason = err.Error()
		m.cfg.Logger.Warn("process limits: no cgroup for the units, falling back to a watchdog that polls /proc (a fork bomb can outrun it)",
			"max_procs", m.cfg.MaxProcs, "err", err)
		return
	}
	m.cg = cg
	m.contain.Mode = ModeCgroupV1
	if cg.isV2() {
		m.contain.Mode = ModeCgroupV2
	}
	if memNote != "" {
		m.contain.Reason = "memory limit not enforced: " + memNote
		m.cfg.Logger.Warn("process limits: the memory limit is not enforced", "max_memory", m.cfg.MaxMemory, "reason", memNote)
	}
	cg.cleanStale()
}

// Containment reports how units are contained, fixed at New.
func (m *Manager) Containment() Containment {
	<-m.ready
	return m.contain
}

// Config returns the effective configuration.
func (m *Manager) Config() Config { return m.cfg }

// Close kills every unit and session and waits for the manager's
// goroutines. It is idempotent; later calls to Spawn or Exec fail with
// ErrClosed.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		sessions := make([]*session, 0, len(m.sessions))
		for _, s := range m.sessions {
			sessions = append(sessions, s)
		}
		clear(m.sessions)
		units := make([]*unit, 0, len(m.units))
		for u := range m.units {
			units = append(units, u)
		}
		m.mu.Unlock()
		close(m.done)
		for _, u := range units {
			u.kill(reasonClosed)
		}
		for _, s := range sessions {
			s.close(m)
		}
		m.wg.Wait()
		if m.cg != nil {
			m.cg.stopSpawner()
		}
		m.releaseCgroups()
		m.sb.close()
	})
	return nil
}

// releaseCgroups retries the unit cgroups that could not be removed and,
// once the manager is closed and its last unit gone, removes the parent.
func (m *Manager) releaseCgroups() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cg == nil || m.cgGone {
		return
	}
	left := m.cgLeft[:0]
	for _, cg := range m.cgLeft {
		if !cg.remove() {
			left = append(left, cg)
		}
	}
	m.cgLeft = left
	if m.closed && len(m.units) == 0 && len(m.cgLeft) == 0 {
		m.cgGone = m.cg.close()
	}
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// watch is the watchdog and the idle-session janitor.
//
// A unit in a cgroup cannot exceed its limit (the kernel refuses the
// fork); the watchdog reads the cgroup's pids.events and kills the unit
// once a fork was refused, so that the caller learns "process_limit".
//
// Without a cgroup the watchdog is the limit, and a race against the
// unit's forks. Counting the processes of each unit means reading /proc, which is not
// free (milliseconds with a few hundred processes), so each tick reads only
// the system's task count and does the full count when it has grown by a
// sizable step since its low-water mark (a fork bomb does at once), or a
// second has passed.
func (m *Manager) watch() {
	defer m.wg.Done()
	<-m.ready
	t := time.NewTicker(m.cfg.WatchInterval)
	defer t.Stop()
	lastIdle := time.Now()
	var lastScan time.Time
	low := -1
	step := max(1, min(32, m.cfg.MaxProcs/4))
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		m.mu.Lock()
		var units, hit []*unit
		for u := range m.units {
			if u.cg == nil {
				units = append(units, u)
			} else if u.cg.limitHit() {
				hit = append(hit, u)
			}
		}
		left := len(m.cgLeft)
		m.mu.Unlock()
		// The kernel refused these units a fork: they are at their limit.
		for _, u := range hit {
			u.kill(reasonProcLimit)
		}
		if left > 0 {
			m.releaseCgroups()
		}
		total := procTotal()
		if low < 0 || total < low {
			low = total
		}
		if len(units) > 0 && (total < 0 || total >= low+step || time.Since(lastScan) >= time.Second) {
			lastScan, low = time.Now(), total
			for u, n := range countProcs(units) {
				if n > u.limit {
					u.kill(reasonProcLimit)
				}
			}
		}
		if time.Since(lastIdle) >= min(time.Second, m.cfg.IdleTimeout/4) {
			lastIdle = time.Now()
			m.expireIdle()
		}
	}
}

// unit is one contained process tree: a spawned program or a shell.
type unit struct {
	pid   int         // host pid of the leader / namespace init
	ns    string      // PID namespace link of the unit, "" without one
	cg    *unitCgroup // the unit's cgroup, nil under the watchdog
	limit int

	// exited is set once the leader has been reaped: its pid may then be
	// reused by an unrelated process, which killTree must not hit.
	exited atomic.Bool

	mu     sync.Mutex
	reason string        // why it was killed, "" if it was not
	killed chan struct{} // closed on the first kill
}

// Kill reasons, as reported to callers.
const (
	reasonTimeout   = "timeout"
	reasonCanceled  = "canceled"
	reasonProcLimit = "process_limit"
	reasonClosed    = "closed"
)

func newUnit(pid int, ns string, limit int) *unit {
	return &unit{pid: pid, ns: ns, limit: limit, killed: make(chan struct{})}
}

// kill kills the whole tree. The first reason sticks.
func (u *unit) kill(reason string) {
	u.mu.Lock()
	first := u.reason == ""
	if first {
		u.reason = reason
		close(u.killed)
	}
	u.mu.Unlock()
	killTree(u)
}

func (u *unit) killReason() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reason
}

func (m *Manager) addUnit(u *unit) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.units[u] = struct{}{}
	return true
}

// removeUnit forgets a unit whose leader has been reaped, killing what is
// left in its cgroup and removing the cgroup.
func (m *Manager) removeUnit(u *unit) {
	m.mu.Lock()
	delete(m.units, u)
	m.mu.Unlock()
	m.dropCgroup(u.cg)
}

func (m *Manager) dropCgroup(cg *unitCgroup) {
	if cg == nil {
		return
	}
	if !cg.remove() {
		m.mu.Lock()
		m.cgLeft = append(m.cgLeft, cg) // retried by the watchdog and Close
		m.mu.Unlock()
	}
	if m.isClosed() {
		m.releaseCgroups()
	}
}

// start starts cmd as a new unit, inside its cgroup when there is one.
func (m *Manager) start(cmd *exec.Cmd) (*unit, error) {
	<-m.ready
	cmd.SysProcAttr = sysProcAttr(m.iso)
	var cg *unitCgroup
	var err error
	if m.cg != nil {
		if cg, err = m.cg.startUnit(cmd, m.cfg.MaxProcs); cg == nil {
			return nil, err
		}
	} else {
		err = cmd.Start()
	}
	if err != nil {
		if cmd.Process != nil { // started, but stuck in the cgroup
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		m.dropCgroup(cg)
		return nil, err
	}
	u := newUnit(cmd.Process.Pid, unitNS(cmd.Process.Pid, m.iso), m.cfg.MaxProcs)
	u.cg = cg
	if !m.addUnit(u) {
		u.kill(reasonClosed)
		_ = cmd.Wait()
		m.dropCgroup(cg)
		return nil, errorf(ErrClosed, "process manager closed")
	}
	return u, nil
}

// clampTimeout applies the default and the maximum.
func (m *Manager) clampTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		d = m.cfg.DefaultTimeout
	}
	return min(d, m.cfg.MaxTimeout)
}

func (m *Manager) clampOutput(n int64) int64 {
	if n <= 0 {
		n = m.cfg.DefaultMaxOutput
	}
	return min(n, m.cfg.MaxOutputLimit)
}

func (m *Manager) tempDir() string {
	if m.cfg.TempDir != "" {
		return m.cfg.TempDir
	}
	return memDir()
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ctxDone returns a channel closed when ctx is done, or nil.
func ctxDone(ctx context.Context) <-chan struct{} {
	if ctx == nil {
		return nil
	}
	return ctx.Done()
}

func cleanAbs(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p), true
}
