//go:build linux

package proc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

type isoMode int

const (
	isoNone      isoMode = iota
	isoPidNS             // CLONE_NEWPID (needs CAP_SYS_ADMIN)
	isoUserPidNS         // CLONE_NEWUSER|CLONE_NEWPID, own uid/gid mapped
)

// preferredIso is the best containment the kernel grants us.
func preferredIso() isoMode {
	if os.Geteuid() == 0 && isoWorks(isoPidNS) {
		return isoPidNS
	}
	if isoWorks(isoUserPidNS) {
		return isoUserPidNS
	}
	return isoNone
}

func sysProcAttr(iso isoMode) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	switch iso {
	case isoPidNS:
		a.Cloneflags = syscall.CLONE_NEWPID
	case isoUserPidNS:
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// isoWorks reports whether the kernel lets us start a process with iso.
// It starts a program that does not exist: the clone (where a refused
// namespace fails) happens before the exec (which then fails with ENOENT),
// so nothing runs.
func isoWorks(iso isoMode) bool {
	attr := sysProcAttr(iso)
	attr.Pdeathsig = 0
	p, err := os.StartProcess(filepath.Join(os.TempDir(), "aiod-ns-probe-"+randomToken()), []string{"probe"},
		&os.ProcAttr{Sys: attr})
	if err == nil { // cannot happen; be tidy anyway
		_ = p.Kill()
		_, _ = p.Wait()
		return true
	}
	return errors.Is(err, syscall.ENOENT)
}

var selfNS, _ = os.Readlink("/proc/self/ns/pid")

// unitNS is the PID namespace of a freshly started unit, or "" if it has
// none of its own.
func unitNS(pid int, iso isoMode) string {
	if iso == isoNone {
		return ""
	}
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	if err != nil || ns == selfNS {
		return ""
	}
	return ns
}

// scanProcs calls fn for every process in /proc. ns is read only when
// wantNS, sid and pgid only when wantStat (else 0); with wantStat, zombies
// are skipped.
func scanProcs(wantNS, wantStat bool, fn func(pid int, ns string, sid, pgid int)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	var statBuf [512]byte
	for {
		names, err := d.Readdirnames(512)
		for _, name := range names {
			if name == "" || name[0] < '0' || name[0] > '9' {
				continue
			}
			pid, err := strconv.Atoi(name)
			if err != nil {
				continue
			}
			var ns string
			if wantNS {
				ns, _ = os.Readlink("/proc/" + name + "/ns/pid")
			}
			sid, pgid := 0, 0
			if wantStat {
				var zombie bool
				if sid, pgid, zombie = readStat(name, statBuf[:]); zombie {
					continue
				}
			}
			fn(pid, ns, sid, pgid)
		}
		if err != nil {
			return
		}
	}
}

// readStat returns the session id and process group of a process, and
// whether it is a zombie (or gone).
func readStat(pid string, buf []byte) (sid, pgid int, zombie bool) {
	f, err := os.Open("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, true
	}
	n, _ := f.Read(buf)
	f.Close()
	b := buf[:n]
	// pid (comm) state ppid pgrp session ...; comm may contain anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, true
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 4 {
		return 0, 0, true
	}
	if fields[0][0] == 'Z' || fields[0][0] == 'X' {
		return 0, 0, true
	}
	pgid, _ = strconv.Atoi(string(fields[2]))
	sid, _ = strconv.Atoi(string(fields[3]))
	return sid, pgid, false
}

// procTotal is the number of tasks on the system (the kernel's count in
// /proc/loadavg), a cheap signal that processes are being created; -1 if
// unknown.
func procTotal() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := bytes.Fields(b)
	if len(f) < 4 {
		return -1
	}
	_, total, ok := bytes.Cut(f[3], []byte("/"))
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(string(total))
	if err != nil {
		return -1
	}
	return n
}

// countProcs counts the live processes of each unit.
func countProcs(units []*unit) map[*unit]int {
	byNS := map[string]*unit{}
	bySid := map[int]*unit{}
	for _, u := range units {
		if u.ns != "" {
			byNS[u.ns] = u
		} else {
			bySid[u.pid] = u
		}
	}
	counts := make(map[*unit]int, len(units))
	scanProcs(len(byNS) > 0, len(bySid) > 0, func(pid int, ns string, sid, _ int) {
		if u, ok := byNS[ns]; ok && ns != "" {
			counts[u]++
			return
		}
		if u, ok := bySid[sid]; ok && sid != 0 {
			counts[u]++
		}
	})
	return counts
}

// killTree SIGKILLs every process of u. With a namespace, killing its init
// makes the kernel kill the rest; without, the process group and then every
// process still in the unit's session are killed until none is left. With
// a cgroup, every process in it is killed until none is left: that covers
// the processes that left the session too, and pids.max keeps them from
// forking faster than they are killed.
//
// Once the leader has been reaped its pid may be reused. With a namespace
// there is then nothing left to kill (the kernel killed and reaped the
// namespace before its init's exit completed). Without one, processes left
// in the unit's group or session keep the pid from being reused; if a live
// process has that pid again, none of ours is left and nothing is done.
func killTree(u *unit) {
	if u.cg != nil {
		if !u.exited.Load() {
			_ = syscall.Kill(-u.pid, syscall.SIGKILL)
			_ = syscall.Kill(u.pid, syscall.SIGKILL)
		}
		u.cg.kill()
		return
	}
	killSession(u)
}

// killSession kills u by namespace, process group and session, without
// its cgroup.
func killSession(u *unit) {
	if u.exited.Load() && (u.ns != "" || alive(u.pid)) {
		return
	}
	_ = syscall.Kill(-u.pid, syscall.SIGKILL)
	if u.ns != "" {
		_ = syscall.Kill(u.pid, syscall.SIGKILL)
		return
	}
	for range 100 {
		found := 0
		scanProcs(false, true, func(pid int, _ string, sid, pgid int) {
			if sid != u.pid {
				return
			}
			found++
			if pgid > 0 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		})
		if found == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	var buf [512]byte
	_, _, zombie := readStat(strconv.Itoa(pid), buf[:])
	return !zombie
}

// killGroup SIGKILLs a process group.
func killGroup(pgid int) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// unitProcs lists the pids of u's live processes (zombies excluded).
func unitProcs(u *unit) []int {
	if u.cg != nil {
		return u.cg.procs()
	}
	var pids []int
	scanProcs(u.ns != "", u.ns == "", func(pid int, ns string, sid, _ int) {
		if (u.ns != "" && ns == u.ns) || (u.ns == "" && sid == u.pid) {
			pids = append(pids, pid)
		}
	})
	return pids
}
