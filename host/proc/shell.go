package proc

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Shell statuses, as in the aiod / OpenHands BashCommandStatus enum.
const (
	StatusCompleted   = "completed"    // the command ran to its end; ExitCode is set
	StatusHardTimeout = "hard_timeout" // the timeout (or cancellation) killed it
	StatusTerminated  = "terminated"   // the session's shell died; it restarts on the next call
	// StatusRunning and StatusNoChangeTimeout belong to the enum but are
	// not produced: a command never outlives its Exec call.
	StatusRunning         = "running"
	StatusNoChangeTimeout = "no_change_timeout"
)

// Key identifies a shell session: sessions of different plugins or owners
// never mix, whatever session name they use.
type Key struct {
	Plugin  string
	Owner   string
	Session string
}

// ExecOptions are the optional parts of an Exec.
type ExecOptions struct {
	// MaxOutput caps the combined output (Config default and maximum
	// apply). Output beyond it is read and discarded.
	MaxOutput int64
	// StartDir is where a new shell starts when no cwd is given and the
	// session has no directory of its own yet.
	StartDir string
	// OnOutput, if set, sees the command's output as it is read, beyond
	// MaxOutput too; it must not block or keep p.
	OnOutput func(p []byte)
}

// ExecResult is the outcome of one command in a session.
type ExecResult struct {
	Status string
	// Output is stdout and stderr of the command, interleaved in the
	// order written.
	Output    []byte
	Truncated bool
	// ExitCode is set when Status is "completed" (128+n when the
	// command died of signal n).
	ExitCode *int
	// Cwd is the session's directory after the command (symlinks
	// resolved).
	Cwd      string
	Duration time.Duration
	// Restarted is set when the session's shell had died (exit of the
	// shell itself, watchdog, timeout cleanup) and was started again for
	// this call. Variables, functions, aliases, options and directory are
	// restored from the last command that completed; background jobs of
	// the old shell are gone.
	Restarted bool
	// Reason says why a command did not complete: "timeout", "canceled",
	// "process_limit", "exited" (the shell process ended) or "closed".
	Reason string
}

//go:embed prelude.bash
var prelude []byte

// MaxCommandBytes bounds one shell command.
const MaxCommandBytes = 1 << 20

// maxMarkerBody bounds a marker after its token (the cwd is in it).
const maxMarkerBody = 64 << 10

// headerBytes is the size of a command's header on the shell's stdin, as
// prelude.bash reads it (read -N 56).
const headerBytes = 56

// Exec runs one bash command in the session key, creating it on first use,
// and waits for it up to timeout (Config default and maximum apply). Calls
// on one session are serialized; waiting for the session counts against
// ctx but not against timeout.
//
// A non-empty cwd (already checked with CheckCwd) becomes the session's
// directory before the command runs. `cd`, `export`, variables, functions,
// aliases and `set`/`shopt` options persist from one command to the next.
// The command runs in a subshell of the session's shell, so `exit n` or
// `exec prog` end the command (exit code n, or that of prog), not the
// session. The command's stdin is /dev/null.
//
// On timeout the command's process group is killed and Status is
// "hard_timeout"; processes it moved to another group keep running in the
// session until the session is closed. If the shell itself dies (watchdog,
// Close) Status is "terminated" and the next call starts a new shell.
func (m *Manager) Exec(ctx context.Context, key Key, command, cwd string, timeout time.Duration, opt ExecOptions) (*ExecResult, error) {
	switch {
	case key.Session == "" || len(key.Session) > 256 || strings.ContainsRune(key.Session, 0):
		return nil, errorf(ErrInvalid, "bad session id %q", key.Session)
	case strings.ContainsRune(command, 0):
		return nil, errorf(ErrInvalid, "command must not contain NUL bytes")
	case len(command) > MaxCommandBytes:
		return nil, errorf(ErrTooLarge, "command is %d bytes, max %d", len(command), MaxCommandBytes)
	case strings.ContainsRune(cwd, 0) || strings.ContainsRune(opt.StartDir, 0):
		return nil, errorf(ErrInvalid, "bad cwd %q", cwd)
	}
	for {
		s, err := m.session(key)
		if err != nil {
			return nil, err
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctxDone(ctx):
			return nil, errorf(ErrBusy, "gave up waiting for session %q: %v", key.Session, ctx.Err())
		case <-m.done:
			return nil, errorf(ErrClosed, "process manager closed")
		}
		if s.closed.Load() {
			<-s.sem // evicted while we waited: take a fresh one
			continue
		}
		res, err := m.execLocked(ctx, s, command, cwd, m.clampTimeout(timeout), m.clampOutput(opt.MaxOutput), opt.StartDir, opt.OnOutput)
		s.touch()
		<-s.sem
		return res, err
	}
}

func (m *Manager) execLocked(ctx context.Context, s *session, command, cwd string, timeout time.Duration, maxOut int64, startDir string, onOutput func([]byte)) (*ExecResult, error) {
	restarted := false
	if s.sh != nil && (s.sh.isDead() || s.sh.u.killReason() != "") {
		// Dead, or killed (by the watchdog, between two calls) and about
		// to be: a new shell runs the command.
		s.sh.stop(m)
		s.setShell(nil)
	}
	if s.sh == nil {
		restarted = s.started
		sh, err := m.startShell(s, cwd, startDir)
		if err != nil {
			return nil, err
		}
		s.setShell(sh)
		s.started = true
	}
	sh := s.sh
	s.seq++
	seq := s.seq
	tok := randomToken()
	if err := writePrivate(filepath.Join(s.dir, "cmd"), []byte(command)); err != nil {
		return nil, fmt.Errorf("write command: %w", err)
	}
	flag := "-"
	if cwd != "" {
		if err := writePrivate(filepath.Join(s.dir, "cwd"), []byte(cwd)); err != nil {
			return nil, fmt.Errorf("write cwd: %w", err)
		}
		flag = "c"
	}
	seqs := fmt.Sprintf("%020d", seq)
	col := &collector{mark: []byte("\x00" + tok + ":"), pmark: sh.pmark, seq: seqs, max: maxOut, done: make(chan struct{}), onOutput: onOutput}
	sh.setCollector(col)
	defer sh.setCollector(nil)
	// The job waiting in the shell reads this fixed-size header in one
	// read(2) (prelude.bash: bash reads a line from a pipe a byte at a
	// time).
	line := tok + " " + seqs + " " + flag + "\n"
	if len(line) != headerBytes {
		return nil, fmt.Errorf("shell header is %d bytes, want %d", len(line), headerBytes)
	}

	start := time.Now()
	res := &ExecResult{Restarted: restarted}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if _, err := sh.stdin.Write([]byte(line)); err != nil {
		// The shell is gone; report it like a death during the command.
		<-sh.deadOrAfter(m.cfg.KillGrace)
	}
	select {
	case <-col.done:
		res.Status = StatusCompleted
	case <-sh.dead:
		res.Status = StatusTerminated
	case <-timer.C:
		res.Status, res.Reason = StatusHardTimeout, reasonTimeout
	case <-ctxDone(ctx):
		res.Status, res.Reason = StatusHardTimeout, reasonCanceled
	case <-m.done:
		res.Status, res.Reason = StatusTerminated, reasonClosed
	}
	if res.Status == StatusHardTimeout {
		// Kill the command's process group; the shell then reaps it and
		// reports. If it does not, or the job never started, the shell
		// goes too.
		pid := col.jobPid()
		if pid > 0 && (m.cfg.Sandbox != nil || sh.u.ns != "") {
			pid = hostPID(sh.u, pid) // the job printed its pid in the unit's namespace
		}
		if pid > 0 {
			killGroup(pid)
			select {
			case <-col.done:
			case <-sh.dead:
			case <-time.After(m.cfg.KillGrace):
				sh.u.kill(res.Reason)
			}
		} else {
			sh.u.kill(res.Reason)
		}
	}
	if res.Status == StatusTerminated || sh.isDead() {
		<-sh.deadOrAfter(m.cfg.KillGrace)
		if res.Reason == "" {
			res.Reason = sh.u.killReason()
			if res.Reason == "" {
				res.Reason = "exited"
			}
		}
		sh.stop(m)
		s.setShell(nil)
	}
	sh.setCollector(nil)
	col.mu.Lock()
	res.Output = col.out
	res.Truncated = col.truncated
	if col.ended {
		s.cwd = col.cwd
		if res.Status == StatusCompleted {
			rc := col.rc
			res.ExitCode = &rc
		}
	}
	col.mu.Unlock()
	res.Cwd = s.cwd
	res.Duration = time.Since(start)
	return res, nil
}

// startShell starts the session's shell in cwd, else in the session's
// last directory, else in startDir.
func (m *Manager) startShell(s *session, cwd, startDir string) (*shell, error) {
	bash := m.cfg.Bash
	if bash == "" {
		p, err := lookIn("bash", envGet(m.cfg.BaseEnv, "PATH"))
		if err != nil {
			return nil, errorf(ErrNotFound, "shell sessions need bash: %v", err)
		}
		bash = p
	}
	if s.dir == "" {
		d, err := os.MkdirTemp(m.tempDir(), "aiod-shell-")
		if err != nil {
			return nil, fmt.Errorf("session directory: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "bash"), prelude, 0o600); err != nil {
			_ = os.RemoveAll(d)
			return nil, fmt.Errorf("session directory: %w", err)
		}
		s.dir = d
	}
	dir := "/"
	if m.cfg.Sandbox != nil {
		dir = ""
	}
	for _, d := range []string{cwd, s.cwd, startDir} {
		host := d
		if m.cfg.Sandbox != nil && d != "" {
			host = m.sandboxHostDir(s.key.Owner, d)
		}
		if fi, err := os.Stat(host); host != "" && err == nil && fi.IsDir() {
			dir = d
			break
		}
	}
	// The gates (prelude.bash) are made anew for every shell: a command
	// may have replaced them.
	for _, g := range []string{"gate.0", "gate.1"} {
		gate := filepath.Join(s.dir, g)
		if err := os.RemoveAll(gate); err != nil {
			return nil, fmt.Errorf("session gate: %w", err)
		}
		if err := mkfifo(gate); err != nil {
			return nil, fmt.Errorf("session gate: %w", err)
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: bash, Args: []string{"bash", "--noprofile", "--norc"},
		Env: m.cfg.BaseEnv, Dir: dir,
		Stdin: inR, Stdout: outW, Stderr: outW,
	}
	sdir := s.dir // the session directory as the shell sees it
	if m.cfg.Sandbox != nil {
		sdir = sessionMount
		if err = m.sandboxCmd(cmd, s.key.Owner, []bind{{host: s.dir, path: sessionMount}}); err != nil {
			closeAll(inR, inW, outR, outW)
			return nil, err
		}
	}
	u, err := m.start(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, startError(bash, err)
	}
	ptok := randomToken()
	sh := &shell{cmd: cmd, u: u, stdin: inW, out: outR, pmark: []byte("\x00" + ptok + ":"), dead: make(chan struct{}), readDone: make(chan struct{})}
	go sh.readLoop()
	go func() {
		_ = cmd.Wait()
		u.exited.Store(true)
		close(sh.dead)
	}()
	// Source the prelude as "bash" (see its first line), then loop: each
	// round forks the job that waits for the next command. The loop runs
	// in the parent, which holds the user's functions, so it calls only
	// builtins, keywords and __aiod_ functions: hence `while builtin :`,
	// since a command may define a function named ":" (a fork bomb does)
	// and a bare `:` would call it on every round.
	boot := "__aiod_d=" + shQuote(sdir) + "; __aiod_p=" + ptok + "; __aiod_start=$PWD; builtin shopt -u sourcepath; builtin cd -- \"$__aiod_d\" && builtin source bash; [[ -n $__aiod_L ]] || builtin exit 1; " +
		"__aiod_run 1 2>&1 & __aiod_j=$!; builtin printf g >&\"${__aiod_g[1]}\"; " +
		"while builtin :; do __aiod_run \"$((__aiod_k + 1))\" 2>&1 & __aiod_sj=$!; builtin wait \"$__aiod_j\" 2>/dev/null; __aiod_rc=$?; builtin eval \"$__aiod_L\"; " +
		"if [[ -n $__aiod_re ]]; then builtin kill -KILL \"$__aiod_sj\" 2>/dev/null; builtin wait \"$__aiod_sj\" 2>/dev/null; __aiod_run \"$((__aiod_k + 1))\" 2>&1 & __aiod_sj=$!; fi; " +
		"[[ -z $__aiod_go ]] || builtin printf g >&\"${__aiod_g[(__aiod_k + 1) % 2]}\"; __aiod_j=$__aiod_sj; ((++__aiod_k)); done\n"
	if _, err := inW.Write([]byte(boot)); err != nil {
		sh.stop(m)
		return nil, fmt.Errorf("start shell: %w", err)
	}
	if s.cwd == "" {
		s.cwd = dir
	}
	return sh, nil
}

// shell is one bash process of a session.
type shell struct {
	cmd      *exec.Cmd
	u        *unit
	stdin    *os.File
	out      *os.File
	pmark    []byte        // NUL ptok ":": the parent's end marker
	dead     chan struct{} // closed when the process has exited
	readDone chan struct{}
	stopOnce sync.Once

	mu  sync.Mutex
	col *collector
}

func (sh *shell) isDead() bool {
	select {
	case <-sh.dead:
		return true
	default:
		return false
	}
}

// deadOrAfter is closed when the shell dies or after d.
func (sh *shell) deadOrAfter(d time.Duration) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-sh.dead:
		case <-t.C:
		}
		close(c)
	}()
	return c
}

func (sh *shell) setCollector(c *collector) {
	sh.mu.Lock()
	sh.col = c
	sh.mu.Unlock()
}

// stop kills the shell's unit and releases its pipes.
func (sh *shell) stop(m *Manager) {
	sh.stopOnce.Do(func() {
		sh.u.kill(reasonClosed)
		<-sh.dead // SIGKILLed: the wait returns promptly
		m.removeUnit(sh.u)
		sh.stdin.Close()
		sh.out.Close()
		<-sh.readDone
	})
}

// readLoop reads the shell's output pipe for its whole life, handing the
// bytes to the current collector or discarding them between commands.
func (sh *shell) readLoop() {
	defer close(sh.readDone)
	var buf [32 << 10]byte
	var pend []byte
	var cur *collector
	for {
		n, err := sh.out.Read(buf[:])
		if n > 0 {
			sh.mu.Lock()
			c := sh.col
			sh.mu.Unlock()
			if c != cur {
				pend, cur = pend[:0], c
			}
			if c != nil {
				pend = c.feed(append(pend, buf[:n]...))
			}
		}
		if err != nil {
			return
		}
	}
}
