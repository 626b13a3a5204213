package proc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits on a spawn request.
const (
	MaxArgvEnvBytes = 1 << 20  // argv and env together
	MaxStdinBytes   = 64 << 20 // stdin
)

// SpawnRequest is one program to run to completion. The caller has already
// checked Path against the grant (ResolveProgram) and Dir (CheckCwd).
type SpawnRequest struct {
	Path  string   // program to execute
	Args  []string // argv, Args[0] included
	Env   []string // complete environment, KEY=VALUE
	Dir   string   // working directory
	Stdin []byte   // nil: /dev/null
	// Timeout is the wall-clock limit (Config default and maximum apply).
	Timeout time.Duration
	// MaxOutput caps stdout and stderr each (Config default and maximum
	// apply). Output beyond it is read and discarded.
	MaxOutput int64
	// OnOutput, if set, sees stdout and stderr as they are read (from two
	// goroutines), beyond MaxOutput too; it must not block or keep p.
	OnOutput func(p []byte)
	// Owner is whose sandbox the program runs in (Config.Sandbox); Dir
	// is then a path inside it.
	Owner string
	// ExtraFiles are inherited by the program as descriptors 3, 4, ...
	// (inside the sandbox too). Spawn does not close them: the caller
	// closes its copies once Spawn has started the program (OnStart).
	ExtraFiles []*os.File
	// OnStart, if set, is called once the program has started (not when
	// it could not be).
	OnStart func()
	// ReadOnly are host files or directories shown read-only at the same
	// place in the sandbox for this program only, besides the Manager's
	// (Sandbox.ReadOnly): the program itself when it lives outside the
	// machine's directories (an operator's hook script). Ignored without
	// a sandbox; each must be absolute.
	ReadOnly []string
}

// SpawnResult is the outcome of a spawn.
type SpawnResult struct {
	// ExitCode is the exit status, -1 if the program was killed by a
	// signal (Signal names it).
	ExitCode int
	Signal   string
	// Killed says why aiod killed the program: "timeout", "canceled",
	// "process_limit", "closed", or "" if it was not killed.
	Killed   string
	TimedOut bool
	Duration time.Duration
	Stdout   []byte
	Stderr   []byte
	// StdoutTruncated and StderrTruncated report output dropped beyond
	// the cap.
	StdoutTruncated bool
	StderrTruncated bool
	// StdoutBytes is how much of stdout a started program (Start) wrote,
	// up to its cap; Stdout is nil then, its pieces having gone to Read.
	StdoutBytes int64
}

// Spawn runs one program to completion. The program is the first process
// of a new unit (see the package doc); when it exits, whatever it left
// running in its unit is killed, so a spawn never leaves processes behind.
// On timeout, cancellation of ctx, the watchdog or Close the whole unit is
// killed. Pipes still held by an escaped process are closed after
// Config.KillGrace, so the call always returns.
func (m *Manager) Spawn(ctx context.Context, req SpawnRequest) (*SpawnResult, error) {
	if err := m.checkSpawn(&req); err != nil {
		return nil, err
	}
	timeout := m.clampTimeout(req.Timeout)
	maxOut := m.clampOutput(req.MaxOutput)

	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	var inR, inW *os.File
	if req.Stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, err
		}
	}
	cmd := &exec.Cmd{Path: req.Path, Args: req.Args, Env: req.Env, Dir: req.Dir, Stdout: outW, Stderr: errW, ExtraFiles: req.ExtraFiles}
	if inR != nil {
		cmd.Stdin = inR
	}
	if m.cfg.Sandbox != nil {
		var ro []bind
		for _, p := range req.ReadOnly {
			c, ok := cleanAbs(p)
			if !ok {
				closeAll(outR, outW, errR, errW, inR, inW)
				return nil, errorf(ErrInvalid, "read-only path %q is not absolute", p)
			}
			ro = append(ro, bind{host: c, path: c, ro: true})
		}
		if err = m.sandboxCmd(cmd, req.Owner, ro); err != nil {
			closeAll(outR, outW, errR, errW, inR, inW)
			return nil, err
		}
	}
	start := time.Now()
	u, err := m.start(cmd)
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		return nil, startError(req.Path, err)
	}
	defer m.removeUnit(u)
	if req.OnStart != nil {
		req.OnStart()
	}

	var wg sync.WaitGroup
	stdout := &capBuffer{max: maxOut, onOutput: req.OnOutput}
	stderr := &capBuffer{max: maxOut, onOutput: req.OnOutput}
	wg.Add(2)
	go func() { defer wg.Done(); stdout.readFrom(outR) }()
	go func() { defer wg.Done(); stderr.readFrom(errR) }()
	if inW != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = inW.Write(req.Stdin) // EPIPE if the program stops reading
			inW.Close()
		}()
	}

	waitDone := make(chan struct{})
	go func() { _ = cmd.Wait(); u.exited.Store(true); close(waitDone) }()
	m.await(ctx, u, timeout, waitDone, &wg, outR, errR, inW)

	res := &SpawnResult{
		ExitCode:        cmd.ProcessState.ExitCode(),
		Killed:          u.killReason(),
		Duration:        time.Since(start),
		Stdout:          stdout.buf,
		Stderr:          stderr.buf,
		StdoutTruncated: stdout.truncated,
		StderrTruncated: stderr.truncated,
	}
	res.TimedOut = res.Killed == reasonTimeout
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = SignalName(ws.Signal())
	}
	return res, nil
}

// checkSpawn checks a spawn request before anything runs (Spawn, Start):
// the manager is open, argv and env have no NUL and fit, stdin fits, and
// the working directory exists. An empty Args becomes [Path].
func (m *Manager) checkSpawn(req *SpawnRequest) error {
	if m.isClosed() {
		return errorf(ErrClosed, "process manager closed")
	}
	if len(req.Args) == 0 {
		req.Args = []string{req.Path}
	}
	size := 0
	for _, s := range append(req.Args, req.Env...) {
		if strings.ContainsRune(s, 0) {
			return errorf(ErrInvalid, "argv and env must not contain NUL bytes")
		}
		size += len(s) + 1
	}
	if size > MaxArgvEnvBytes {
		return errorf(ErrTooLarge, "argv and env are %d bytes, max %d", size, MaxArgvEnvBytes)
	}
	if len(req.Stdin) > MaxStdinBytes {
		return errorf(ErrTooLarge, "stdin is %d bytes, max %d", len(req.Stdin), MaxStdinBytes)
	}
	if req.Dir != "" {
		host := req.Dir
		if m.cfg.Sandbox != nil {
			host = m.sandboxHostDir(req.Owner, req.Dir)
		}
		if fi, err := os.Stat(host); host == "" || err != nil || !fi.IsDir() {
			return errorf(ErrNotFound, "cwd %s does not exist or is not a directory", req.Dir)
		}
	}
	return nil
}

// await waits for a started program to end, killing its unit at its
// timeout, with its context, or when the Manager closes (or finds it
// killed already: the watchdog, an output bound, Close); then kills what
// it left behind and gives its pipes' readers (readers) KillGrace to
// drain before closing the pipes under any escapee.
func (m *Manager) await(ctx context.Context, u *unit, timeout time.Duration, waitDone <-chan struct{}, readers *sync.WaitGroup, outR, errR, inW *os.File) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-waitDone:
	case <-timer.C:
		u.kill(reasonTimeout)
	case <-ctxDone(ctx):
		u.kill(reasonCanceled)
	case <-u.killed:
	case <-m.done:
		u.kill(reasonClosed)
	}
	<-waitDone
	killTree(u)
	grace := time.Now().Add(m.cfg.KillGrace)
	_ = outR.SetReadDeadline(grace)
	_ = errR.SetReadDeadline(grace)
	if inW != nil {
		_ = inW.SetWriteDeadline(time.Now())
	}
	readers.Wait()
	closeAll(outR, errR)
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

func startError(path string, err error) error {
	switch {
	case errors.Is(err, ErrClosed):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return errorf(ErrNotFound, "program %s not found", path)
	case errors.Is(err, fs.ErrPermission):
		return errorf(ErrDenied, "cannot execute %s: %v", path, err)
	}
	return err
}

// capBuffer keeps the first max bytes written and counts the rest.
type capBuffer struct {
	max       int64
	buf       []byte
	truncated bool
	onOutput  func([]byte)
}

// readFrom drains f into c until EOF, an error or the read deadline, with
// one fixed buffer (memory stays bounded by max, whatever the volume).
func (c *capBuffer) readFrom(f *os.File) {
	var b [32 << 10]byte
	for {
		n, err := f.Read(b[:])
		if n > 0 {
			c.add(b[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *capBuffer) add(p []byte) {
	if c.onOutput != nil {
		c.onOutput(p)
	}
	room := c.max - int64(len(c.buf))
	if int64(len(p)) > room {
		c.truncated = true
		if room <= 0 {
			return
		}
		p = p[:room]
	}
	c.buf = append(c.buf, p...)
}

// SignalName names a signal like "SIGKILL".
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "SIG" + strings.ToUpper(strings.ReplaceAll(s.String(), " ", "_"))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGCHLD: "SIGCHLD", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGTTIN: "SIGTTIN", syscall.SIGTTOU: "SIGTTOU",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}
