//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/internal/pathx"
)

// sessionMount is where a shell session's private directory (prelude,
// command, saved state) is shown in the sandbox.
const sessionMount = "/run/aiod"

// sandboxState is what a sandboxed Manager keeps besides its Config: the
// bwrap binary and a directory with the sandbox user's passwd and group.
type sandboxState struct {
	once  sync.Once
	err   error
	bwrap string
	prlim string
	dir   string // holds passwd and group
}

// bind is one more directory of a unit: writable (a session's
// directory), or read-only (ro: a file or directory of one spawn,
// SpawnRequest.ReadOnly).
type bind struct {
	host, path string
	ro         bool
}

func (st *sandboxState) init(sb *Sandbox, tmp string) error {
	st.once.Do(func() {
		st.bwrap = sb.Bwrap
		if st.bwrap == "" {
			p, err := lookIn("bwrap", DefaultPath)
			if err != nil {
				st.err = fmt.Errorf("bubblewrap (bwrap) not found: %w", err)
				return
			}
			st.bwrap = p
		}
		p, err := lookIn("prlimit", DefaultPath)
		if err != nil {
			st.err = fmt.Errorf("prlimit not found (the sandbox sets its resource limits with it): %w", err)
			return
		}
		st.prlim = p
		d, err := os.MkdirTemp(tmp, "aiod-sandbox-")
		if err != nil {
			st.err = fmt.Errorf("sandbox directory: %w", err)
			return
		}
		home := "/"
		passwd := fmt.Sprintf("root:x:0:0:root:/:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", sb.UID, sb.GID, home)
		group := fmt.Sprintf("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", sb.GID)
		if err := errors.Join(os.WriteFile(filepath.Join(d, "passwd"), []byte(passwd), 0o644),
			os.WriteFile(filepath.Join(d, "group"), []byte(group), 0o644), os.Chmod(d, 0o755)); err != nil {
			_ = os.RemoveAll(d)
			st.err = fmt.Errorf("sandbox directory: %w", err)
			return
		}
		st.dir = d
	})
	return st.err
}

func (st *sandboxState) close() {
	if st != nil && st.dir != "" {
		_ = os.RemoveAll(st.dir)
	}
}

// sandboxCmd rewrites cmd (Path, Args, Env, Dir as the sandbox sees them)
// into a bwrap command line that runs it in owner's sandbox, with binds
// as extra writable directories. cmd's Dir "" starts in the owner's first
// directory.
func (m *Manager) sandboxCmd(cmd *exec.Cmd, owner string, binds []bind) error {
	sb := m.cfg.Sandbox
	if err := m.sb.init(sb, m.tempDir()); err != nil {
		return errorf(ErrNotFound, "sandbox: %v", err)
	}
	mounts, err := sb.Dirs(owner)
	if err != nil {
		return errorf(ErrInvalid, "sandbox directories: %v", err)
	}
	if len(mounts) == 0 {
		return errorf(ErrInvalid, "sandbox: no directories for owner %q", owner)
	}
	return m.sb.wrap(sb, cmd, mounts, binds, false)
}

// wrap rewrites cmd into the bwrap command line of sb with mounts (the
// first is where it starts when cmd.Dir is "") and binds; shareNet keeps
// the host's network namespace (otherwise there is only loopback).
func (st *sandboxState) wrap(sb *Sandbox, cmd *exec.Cmd, mounts []Mount, binds []bind, shareNet bool) error {
	net := "--unshare-net"
	if shareNet {
		net = "--share-net"
	}
	a := []string{"bwrap",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", net, "--unshare-cgroup-try",
		"--uid", strconv.Itoa(sb.UID), "--gid", strconv.Itoa(sb.GID), "--hostname", "sandbox",
		"--cap-drop", "ALL", "--die-with-parent", "--new-session",
	}
	ro := append(append([]string{}, DefaultReadOnly...), sb.ReadOnly...)
	if sb.Extra != nil {
		// each not shown already (a symlink or a bind inside a read-only
		// bind cannot be made)
		fixed := len(ro)
		for _, p := range sb.Extra() {
			if !slices.ContainsFunc(ro[:fixed], func(r string) bool { return pathx.Within(p, r) }) {
				ro = append(ro, p)
			}
		}
	}
	for _, p := range ro {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if t, err := os.Readlink(p); err == nil {
				a = append(a, "--symlink", t, p)
			}
			continue
		}
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a, "--ro-bind", filepath.Join(st.dir, "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(st.dir, "group"), "/etc/group",
		"--proc", "/proc", "--dev", "/dev")
	for _, mt := range mounts {
		if err := os.MkdirAll(mt.Host, 0o700); err != nil {
			return fmt.Errorf("sandbox directory %s: %w", mt.Path, err)
		}
		a = append(a, "--bind", mt.Host, mt.Path)
	}
	for _, b := range binds {
		if b.ro {
			a = append(a, "--ro-bind", b.host, b.path)
			continue
		}
		a = append(a, "--bind", b.host, b.path)
	}
	dir := cmd.Dir
	if dir == "" {
		dir = mounts[0].Path
	}
	a = append(a, "--remount-ro", "/", "--chdir", dir, "--clearenv")
	for _, kv := range cmd.Env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			a = append(a, "--setenv", k, v)
		}
	}
	lim := func(n int64) string { s := strconv.FormatInt(n, 10); return s + ":" + s }
	a = append(a, "--", st.prlim, "--cpu="+lim(sb.CPUSeconds), "--as="+lim(sb.AddressSpace), "--fsize="+lim(sb.FileSize), "--")
	// prlimit executes its argument by path with itself as argv[0]: the
	// program's own argv[0] is not kept (a login shell's "-bash" would
	// not be one).
	a = append(a, cmd.Path)
	if len(cmd.Args) > 1 {
		a = append(a, cmd.Args[1:]...)
	}
	cmd.Path, cmd.Args = st.bwrap, a
	// bwrap itself runs with the host's privileges, outside the sandbox:
	// it gets no variable of the caller's (LD_PRELOAD and the like would
	// run code in it), and starts in /.
	cmd.Env = []string{"PATH=" + DefaultPath}
	cmd.Dir = "/"
	return nil
}

// sandboxHostDir maps a sandbox directory of owner to its host directory,
// "" if it is in none of the owner's mounts.
func (m *Manager) sandboxHostDir(owner, dir string) string {
	mounts, err := m.cfg.Sandbox.Dirs(owner)
	if err != nil {
		return ""
	}
	h, ok := toHost(mounts, dir)
	if !ok {
		return ""
	}
	return h
}

// hostPID finds the host pid of the process of u whose pid in the
// sandbox's PID namespace is nsPid (the innermost NSpid of
// /proc/<pid>/status), 0 if none is.
func hostPID(u *unit, nsPid int) int {
	want := []byte(strconv.Itoa(nsPid))
	var buf [4096]byte
	for _, p := range unitProcs(u) {
		n := readSmall("/proc/"+strconv.Itoa(p)+"/status", buf[:])
		for _, line := range bytes.Split(buf[:n], []byte("\n")) {
			rest, ok := bytes.CutPrefix(line, []byte("NSpid:"))
			if !ok {
				continue
			}
			f := bytes.Fields(rest)
			if len(f) > 1 && bytes.Equal(f[len(f)-1], want) {
				return p
			}
		}
	}
	return 0
}

// CheckSandbox runs a trivial command in owner's sandbox and checks what
// it reports: the sandbox's uid, a read-only /usr and no network interface
// but loopback. It is what lockdown runs at start-up; the error says what did
// not work.
func (m *Manager) CheckSandbox(ctx context.Context, owner string) error {
	if m.cfg.Sandbox == nil {
		return errors.New("the process manager has no sandbox")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	script := `id -u; if touch /usr/.aiod-probe 2>/dev/null; then echo usr-writable; fi; echo net: $(tail -n +3 /proc/net/dev | cut -d: -f1); echo ok`
	res, err := m.Spawn(ctx, SpawnRequest{Owner: owner, Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: SandboxEnv(m.cfg.BaseEnv, "/"), Timeout: 15 * time.Second})
	if err != nil {
		return fmt.Errorf("sandbox start: %w", err)
	}
	out := string(res.Stdout)
	if res.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(out), "ok") {
		return fmt.Errorf("sandbox test command failed (exit %d, killed %q): %s", res.ExitCode, res.Killed, strings.TrimSpace(string(res.Stderr)+" "+out))
	}
	lines := strings.Split(out, "\n")
	if strings.TrimSpace(lines[0]) != strconv.Itoa(m.cfg.Sandbox.UID) {
		return fmt.Errorf("sandbox runs as uid %s, want %d", strings.TrimSpace(lines[0]), m.cfg.Sandbox.UID)
	}
	if strings.Contains(out, "usr-writable") {
		return errors.New("sandbox: /usr is writable")
	}
	ifs := "(none listed)"
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "net:"); ok {
			ifs = strings.TrimSpace(v)
		}
	}
	if ifs != "lo" {
		return fmt.Errorf("sandbox: network interfaces %s, want only loopback", ifs)
	}
	return nil
}
