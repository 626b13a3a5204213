//go:build !linux

package proc

import "syscall"

// Without Linux there are no PID namespaces and no /proc to count
// processes in: units are process groups in their own session, killed by
// group, and the watchdog has nothing to count.

type isoMode int

const isoNone isoMode = 0

func preferredIso() isoMode { return isoNone }

func sysProcAttr(isoMode) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func unitNS(int, isoMode) string { return "" }

func countProcs([]*unit) map[*unit]int { return nil }

func procTotal() int { return -1 }

func killTree(u *unit) { killSession(u) }

func killSession(u *unit) {
	if u.exited.Load() { // the pid may have been reused
		return
	}
	_ = syscall.Kill(-u.pid, syscall.SIGKILL)
	_ = syscall.Kill(u.pid, syscall.SIGKILL)
}

func killGroup(pgid int) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

func unitProcs(*unit) []int { return nil }

const isoUserPidNS isoMode = 2

func isoWorks(isoMode) bool { return false }
