// Package process is the aiod:process host function family
// (spec/abi/v1/process.md), over host/proc.
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Family is the aiod:process family (spec/abi/v1/process.md): spawn
// runs a granted program to completion, shell_exec runs a command in a
// persistent bash session owned by the host, shell_close ends a session,
// which looks programs up. Every request is checked against the calling
// plugin's grant: the program against Commands, the cwd against CwdRoots,
// shell sessions against Shell.
type Family struct {
	m *proc.Manager

	mu    sync.Mutex
	tools ToolCaller // tools.go; nil: spawns get no tool channel
}

// New returns the process family backed by m. The caller owns m
// and closes it on shutdown.
func New(m *proc.Manager) hostfn.Family { return &Family{m: m} }

// Name is abi.FamilyProcess.
func (*Family) Name() abi.Family { return abi.FamilyProcess }

// Defs are the functions of aiod:process.
func (f *Family) Defs() []hostfn.Def {
	return []hostfn.Def{
		hostfn.ReqResp(abi.ModuleProcess, "spawn", hostfn.StrictJSON(f.spawn)),
		hostfn.ReqResp(abi.ModuleProcess, "shell_exec", hostfn.StrictJSON(f.shellExec)),
		hostfn.ReqResp(abi.ModuleProcess, "shell_close", hostfn.StrictJSON(f.shellClose)),
		hostfn.ReqResp(abi.ModuleProcess, "which", hostfn.StrictJSON(f.which)),
		// ABI v1.1 (stream.go)
		hostfn.ReqResp(abi.ModuleProcess, "start", hostfn.StrictJSON(f.start)),
		hostfn.ReqResp(abi.ModuleProcess, "read", f.read),
		hostfn.ReqResp(abi.ModuleProcess, "wait", hostfn.StrictJSON(f.wait)),
	}
}

func processGrant(c *hostfn.Call) (*caps.Grant, error) {
	if c.Grant == nil || !c.Grant.Has(abi.FamilyProcess) {
		return nil, hostfn.Errorf(abi.Denied, "the plugin has no process grant")
	}
	return c.Grant, nil
}

func (f *Family) spawn(ctx context.Context, c *hostfn.Call, req *abi.ProcessSpawnRequest) (*abi.ProcessSpawnResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, hostfn.Errorf(abi.Invalid, "argv is required")
	}
	anyProgram := slices.Contains(g.Commands, "*")
	env, err := proc.MergeEnv(f.m.Config().BaseEnv, req.Env, anyProgram)
	if err != nil {
		return nil, procError(err)
	}
	path, err := f.m.ResolveProgram(req.Argv[0], g.Commands, req.Env["PATH"])
	if err != nil {
		return nil, procError(err)
	}
	dir, err := cwdFor(f.m, c.Owner, g, req.Cwd)
	if err != nil {
		return nil, err
	}
	maxCalls, caller, err := f.toolsOf(c, req) // tools.go
	if err != nil {
		return nil, err
	}
	sr := proc.SpawnRequest{
		Path: path, Args: req.Argv, Env: env, Dir: dir,
		Timeout:   callTimeout(ctx, req.TimeoutMs, f.m.Config()),
		MaxOutput: req.MaxOutputBytes,
		Owner:     c.Owner,
	}
	if req.Stdin != nil {
		sr.Stdin = []byte(*req.Stdin)
	}
	var tc *toolChannel
	if caller != nil {
		if tc, err = openToolChannel(); err != nil {
			return nil, hostfn.Errorf(abi.IO, "tool channel: %v", err)
		}
		sr.ExtraFiles = tc.childFiles()
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		tc.cancel = cancel
		sr.OnStart = func() {
			tc.started()
			go tc.serve(callCtx, ToolCall{Plugin: c.Plugin, Owner: c.Owner}, maxCalls, caller)
		}
	}
	prog := startOutputProgress(c, req.Progress) // progress.go
	sr.OnOutput = prog.sink()
	res, err := f.m.Spawn(ctx, sr)
	prog.finish()
	calls := 0
	if tc != nil {
		if res == nil { // not started: serve never ran
			tc.started()
			close(tc.done)
		}
		tc.close()
		calls = tc.calls
	}
	if err != nil {
		return nil, procError(err)
	}
	return &abi.ProcessSpawnResponse{
		ToolCalls: calls,
		ExitCode:  res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Killed: res.Killed,
		DurationMs: res.Duration.Milliseconds(),
		Stdout:     string(res.Stdout), Stderr: string(res.Stderr),
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		Program: path, Cwd: dir,
	}, nil
}

func (f *Family) shellExec(ctx context.Context, c *hostfn.Call, req *abi.ProcessShellExecRequest) (*abi.ProcessShellExecResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if !g.Shell {
		return nil, hostfn.Errorf(abi.Denied, "the plugin has no shell grant")
	}
	if req.Cmd == "" {
		return nil, hostfn.Errorf(abi.Invalid, "cmd is required")
	}
	session := req.Session
	switch {
	case req.NewSession && session == "":
		var b [8]byte
		_, _ = rand.Read(b[:])
		session = "new-" + hex.EncodeToString(b[:])
	case session == "":
		session = abi.DefaultShellSession
	}
	key := proc.Key{Plugin: c.Plugin, Owner: c.Owner, Session: session}
	var cwd string
	if req.Cwd != "" {
		if cwd, err = cwdFor(f.m, c.Owner, g, req.Cwd); err != nil {
			return nil, err
		}
	}
	start, err := cwdFor(f.m, c.Owner, g, "")
	if err != nil {
		return nil, err
	}
	if req.NewSession && req.Session != "" {
		if _, err := f.m.CloseSession(ctx, key); err != nil {
			return nil, procError(err)
		}
	}
	prog := startOutputProgress(c, req.Progress) // progress.go
	res, err := f.m.Exec(ctx, key, req.Cmd, cwd, callTimeout(ctx, req.TimeoutMs, f.m.Config()),
		proc.ExecOptions{MaxOutput: req.MaxOutputBytes, StartDir: start, OnOutput: prog.sink()})
	prog.finish()
	if err != nil {
		return nil, procError(err)
	}
	return &abi.ProcessShellExecResponse{
		Session: session, Status: res.Status, Output: string(res.Output), ExitCode: res.ExitCode,
		Cwd: res.Cwd, Truncated: res.Truncated, DurationMs: res.Duration.Milliseconds(),
		Restarted: res.Restarted, Reason: res.Reason,
	}, nil
}

func (f *Family) shellClose(ctx context.Context, c *hostfn.Call, req *abi.ProcessShellCloseRequest) (*abi.ProcessShellCloseResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if !g.Shell {
		return nil, hostfn.Errorf(abi.Denied, "the plugin has no shell grant")
	}
	session := req.Session
	if session == "" {
		session = abi.DefaultShellSession
	}
	closed, err := f.m.CloseSession(ctx, proc.Key{Plugin: c.Plugin, Owner: c.Owner, Session: session})
	if err != nil {
		return nil, procError(err)
	}
	return &abi.ProcessShellCloseResponse{Closed: closed}, nil
}

func (f *Family) which(_ context.Context, c *hostfn.Call, req *abi.ProcessWhichRequest) (*abi.ProcessWhichResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if len(req.Names) > abi.MaxWhichNames {
		return nil, hostfn.Errorf(abi.Invalid, "at most %d names", abi.MaxWhichNames)
	}
	resp := &abi.ProcessWhichResponse{Programs: make([]abi.ProcessWhichProgram, 0, len(req.Names))}
	for _, name := range req.Names {
		p := abi.ProcessWhichProgram{Name: name, Allowed: true}
		path, err := f.m.ResolveProgram(name, g.Commands, "")
		switch {
		case err == nil:
			p.Path = path
		case errors.Is(err, proc.ErrDenied):
			p.Allowed = false
		case errors.Is(err, proc.ErrNotFound):
		default:
			return nil, procError(err)
		}
		resp.Programs = append(resp.Programs, p)
	}
	return resp, nil
}

// cwdFor checks a requested cwd of owner against the grant; "" means the
// first granted root that exists (under a sandbox, the owner's first
// directory if it is granted). Under a sandbox the paths are the
// sandbox's, checked as the owner's directories (proc.CheckCwdFor).
func cwdFor(m *proc.Manager, owner string, g *caps.Grant, cwd string) (string, error) {
	if cwd != "" {
		dir, err := m.CheckCwdFor(owner, cwd, g.CwdRoots)
		if err != nil {
			return "", procError(err)
		}
		return dir, nil
	}
	roots := g.CwdRoots
	if first := m.FirstDir(owner); first != "" {
		roots = append([]string{first}, roots...)
	}
	for _, r := range roots {
		if dir, err := m.CheckCwdFor(owner, r, g.CwdRoots); err == nil {
			return dir, nil
		}
	}
	return "", hostfn.Errorf(abi.NotFound, "none of the granted working directories exists")
}

// callTimeout is the request's timeout (or the default), shortened to end
// a little before the guest call's own deadline, so that the guest still
// gets the result (timed out) rather than being cut off itself.
func callTimeout(ctx context.Context, ms int64, cfg proc.Config) time.Duration {
	d := cfg.DefaultTimeout
	if ms > 0 {
		d = time.Duration(ms) * time.Millisecond
	}
	d = min(d, cfg.MaxTimeout)
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		left -= min(time.Second, left/10)
		d = min(d, max(left, time.Millisecond))
	}
	return d
}

// procError maps a proc error onto a host function error.
func procError(err error) error {
	var pe *proc.Error
	if !errors.As(err, &pe) {
		return hostfn.Errorf(abi.IO, "%v", err)
	}
	code := abi.Internal
	switch {
	case errors.Is(pe.Kind, proc.ErrDenied):
		code = abi.Denied
	case errors.Is(pe.Kind, proc.ErrInvalid):
		code = abi.Invalid
	case errors.Is(pe.Kind, proc.ErrNotFound):
		code = abi.NotFound
	case errors.Is(pe.Kind, proc.ErrTooLarge):
		code = abi.TooLarge
	case errors.Is(pe.Kind, proc.ErrBusy), errors.Is(pe.Kind, proc.ErrClosed):
		code = abi.Unavailable
	}
	return &hostfn.Error{Code: code, Message: pe.Msg}
}
