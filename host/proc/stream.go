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

// streamChunks is how many pieces of stdout (each at most 32 KiB) wait for
// the reader of a started program before the program blocks on its
// writes: about 1 MiB held per program, whatever it prints.
const streamChunks = 32

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
	chunks   chan []byte   // stdout pieces, closed at the end of stdout
	abandon  chan struct{} // closed when nobody will read the rest
	abandonO sync.Once
	done     chan struct{} // closed once the program and its readers ended

	// read by Read only (one reader at a time: mu)
	mu   sync.Mutex
	left []byte // the unread rest of the last piece
	eof  bool

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
	r := &Running{m: m, u: u, cmd: cmd, began: began, maxOut: maxOut, chunks: make(chan []byte, streamChunks),
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
		defer close(r.done)
		defer m.removeUnit(u)
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

// readStdout reads the program's stdout into pieces for Read, counting
// it: past maxOut the program is killed and the rest discarded. When
// nobody will read (stopReading) pieces are discarded instead of waiting.
func (r *Running) readStdout(f *os.File) {
	defer close(r.chunks)
	for {
		b := make([]byte, 32<<10)
		n, err := f.Read(b)
		if n > 0 {
			b = b[:n]
			if room := r.maxOut - r.outBytes; int64(n) > room {
				b = b[:max(room, 0)]
				if !r.truncated {
					r.truncated = true
					r.u.kill(ReasonOutputLimit)
				}
			}
			r.outBytes += int64(len(b))
			if len(b) > 0 {
				select {
				case r.chunks <- b:
				case <-r.abandon:
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// stopReading discards the rest of stdout: the reader no longer waits for
// room.
func (r *Running) stopReading() { r.abandonO.Do(func() { close(r.abandon) }) }

// Read returns the next piece of stdout, at most max bytes (0: 1 MiB),
// waiting up to wait for one when none is there yet. It returns eof once
// stdout has ended and everything was read; no data and no eof means
// nothing arrived within wait (or ctx ended). Pieces are not aligned to
// lines or characters.
func (r *Running) Read(ctx context.Context, max int, wait time.Duration) (data []byte, eof bool) {
	if max <= 0 {
		max = 1 << 20
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	take := func(b []byte) {
		n := min(len(b), max-len(data))
		data = append(data, b[:n]...)
		r.left = b[n:]
	}
	if len(r.left) > 0 {
		take(r.left)
	}
	// what is there already, without waiting
	for more := true; more && len(data) < max && len(r.left) == 0 && !r.eof; {
		select {
		case b, ok := <-r.chunks:
			if ok {
				take(b)
			} else {
				r.eof = true
			}
		default:
			more = false
		}
	}
	if len(data) > 0 || r.eof {
		return data, r.eof && len(r.left) == 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case b, ok := <-r.chunks:
		if !ok {
			r.eof = true
			return nil, true
		}
		take(b)
	case <-timer.C:
	case <-ctxDone(ctx):
	}
	return data, false
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
