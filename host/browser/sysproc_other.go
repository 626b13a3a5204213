//go:build !linux

package browser

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func termGroup(p *os.Process) { p.Signal(os.Interrupt) }
func killGroup(p *os.Process) { p.Kill() }
