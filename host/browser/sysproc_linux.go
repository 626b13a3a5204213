package browser

import (
	"os"
	"syscall"
)

// sysProcAttr puts Chromium in its own process group (so stop reaches its
// helpers) and kills it if aiod dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func termGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGTERM) }
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }
