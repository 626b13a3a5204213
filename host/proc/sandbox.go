package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aiodhq/aiod/host/internal/pathx"
)

// Sandbox runs every unit of a Manager under bubblewrap (Config.Sandbox):
// the machine's programs read-only, only the owner's directories (Dirs)
// and the unit's own scratch writable, a fresh /proc and /dev, no network
// but a loopback interface, new user, PID, IPC and UTS namespaces, a fixed
// unprivileged uid and gid, no capabilities, and per-process resource
// limits (RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, set by prlimit inside the
// sandbox before the program starts). The process and memory limits of a
// unit stay the Manager's cgroup limits (Config.MaxProcs, MaxMemory).
//
// Paths in a sandboxed Manager are the sandbox's: a SpawnRequest's Dir, an
// Exec's cwd and StartDir, and the Cwd an Exec reports are as the program
// sees them (/workspace/...), and CheckCwdFor maps them to the owner's host
// directories to check them.
type Sandbox struct {
	// Bwrap is the bubblewrap binary; empty looks "bwrap" up on
	// DefaultPath.
	Bwrap string
	// Dirs returns the writable directories of an owner, each a host
	// directory and where the sandbox shows it (e.g. <data>/alice/workspace
	// at /workspace). The first is where a unit starts when no directory is
	// given. It is called on every start; it may create the directories.
	Dirs func(owner string) ([]Mount, error)
	// ReadOnly are host paths shown read-only at the same place, besides
	// the defaults (DefaultReadOnly); paths that do not exist are skipped.
	ReadOnly []string
	// Extra, when set, gives more such paths, asked at every start (the
	// registered Machine Mode tools' programs, which a reload changes).
	Extra func() []string
	// UID and GID inside the sandbox (10001).
	UID, GID int
	// CPUSeconds, AddressSpace and FileSize are the per-process limits
	// (120 s, 4 GiB, 512 MiB).
	CPUSeconds   int64
	AddressSpace int64
	FileSize     int64
}

// Mount is a host directory shown writable in the sandbox at Path.
type Mount struct {
	Host string // absolute host directory
	Path string // absolute path inside the sandbox
}

// Sandbox defaults (seed limits: 120 CPU seconds, 4 GiB of address space
// and 512 MiB files per process).
const (
	SandboxUID          = 10001
	DefaultCPUSeconds   = 120
	DefaultAddressSpace = 4 << 30
	DefaultFileSize     = 512 << 20
)

// DefaultReadOnly are the host paths every sandbox shows read-only: the
// machine's programs and libraries, and the few files of /etc that
// programs need to run (the dynamic linker's cache, alternatives, time
// zone, name service switch, hosts, certificates). The rest of /etc, /home,
// /root, /var, /run and the host's /tmp are not there.
var DefaultReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf",
	"/etc/ssl", "/etc/ca-certificates", "/etc/mime.types", "/etc/protocols", "/etc/services",
	"/etc/python3", "/etc/python3.11", "/etc/bash.bashrc", "/etc/inputrc", "/etc/magic", "/etc/papersize",
}

func (s *Sandbox) fill() {
	if s.UID <= 0 {
		s.UID = SandboxUID
	}
	if s.GID <= 0 {
		s.GID = s.UID
	}
	if s.CPUSeconds <= 0 {
		s.CPUSeconds = DefaultCPUSeconds
	}
	if s.AddressSpace <= 0 {
		s.AddressSpace = DefaultAddressSpace
	}
	if s.FileSize <= 0 {
		s.FileSize = DefaultFileSize
	}
}

// SandboxEnv is the environment of sandboxed programs built from base:
// PATH is DefaultPath (the host's PATH may name directories the sandbox
// does not have), HOME the first writable directory, TMPDIR /tmp, and the
// user is "sandbox".
func SandboxEnv(base []string, home string) []string {
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+DefaultPath, "HOME="+home, "TMPDIR=/tmp", "USER=sandbox", "LOGNAME=sandbox", "SHELL=/bin/bash")
}

// toHost maps a sandbox path to the host path of the mount that holds it.
func toHost(mounts []Mount, p string) (string, bool) {
	p = filepath.Clean(p)
	best := -1
	for i, mt := range mounts {
		if pathx.Within(p, mt.Path) && (best < 0 || len(mt.Path) > len(mounts[best].Path)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	mt := mounts[best]
	return filepath.Join(mt.Host, strings.TrimPrefix(p, mt.Path)), true
}

// toSandbox maps a host path inside a mount back to the sandbox's.
func toSandbox(mounts []Mount, p string) (string, bool) {
	p = filepath.Clean(p)
	best := -1
	for i, mt := range mounts {
		h := filepath.Clean(mt.Host)
		if pathx.Within(p, h) && (best < 0 || len(h) > len(filepath.Clean(mounts[best].Host))) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	mt := mounts[best]
	return filepath.Join(mt.Path, strings.TrimPrefix(p, filepath.Clean(mt.Host))), true
}

// Sandboxed reports whether the Manager runs its units under bubblewrap.
func (m *Manager) Sandboxed() bool { return m.cfg.Sandbox != nil }

// FirstDir is where owner's units start by default under a sandbox (the
// first of its directories), "" without one.
func (m *Manager) FirstDir(owner string) string {
	if m.cfg.Sandbox == nil {
		return ""
	}
	mounts, err := m.cfg.Sandbox.Dirs(owner)
	if err != nil || len(mounts) == 0 {
		return ""
	}
	return mounts[0].Path
}

// CheckCwdFor is CheckCwd for a program of owner: without a sandbox it is
// CheckCwd; with one, dir and roots are sandbox paths, checked as the
// owner's host directories they show (symlinks resolved there), and the
// result is the sandbox path again. A path outside the owner's mounts is
// denied.
func (m *Manager) CheckCwdFor(owner, dir string, roots []string) (string, error) {
	if m.cfg.Sandbox == nil {
		return CheckCwd(dir, roots)
	}
	if strings.ContainsRune(dir, 0) {
		return "", errorf(ErrInvalid, "bad cwd %q", dir)
	}
	clean, ok := cleanAbs(dir)
	if !ok {
		return "", errorf(ErrInvalid, "cwd %q must be an absolute path", dir)
	}
	mounts, err := m.cfg.Sandbox.Dirs(owner)
	if err != nil {
		return "", errorf(ErrInvalid, "sandbox directories: %v", err)
	}
	host, ok := toHost(mounts, clean)
	if !ok {
		return "", errorf(ErrDenied, "cwd %s is outside the granted directories", clean)
	}
	var hostRoots []string
	for _, r := range roots {
		if hr, ok := toHost(mounts, r); ok {
			hostRoots = append(hostRoots, hr)
		}
	}
	real, err := CheckCwd(host, hostRoots)
	if err != nil {
		var pe *Error
		if e, ok := err.(*Error); ok {
			pe = e
		}
		switch {
		case pe != nil && pe.Kind == ErrNotFound:
			return "", errorf(ErrNotFound, "cwd %s does not exist", clean)
		case pe != nil && pe.Kind == ErrInvalid:
			return "", errorf(ErrInvalid, "cwd %s is not a usable directory", clean)
		}
		return "", errorf(ErrDenied, "cwd %s is outside the granted directories", clean)
	}
	back, ok := toSandbox(mounts, real)
	if !ok {
		return "", errorf(ErrDenied, "cwd %s is outside the granted directories", clean)
	}
	return back, nil
}

// writePrivate writes a file of a session's directory, which the session's
// programs can change (a sandboxed shell sees it at /run/aiod): a link put
// in its place is not followed (it could name any host file, written with
// the daemon's rights), a FIFO does not block the writer; whatever is
// there that is not a regular file is removed and the file made anew.
func writePrivate(name string, data []byte) error {
	err := writeRegular(name, data, 0)
	if err != nil && os.RemoveAll(name) == nil {
		err = writeRegular(name, data, os.O_EXCL)
	}
	return err
}

func writeRegular(name string, data []byte, flag int) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", name)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
