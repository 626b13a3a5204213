package hostfn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/proc"
)

// ProcessModule is the import module of the process family.
const ProcessModule = "aiod:process"

// DefaultSession is the shell session used when a request names none.
const DefaultSession = "default"

// ProcessFamily is the aiod:process family (spec/abi/v1/process.md): spawn
// runs a granted program to completion, shell_exec runs a command in a
// persistent bash session owned by the host, shell_close ends a session,
// which looks programs up. Every request is checked against the calling
// plugin's grant: the program against Commands, the cwd against CwdRoots,
// shell sessions against Shell.
type ProcessFamily struct {
	m *proc.Manager
}

// NewProcess returns the process family backed by m. The caller owns m
// and closes it on shutdown.
func NewProcess(m *proc.Manager) Family { return &ProcessFamily{m: m} }

// Name is caps.Process.
func (*ProcessFamily) Name() caps.Family { return caps.Process }

// Defs are the functions of aiod:process.
func (f *ProcessFamily) Defs() []Def {
	return []Def{
		ReqResp(ProcessModule, "spawn", strictJSON(f.spawn)),
		ReqResp(ProcessModule, "shell_exec", strictJSON(f.shellExec)),
		ReqResp(ProcessModule, "shell_close", strictJSON(f.shellClose)),
		ReqResp(ProcessModule, "which", strictJSON(f.which)),
	}
}

// SpawnRequest is the request of aiod:process.spawn.
type SpawnRequest struct {
	Argv           []string          `json:"argv"`
	Env            map[string]string `json:"env,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	Stdin          *string           `json:"stdin,omitempty"`
	TimeoutMs      int64             `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64             `json:"max_output_bytes,omitempty"`
}

// SpawnResponse is the response of aiod:process.spawn.
type SpawnResponse struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal"`
	TimedOut        bool   `json:"timed_out"`
	Killed          string `json:"killed"`
	DurationMs      int64  `json:"duration_ms"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	Program         string `json:"program"`
	Cwd             string `json:"cwd"`
}

// ShellExecRequest is the request of aiod:process.shell_exec.
type ShellExecRequest struct {
	Session        string `json:"session,omitempty"`
	NewSession     bool   `json:"new_session,omitempty"`
	Cmd            string `json:"cmd"`
	Cwd            string `json:"cwd,omitempty"`
	TimeoutMs      int64  `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64  `json:"max_output_bytes,omitempty"`
}

// ShellExecResponse is the response of aiod:process.shell_exec.
type ShellExecResponse struct {
	Session    string `json:"session"`
	Status     string `json:"status"`
	Output     string `json:"output"`
	ExitCode   *int   `json:"exit_code"`
	Cwd        string `json:"cwd"`
	Truncated  bool   `json:"truncated"`
	DurationMs int64  `json:"duration_ms"`
	Restarted  bool   `json:"restarted"`
	Reason     string `json:"reason"`
}

// ShellCloseRequest is the request of aiod:process.shell_close.
type ShellCloseRequest struct {
	Session string `json:"session,omitempty"`
}

// ShellCloseResponse is the response of aiod:process.shell_close.
type ShellCloseResponse struct {
	Closed bool `json:"closed"`
}

// WhichRequest is the request of aiod:process.which.
type WhichRequest struct {
	Names []string `json:"names"`
}

// WhichProgram is one program in a WhichResponse.
type WhichProgram struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Allowed bool   `json:"allowed"`
}

// WhichResponse is the response of aiod:process.which.
type WhichResponse struct {
	Programs []WhichProgram `json:"programs"`
}

// maxWhichNames bounds one which request.
const maxWhichNames = 64

func processGrant(c *Call) (*caps.Grant, error) {
	if c.Grant == nil || !c.Grant.Has(caps.Process) {
		return nil, Errorf(Denied, "the plugin has no process grant")
	}
	return c.Grant, nil
}

func (f *ProcessFamily) spawn(ctx context.Context, c *Call, req *SpawnRequest) (*SpawnResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, Errorf(Invalid, "argv is required")
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
	dir, err := cwdFor(g, req.Cwd)
	if err != nil {
		return nil, err
	}
	sr := proc.SpawnRequest{
		Path: path, Args: req.Argv, Env: env, Dir: dir,
		Timeout:   callTimeout(ctx, req.TimeoutMs, f.m.Config()),
		MaxOutput: req.MaxOutputBytes,
	}
	if req.Stdin != nil {
		sr.Stdin = []byte(*req.Stdin)
	}
	res, err := f.m.Spawn(ctx, sr)
	if err != nil {
		return nil, procError(err)
	}
	return &SpawnResponse{
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Killed: res.Killed,
		DurationMs: res.Duration.Milliseconds(),
		Stdout:     string(res.Stdout), Stderr: string(res.Stderr),
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		Program: path, Cwd: dir,
	}, nil
}

func (f *ProcessFamily) shellExec(ctx context.Context, c *Call, req *ShellExecRequest) (*ShellExecResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if !g.Shell {
		return nil, Errorf(Denied, "the plugin has no shell grant")
	}
	if req.Cmd == "" {
		return nil, Errorf(Invalid, "cmd is required")
	}
	session := req.Session
	switch {
	case req.NewSession && session == "":
		var b [8]byte
		_, _ = rand.Read(b[:])
		session = "new-" + hex.EncodeToString(b[:])
	case session == "":
		session = DefaultSession
	}
	key := proc.Key{Plugin: c.Plugin, Owner: c.Owner, Session: session}
	var cwd string
	if req.Cwd != "" {
		if cwd, err = cwdFor(g, req.Cwd); err != nil {
			return nil, err
		}
	}
	start, err := cwdFor(g, "")
	if err != nil {
		return nil, err
	}
	if req.NewSession && req.Session != "" {
		if _, err := f.m.CloseSession(ctx, key); err != nil {
			return nil, procError(err)
		}
	}
	res, err := f.m.Exec(ctx, key, req.Cmd, cwd, callTimeout(ctx, req.TimeoutMs, f.m.Config()),
		proc.ExecOptions{MaxOutput: req.MaxOutputBytes, StartDir: start})
	if err != nil {
		return nil, procError(err)
	}
	return &ShellExecResponse{
		Session: session, Status: res.Status, Output: string(res.Output), ExitCode: res.ExitCode,
		Cwd: res.Cwd, Truncated: res.Truncated, DurationMs: res.Duration.Milliseconds(),
		Restarted: res.Restarted, Reason: res.Reason,
	}, nil
}

func (f *ProcessFamily) shellClose(ctx context.Context, c *Call, req *ShellCloseRequest) (*ShellCloseResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if !g.Shell {
		return nil, Errorf(Denied, "the plugin has no shell grant")
	}
	session := req.Session
	if session == "" {
		session = DefaultSession
	}
	closed, err := f.m.CloseSession(ctx, proc.Key{Plugin: c.Plugin, Owner: c.Owner, Session: session})
	if err != nil {
		return nil, procError(err)
	}
	return &ShellCloseResponse{Closed: closed}, nil
}

func (f *ProcessFamily) which(_ context.Context, c *Call, req *WhichRequest) (*WhichResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if len(req.Names) > maxWhichNames {
		return nil, Errorf(Invalid, "at most %d names", maxWhichNames)
	}
	resp := &WhichResponse{Programs: make([]WhichProgram, 0, len(req.Names))}
	for _, name := range req.Names {
		p := WhichProgram{Name: name, Allowed: true}
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

// cwdFor checks a requested cwd against the grant; "" means the first
// granted root that exists.
func cwdFor(g *caps.Grant, cwd string) (string, error) {
	if cwd != "" {
		dir, err := proc.CheckCwd(cwd, g.CwdRoots)
		if err != nil {
			return "", procError(err)
		}
		return dir, nil
	}
	for _, r := range g.CwdRoots {
		if dir, err := proc.CheckCwd(r, g.CwdRoots); err == nil {
			return dir, nil
		}
	}
	return "", Errorf(NotFound, "none of the granted working directories exists")
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
		return Errorf(IO, "%v", err)
	}
	code := Internal
	switch {
	case errors.Is(pe.Kind, proc.ErrDenied):
		code = Denied
	case errors.Is(pe.Kind, proc.ErrInvalid):
		code = Invalid
	case errors.Is(pe.Kind, proc.ErrNotFound):
		code = NotFound
	case errors.Is(pe.Kind, proc.ErrTooLarge):
		code = TooLarge
	case errors.Is(pe.Kind, proc.ErrBusy), errors.Is(pe.Kind, proc.ErrClosed):
		code = Unavailable
	}
	return &Error{Code: code, Message: pe.Msg}
}

// strictJSON is JSON with strict decoding: unknown fields, trailing data
// and a non-object request are invalid, so a misspelt field fails loudly
// instead of being ignored.
func strictJSON[Req, Resp any](fn func(ctx context.Context, c *Call, req *Req) (Resp, error)) func(ctx context.Context, c *Call, req []byte) ([]byte, error) {
	return func(ctx context.Context, c *Call, raw []byte) ([]byte, error) {
		var r Req
		if len(bytes.TrimSpace(raw)) > 0 {
			d := json.NewDecoder(bytes.NewReader(raw))
			d.DisallowUnknownFields()
			err := d.Decode(&r)
			if err == nil && d.Decode(new(json.RawMessage)) != io.EOF {
				err = errors.New("trailing data after the JSON object")
			}
			if err != nil {
				return nil, Errorf(Invalid, "bad request: %v", err)
			}
		}
		resp, err := fn(ctx, c, &r)
		if err != nil {
			return nil, err
		}
		return json.Marshal(resp)
	}
}
