package proc

import (
	"os/exec"
	"sync"
)

// A Jail runs single long-lived programs (an upstream MCP server spoken to
// over its stdin and stdout) under bubblewrap with the rules of Sandbox,
// outside any Manager: the caller starts and waits for the command itself.
// Each program gets one writable directory, shown at /workspace, where it
// starts, and a writable /tmp of its own; the machine's programs and the
// Sandbox's ReadOnly paths read-only; a fresh /proc and /dev; new user, PID,
// IPC and UTS namespaces (the program and everything it starts die with
// bwrap, and bwrap with the process that started it); no network but
// loopback unless asked; the environment the command carries and nothing
// else.
type Jail struct {
	sb Sandbox
	mu sync.Mutex
	st sandboxState
}

// JailMount is where a Jail shows the program's directory.
const JailMount = "/workspace"

// NewJail returns a Jail with the rules of sb (its Dirs are not used).
func NewJail(sb Sandbox) *Jail {
	sb.fill()
	return &Jail{sb: sb}
}

// Command rewrites cmd (Path, Args and Env as the program sees them; Dir is
// ignored) to run in the jail with the host directory dir shown writable at
// /workspace, where it starts, and tmp at /tmp. shareNet keeps the host's
// network; otherwise the program has only its own loopback.
func (j *Jail) Command(cmd *exec.Cmd, dir, tmp string, shareNet bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.st.init(&j.sb, memDir()); err != nil {
		return errorf(ErrNotFound, "sandbox: %v", err)
	}
	cmd.Dir = ""
	return j.st.wrap(&j.sb, cmd, []Mount{{Host: dir, Path: JailMount}, {Host: tmp, Path: "/tmp"}}, nil, shareNet)
}

// Close removes the jail's files (the programs it started are the caller's).
func (j *Jail) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.close()
}

// LookPath finds a program as the sandbox does: an absolute path as it is,
// a name on DefaultPath.
func LookPath(name string) (string, error) { return lookIn(name, DefaultPath) }
