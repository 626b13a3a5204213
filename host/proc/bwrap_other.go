//go:build !linux

package proc

import (
	"context"
	"errors"
	"os/exec"
)

const sessionMount = "/run/aiod"

type sandboxState struct{}

type bind struct {
	host, path string
	ro         bool
}

func (*sandboxState) close() {}

func (*sandboxState) init(*Sandbox, string) error { return errNoSandbox }

func (*sandboxState) wrap(*Sandbox, *exec.Cmd, []Mount, []bind, bool) error { return errNoSandbox }

var errNoSandbox = errors.New("the bubblewrap sandbox needs Linux")

func (m *Manager) sandboxCmd(*exec.Cmd, string, []bind) error {
	return errorf(ErrNotFound, "sandbox: %v", errNoSandbox)
}

func (m *Manager) sandboxHostDir(owner, dir string) string {
	mounts, err := m.cfg.Sandbox.Dirs(owner)
	if err != nil {
		return ""
	}
	h, _ := toHost(mounts, dir)
	return h
}

func hostPID(*unit, int) int { return 0 }

// CheckSandbox fails: there is no sandbox off Linux.
func (m *Manager) CheckSandbox(context.Context, string) error { return errNoSandbox }
