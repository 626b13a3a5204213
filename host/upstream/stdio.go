package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host/internal/pathx"
	"github.com/aiodhq/aiod/host/proc"
)

// Command (stdio) servers: aiod starts the command in the process sandbox
// (proc.Jail) and speaks to it through the go-sdk's CommandTransport. The
// command gets its own directory at /workspace (<StdioDir>/<name>/workspace)
// and its own /tmp, no network unless the policy names hosts, only the
// environment variables the policy names (plus PATH, HOME=/workspace and
// TMPDIR=/tmp), and its stderr goes nowhere (servers print secrets there).
// When it exits it is started again after a backoff (1 s, doubling up to 32
// times that, back to 1 s once it has run for a minute); it is stopped (stdin
// closed, then SIGTERM, then SIGKILL) when the set closes, and bubblewrap
// kills all it started with it, also when aiod itself dies.

const (
	defaultRestartBackoff = time.Second
	maxBackoffFactor      = 32
	// stableRun is how long a command must run for its next exit to be
	// taken as a first one again.
	stableRun = time.Minute
	// terminateAfter is how long a closing command has, stdin closed,
	// before it is signalled.
	terminateAfter = 2 * time.Second
)

// stdioState is what an upstream keeps of its command.
type stdioState struct {
	mu        sync.Mutex
	jail      *proc.Jail
	deaths    int       // consecutive early exits (or failed starts)
	nextStart time.Time // no start before this
	started   time.Time // when the running command started
	timer     *time.Timer
	starts    int  // commands started (the tests read it)
	running   bool // a command started and not yet seen to end
}

// stdioTransport makes the transport that starts srv's command, checked
// against its pin.
func (u *upstream) stdioTransport() (mcp.Transport, error) {
	st := u.stdio
	sc := u.srv.Stdio
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running {
		// the last one is ending (its session broke): its end sets the
		// backoff, and a restart follows it
		return nil, errors.New("its command exited; it is started again after a backoff")
	}
	if wait := time.Until(st.nextStart); wait > 0 {
		return nil, fmt.Errorf("its command exited; it is started again in %s", wait.Round(time.Millisecond))
	}
	path, err := proc.LookPath(sc.Command)
	if err != nil {
		return nil, u.startFailed(fmt.Errorf("command %s: %v", sc.Command, err))
	}
	if !slices.ContainsFunc(append(append([]string(nil), proc.DefaultReadOnly...), sc.ReadOnly...), func(r string) bool { return pathx.Within(path, r) }) {
		return nil, u.startFailed(fmt.Errorf("command %s is not inside its jail: add its directory to \"read_only\"", path))
	}
	switch {
	case sc.SHA256 != "":
		sum, err := fileSHA256(path)
		if err != nil {
			return nil, u.startFailed(fmt.Errorf("command %s: %v", path, err))
		}
		if sum != sc.SHA256 {
			return nil, u.startFailed(fmt.Errorf("command %s does not match its sha256 pin (it is %s)", path, sum))
		}
	case u.set.opts.RequirePins:
		return nil, u.startFailed(fmt.Errorf("command %s has no sha256 pin, and lockdown runs only pinned commands", path))
	}
	base := u.set.opts.StdioDir
	if base == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return nil, u.startFailed(fmt.Errorf("no directory for command servers: %v", err))
		}
		base = filepath.Join(c, "aiod", "upstreams")
	}
	dir := filepath.Join(base, u.srv.Name, "workspace")
	tmp := filepath.Join(base, u.srv.Name, "tmp")
	if err := errors.Join(os.MkdirAll(dir, 0o700), os.MkdirAll(tmp, 0o700)); err != nil {
		return nil, u.startFailed(err)
	}
	if st.jail == nil {
		st.jail = proc.NewJail(proc.Sandbox{ReadOnly: sc.ReadOnly, CPUSeconds: 1 << 40})
	}
	cmd := exec.Command(path, sc.Args...)
	cmd.Args[0] = sc.Command
	cmd.Env = []string{"PATH=" + proc.DefaultPath, "HOME=" + proc.JailMount, "TMPDIR=/tmp"}
	for _, name := range sc.Env {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	cmd.Stderr = nil // the null device: servers print secrets there
	if err := st.jail.Command(cmd, dir, tmp, len(sc.Hosts) > 0); err != nil {
		return nil, u.startFailed(err)
	}
	st.starts++
	st.started = time.Now()
	st.running = true
	return &captureTransport{base: &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, progress: u.relayProgress}, nil
}

// startFailed counts a failed start like an exit; st.mu is held.
func (u *upstream) startFailed(err error) error {
	u.stdio.started = time.Time{}
	u.backoffLocked()
	return err
}

// backoffLocked counts an exit and sets when the next start may be, and
// arranges it; st.mu is held.
func (u *upstream) backoffLocked() time.Duration {
	st := u.stdio
	st.running = false
	if !st.started.IsZero() && time.Since(st.started) >= stableRun {
		st.deaths = 0
	}
	st.deaths++
	base := u.set.opts.RestartBackoff
	d := base << min(st.deaths-1, 5)
	d = min(d, base*maxBackoffFactor)
	st.nextStart = time.Now().Add(d)
	if st.timer != nil {
		st.timer.Stop()
	}
	st.timer = time.AfterFunc(d, u.restart)
	return d
}

// watch waits for cs's command to end and arranges its restart.
func (u *upstream) watch(cs *mcp.ClientSession) {
	_ = cs.Wait()
	u.mu.Lock()
	closed := u.closed
	if u.cs == cs {
		u.cs = nil
	}
	u.mu.Unlock()
	if closed || u.set.ctx.Err() != nil {
		u.stdio.mu.Lock()
		u.stdio.running = false
		u.stdio.mu.Unlock()
		return
	}
	u.stdio.mu.Lock()
	d := u.backoffLocked()
	u.stdio.mu.Unlock()
	u.set.logf("upstream MCP server %q: its command exited; starting it again in %s", u.srv.Name, d)
}

// restart starts the command again (through a refresh of its tools, so that
// its list is known again).
func (u *upstream) restart() {
	u.mu.Lock()
	closed := u.closed
	u.mu.Unlock()
	if closed || u.set.ctx.Err() != nil {
		return
	}
	u.listChanged()
}

func (u *upstream) stopStdio() {
	if u.stdio == nil {
		return
	}
	u.stdio.mu.Lock()
	defer u.stdio.mu.Unlock()
	if u.stdio.timer != nil {
		u.stdio.timer.Stop()
	}
	if u.stdio.jail != nil {
		u.stdio.jail.Close()
	}
}

// starts reports how many times the command of server name was started
// (0 for a server that is not a command).
func (s *Set) starts(name string) int {
	u, err := s.server(name)
	if err != nil || u.stdio == nil {
		return 0
	}
	u.stdio.mu.Lock()
	defer u.stdio.mu.Unlock()
	return u.stdio.starts
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// captureTransport keeps the raw result of each request that carries a
// slot, as the guard does on HTTP (guard.go): on transports without HTTP
// answers of their own (a command's stdout, the 2024-11-05 SSE stream) the
// answer arrives on the connection.
//
// With life set, the base connects under life instead of the caller's
// context (which still bounds the wait): the 2024-11-05 transport's stream
// is the GET that Connect opens, and lives as long as its context.
//
// It also hands each progress notification to its call's notify function
// (progress, by token) as it is read, before the call's answer: the go-sdk's
// client-wide handler runs apart from the call and may see it after the
// call has returned.
type captureTransport struct {
	base     mcp.Transport
	life     context.Context
	progress func(params json.RawMessage)
}

func (t *captureTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.life == nil {
		c, err := t.base.Connect(ctx)
		if err != nil {
			return nil, err
		}
		return &captureConn{Connection: c, pending: map[any]*slot{}, progress: t.progress}, nil
	}
	type res struct {
		c   mcp.Connection
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := t.base.Connect(t.life)
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return &captureConn{Connection: r.c, pending: map[any]*slot{}, progress: t.progress}, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

type captureConn struct {
	mcp.Connection
	progress func(params json.RawMessage)
	mu       sync.Mutex
	pending  map[any]*slot // request id -> slot
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if sl, _ := ctx.Value(slotKey{}).(*slot); sl != nil && sl.method == req.Method {
			id := req.ID.Raw()
			c.mu.Lock()
			c.pending[id] = sl
			c.mu.Unlock()
			// a call that ends unanswered (cancelled, timed out) is
			// forgotten with its context
			context.AfterFunc(ctx, func() {
				c.mu.Lock()
				if c.pending[id] == sl {
					delete(c.pending, id)
				}
				c.mu.Unlock()
			})
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil && !req.IsCall() && req.Method == "notifications/progress" && c.progress != nil {
		c.progress(req.Params)
	}
	if resp, ok := m.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		sl := c.pending[resp.ID.Raw()]
		delete(c.pending, resp.ID.Raw())
		c.mu.Unlock()
		if sl != nil && resp.Error == nil {
			sl.set(resp.Result, nil)
		}
	}
	return m, err
}
