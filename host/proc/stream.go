package proc

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kill reasons of a started program (Start) besides the common ones.
const (
	// ReasonOutputLimit: its stdout passed the request's MaxOutput.
	ReasonOutputLimit = "output_limit"
	// ReasonStopped: the caller stopped it (Running.Wait with kill).
	ReasonStopped = "stopped"
)

// streamHold is how much of a started program's stdout waits for its
// reader before the program blocks on its writes.
const streamHold = 1 << 20

// Running is a program started with Start. Its stdout is read piece by
// piece while it runs (Read): the program blocks on its writes while about
// 1 MiB waits unread, so a fast writer is paced by its reader. Wait ends
// it and reports how it ended. A Running ends with the context it was
// started with: when that is done the program is killed ("canceled") and
// its unread output discarded.
type Running struct {
	m        *Manager
	u        *unit
	cmd      *exec.Cmd
	began    time.Time
	maxOut   int64
	abandon  chan struct{} // closed when nobody will read the rest
	abandonO sync.Once
	done     chan struct{} // closed once the program and its readers ended

	// the unread stdout, one queue of bytes whatever the pieces the
	// program wrote (a program that writes a line at a time makes a
	// read per line: they are not handed on one by one)
	qmu   sync.Mutex
	q     []byte
	qeof  bool          // stdout ended: q is the rest
	ready chan struct{} // a token when q grew or stdout ended
	space chan struct{} // a token when q was taken

	mu sync.Mutex // one Read at a time

	// set by the stdout reader before done
	outBytes  int64
	truncated bool
	stderr    *capBuffer
	res       *SpawnResult
}

// Start starts one program whose stdout the caller reads while it runs
// (Running.Read) and which it ends with Running.Wait. req is checked as
// Spawn checks it; MaxOutput bounds the whole of stdout, and a program
// that writes more is killed (ReasonOutputLimit) after the first
// MaxOutput bytes, which stay readable. Stderr is kept up to MaxOutput
// (the rest discarded), as Spawn keeps it. OnOutput is not used.
func (m *Manager) Start(ctx context.Context, req SpawnRequest) (*Running, error) {
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
		closeAll(outR, outW)
		return nil, err
	}
	var inR, inW *os.File
	if req.Stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, err
		}
	}
	cmd := &exec.Cmd{Path: req.Path, Args: req.Args, Env: req.Env, Dir: req.Dir, Stdout: outW, Stderr: errW}
	if inR != nil {
		cmd.Stdin = inR
	}
	if m.cfg.Sandbox != nil {
		if err = m.sandboxCmd(cmd, req.Owner, nil); err != nil {
			closeAll(outR, outW, errR, errW, inR, inW)
			return nil, err
		}
	}
	began := time.Now()
	u, err := m.start(cmd)
	closeAll(outW, errW, inR)
	if err != nil {
		closeAll(outR, errR, inW)
		return nil, startError(req.Path, err)
	}
	r := &Running{m: m, u: u, cmd: cmd, began: began, maxOut: maxOut, ready: make(chan struct{}, 1), space: make(chan struct{}, 1),
		abandon: make(chan struct{}), done: make(chan struct{}), stderr: &capBuffer{max: maxOut}}

	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); r.readStdout(outR) }()
	go func() { defer readers.Done(); r.stderr.readFrom(errR) }()
	if inW != nil {
		readers.Add(1)
		go func() {
			defer readers.Done()
			_, _ = inW.Write(req.Stdin) // EPIPE if the program stops reading
			inW.Close()
		}()
	}
	waitDone := make(chan struct{})
	go func() { _ = cmd.Wait(); u.exited.Store(true); close(waitDone) }()
	go func() {
		// whoever started it is gone: nobody will read the rest
		select {
		case <-ctxDone(ctx):
			r.stopReading()
		case <-r.done:
		}
	}()
	go func() {
		// Wait returns once the program was reaped, its cgroup found empty
		// (killTree) and its pipes drained; the empty cgroup's directories
		// are removed after (~50 µs of cgroupfs on every call's path
		// before; one that fails is left to the watchdog, as before)
		defer m.removeUnit(u)
		defer close(r.done)
		m.await(ctx, u, timeout, waitDone, &readers, outR, errR, inW)
		res := &SpawnResult{
			ExitCode:        cmd.ProcessState.ExitCode(),
			Killed:          u.killReason(),
			Duration:        time.Since(began),
			Stderr:          r.stderr.buf,
			StdoutTruncated: r.truncated,
			StderrTruncated: r.stderr.truncated,
			StdoutBytes:     r.outBytes,
		}
		res.TimedOut = res.Killed == reasonTimeout
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = SignalName(ws.Signal())
		}
		r.res = res
	}()
	return r, nil
}

// readStdout reads the program's stdout into the queue for Read, counting
// it: past maxOut the program is killed and the rest discarded. When
// nobody will read (stopReading) it is discarded instead of waiting.
func (r *Running) readStdout(f *os.File) {
	defer func() {
		r.qmu.Lock()
		r.qeof = true
		r.qmu.Unlock()
		signal(r.ready)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			b := buf[:n]
			if room := r.maxOut - r.outBytes; int64(n) > room {
				b = b[:max(room, 0)]
				if !r.truncated {
					r.truncated = true
					r.u.kill(ReasonOutputLimit)
				}
			}
			r.outBytes += int64(len(b))
			if len(b) > 0 && r.queue(b) {
				signal(r.ready)
			}
		}
		if err != nil {
			return
		}
	}
}

// queue appends b to the unread stdout once there is room for it; false
// if nobody will read it (it is discarded).
func (r *Running) queue(b []byte) bool {
	r.qmu.Lock()
	for len(r.q) >= streamHold {
		r.qmu.Unlock()
		select {
		case <-r.space:
		case <-r.abandon:
			return false
		}
		r.qmu.Lock()
	}
	select {
	case <-r.abandon:
		r.qmu.Unlock()
		return false
	default:
	}
	if cap(r.q)-len(r.q) < len(b) {
		// a buffer of its own for what comes next (the pieces handed
		// out keep the old one)
		nq := make([]byte, len(r.q), max(64<<10, 2*len(r.q)+len(b)))
		copy(nq, r.q)
		r.q = nq
	}
	r.q = append(r.q, b...)
	r.qmu.Unlock()
	return true
}

// signal leaves a token on ch (cap 1) unless one is there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// stopReading discards the rest of stdout: the reader no longer waits for
// room.
func (r *Running) stopReading() { r.abandonO.Do(func() { close(r.abandon) }) }

// Read returns the next piece of stdout, at most max bytes (0: 1 MiB),
// waiting up to wait for one when none is there yet. It returns eof once
// stdout has ended and everything was read; no data and no eof means
// nothing arrived within wait (or ctx ended). Pieces are not aligned to
// lines or characters. The piece is the caller's (never written again).
func (r *Running) Read(ctx context.Context, max int, wait time.Duration) (data []byte, eof bool) {
	if max <= 0 {
		max = 1 << 20
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	take := func() (data []byte, eof bool) {
		r.qmu.Lock()
		defer r.qmu.Unlock()
		n := min(len(r.q), max)
		if n > 0 {
			// handed over as it is: the reader appends past it
			data = r.q[:n:n]
			r.q = r.q[n:]
			signal(r.space)
		}
		return data, r.qeof && len(r.q) == 0
	}
	if data, eof = take(); len(data) > 0 || eof {
		return data, eof
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-r.ready:
			if data, eof = take(); len(data) > 0 || eof {
				return data, eof
			}
		case <-timer.C:
			return nil, false
		case <-ctxDone(ctx):
			return nil, false
		}
	}
}

// Wait ends the program and reports how it ended: with kill it is killed
// first (ReasonStopped), otherwise Wait waits for it to exit (bounded by
// its timeout). Unread stdout is discarded. The result's Stdout is nil;
// StdoutBytes counts what the program wrote (up to MaxOutput).
func (r *Running) Wait(kill bool) *SpawnResult {
	if kill && !r.u.exited.Load() {
		r.u.kill(ReasonStopped)
	}
	r.stopReading()
	<-r.done
	return r.res
}

// ClearBaseEnv is the environment a program started with a clear
// environment begins from: PATH (DefaultPath, not the host's) and, under
// a sandbox, the variables the sandbox sets (HOME, TMPDIR, USER, LOGNAME,
// SHELL: the sandbox's values, not the host's). Nothing of the host's own
// environment is in it.
func (m *Manager) ClearBaseEnv() []string {
	if m.cfg.Sandbox == nil {
		return []string{"PATH=" + DefaultPath}
	}
	var out []string
	for _, kv := range m.cfg.BaseEnv {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL":
			out = append(out, kv)
		}
	}
	return out
}
