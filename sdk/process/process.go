// Package process is the guest side of the aiod:process host functions
// (spec/abi/v1/process.md): running granted programs to completion, and
// bash commands in persistent shell sessions kept by the host. The plugin's
// manifest must ask for the process capability (and "shell": true for
// sessions); the operator's policy decides which programs and working
// directories it actually gets.
//
//	res, err := process.Spawn(process.SpawnRequest{Argv: []string{"python3", "-c", "print(6*7)"}})
//	// res.Stdout == "42\n"
//
//	out, err := process.ShellExec(process.ShellRequest{Cmd: "cd /tmp && ls"})
//	// out.Status == process.StatusCompleted, *out.ExitCode == 0, out.Cwd == "/tmp"
//
// Every failure of a host call is an *Error; errors.Is(err, ErrDenied)
// and the other Err* values match its code. A program that runs and fails
// is not an error: see SpawnResult.ExitCode and ShellResult.Status.
//
// Built natively (not wasip1), calls go to the fake host installed by the
// SDK's test support.
package process

import (
	"errors"
	"time"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// Module is the import module of the host functions.
const Module = abi.ModuleProcess

// Shell statuses (ShellResult.Status).
const (
	StatusCompleted   = abi.ShellCompleted   // the command ended; ExitCode is set
	StatusHardTimeout = abi.ShellHardTimeout // the timeout killed it
	StatusTerminated  = abi.ShellTerminated  // the session's shell died; the next call starts a new one
)

// Errors matched by errors.Is against an *Error's code.
var (
	ErrDenied      = errors.New("denied")      // outside the grant
	ErrInvalid     = errors.New("invalid")     // malformed request
	ErrNotFound    = errors.New("not_found")   // program or cwd missing
	ErrTooLarge    = errors.New("too_large")   // argv, env, stdin or command too big
	ErrUnavailable = errors.New("unavailable") // host shutting down, too many busy sessions
	ErrTimeout     = errors.New("timeout")     // Started.Read: nothing arrived in time
)

// Error is a failed host call.
type Error struct {
	// Code is the host function error code: "denied", "invalid",
	// "not_found", "too_large", "unavailable", "io", "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Is matches the Err* value of e's code.
func (e *Error) Is(target error) bool {
	return guest.CodeIs(e.Code, target, ErrDenied, ErrInvalid, ErrNotFound, ErrTooLarge, ErrUnavailable, ErrTimeout)
}

// do marshals req, calls name and decodes the answer into resp.
func do(name string, req, resp any) error {
	if code, msg := guest.Do(call, name, req, resp); code != "" {
		return &Error{Code: code, Message: msg}
	}
	return nil
}

// ms converts a timeout to whole milliseconds, rounding up.
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// SpawnRequest is a program to run to completion.
type SpawnRequest struct {
	// Argv is the program and its arguments. Argv[0] is a name looked up
	// on PATH or an absolute path; it must be granted.
	Argv []string
	// Env is added to the host's safe base environment (PATH, HOME,
	// LANG, TERM, ...); nothing else of the host's environment is passed.
	Env map[string]string
	// Cwd is the working directory, absolute and inside a granted
	// directory; "" is the first granted one.
	Cwd string
	// Stdin is the program's standard input ("" reads as empty).
	Stdin string
	// Timeout is the wall-clock limit (0: the host default, 30s); the
	// whole process tree is killed when it expires.
	Timeout time.Duration
	// MaxOutputBytes caps stdout and stderr each (0: 1 MiB); output
	// beyond it is dropped and reported as truncated.
	MaxOutputBytes int64
	// Progress sends the output, line by line, as progress notifications
	// of the running tool call while the program runs, a few a second, when
	// the client asked for progress (a progress token); otherwise it
	// changes nothing.
	Progress bool
	// Tools gives the program a channel back to the calling tenant's
	// tools (spec/code-tools.md): fd 3 for its requests, fd 4 for the
	// answers, at most ToolCalls calls (0: abi.MaxToolCalls). It needs the
	// process scope's tools grant (ErrDenied without it).
	Tools     bool
	ToolCalls int
}

// SpawnResult is the outcome of a program.
type SpawnResult struct {
	ExitCode int    // -1 if killed by a signal
	Signal   string // e.g. "SIGKILL", "" if none
	TimedOut bool
	// Killed says why the host killed the program: "timeout",
	// "canceled", "process_limit", "closed", or "".
	Killed          string
	DurationMs      int64
	Duration        time.Duration
	Stdout          string
	Stderr          string
	StdoutTruncated bool
	StderrTruncated bool
	// Program is the path that ran, Cwd where (symlinks resolved).
	Program string
	Cwd     string
	// ToolCalls is how many tool calls the program asked for.
	ToolCalls int
}

// Spawn runs a program to completion and returns its exit status and
// output. Anything it leaves running is killed when it exits.
func Spawn(req SpawnRequest) (*SpawnResult, error) {
	w := abi.ProcessSpawnRequest{Argv: req.Argv, Env: req.Env, Cwd: req.Cwd,
		TimeoutMs: ms(req.Timeout), MaxOutputBytes: req.MaxOutputBytes, Progress: req.Progress}
	if req.Tools {
		w.Tools = &abi.ProcessTools{MaxCalls: req.ToolCalls}
	}
	if req.Stdin != "" {
		w.Stdin = &req.Stdin
	}
	var r abi.ProcessSpawnResponse
	if err := do("spawn", w, &r); err != nil {
		return nil, err
	}
	return &SpawnResult{ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Killed: r.Killed,
		DurationMs: r.DurationMs, Duration: time.Duration(r.DurationMs) * time.Millisecond,
		Stdout: r.Stdout, Stderr: r.Stderr, StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Program: r.Program, Cwd: r.Cwd, ToolCalls: r.ToolCalls}, nil
}

// Run is Spawn of argv with the defaults.
func Run(argv ...string) (*SpawnResult, error) { return Spawn(SpawnRequest{Argv: argv}) }

// ShellRequest is one bash command in a session.
type ShellRequest struct {
	// Session names the session ("" is "default"). Sessions belong to
	// the plugin and the MCP client it runs for.
	Session string
	// NewSession runs in a fresh session: with Session "", one with a
	// new name (returned in ShellResult.Session); with a Session, that
	// session is reset first.
	NewSession bool
	// Cmd is the bash command; `cd`, `export`, variables, functions and
	// aliases persist to the next command of the session. `exit` ends
	// the command, not the session. Stdin is /dev/null.
	Cmd string
	// Cwd, if set, becomes the session's directory before Cmd runs.
	Cwd string
	// Timeout (0: the host default, 30s): the command is killed when it
	// expires and Status is "hard_timeout".
	Timeout time.Duration
	// MaxOutputBytes caps the combined output (0: 1 MiB).
	MaxOutputBytes int64
	// Progress: as in SpawnRequest.
	Progress bool
}

// ShellResult is the outcome of a shell command.
type ShellResult struct {
	Session string
	Status  string // StatusCompleted, StatusHardTimeout, StatusTerminated
	// Output is stdout and stderr, interleaved as written.
	Output    string
	Truncated bool
	// ExitCode is set when Status is "completed".
	ExitCode *int
	// Cwd is the session's directory after the command; pass it back as
	// Cwd to keep in step with the shell.
	Cwd        string
	DurationMs int64
	Duration   time.Duration
	// Restarted: the session's shell had died and was started again;
	// state was restored from the last completed command.
	Restarted bool
	// Reason says why a command did not complete: "timeout",
	// "canceled", "process_limit", "exited", "closed".
	Reason string
}

// ShellExec runs a command in a shell session, creating it on first use.
// Calls on one session run one at a time.
func ShellExec(req ShellRequest) (*ShellResult, error) {
	var r abi.ProcessShellExecResponse
	err := do("shell_exec", abi.ProcessShellExecRequest{Session: req.Session, NewSession: req.NewSession, Cmd: req.Cmd, Cwd: req.Cwd,
		TimeoutMs: ms(req.Timeout), MaxOutputBytes: req.MaxOutputBytes, Progress: req.Progress}, &r)
	if err != nil {
		return nil, err
	}
	return &ShellResult{Session: r.Session, Status: r.Status, Output: r.Output, Truncated: r.Truncated,
		ExitCode: r.ExitCode, Cwd: r.Cwd, DurationMs: r.DurationMs, Duration: time.Duration(r.DurationMs) * time.Millisecond,
		Restarted: r.Restarted, Reason: r.Reason}, nil
}

// ShellClose ends a session ("" is "default") and reports whether it
// existed.
func ShellClose(session string) (bool, error) {
	var res abi.ProcessShellCloseResponse
	err := do("shell_close", abi.ProcessShellCloseRequest{Session: session}, &res)
	return res.Closed, err
}

// Program is one answer of Which: Name, Path (where the program is, ""
// if it is not found or not allowed) and Allowed (whether the grant
// allows the name).
type Program = abi.ProcessWhichProgram

// Which looks programs up as Spawn would (at most 64 names).
func Which(names ...string) ([]Program, error) {
	var res abi.ProcessWhichResponse
	if names == nil {
		names = []string{}
	}
	err := do("which", abi.ProcessWhichRequest{Names: names}, &res)
	return res.Programs, err
}
