//go:build linux

package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroups is the manager's cgroup parent: one directory per controller
// hierarchy (v1) or one in the unified hierarchy (v2), under which every
// unit gets a child with its limits.
type cgroups struct {
	v2 bool
	// pids (v1: the pids hierarchy; v2: the unified one) and mem (v1: the
	// memory hierarchy, "" without a memory limit; v2: unused) are the
	// manager's parent directories; pidsHome and memHome are the host's
	// own cgroups there, where a thread returns to after starting a unit.
	pids, pidsHome string
	mem, memHome   string
	maxMem         int64 // bytes per unit, 0 = none
	seq            atomic.Uint64
	spawnState
}

// unitCgroup is the cgroup of one unit.
type unitCgroup struct {
	v2   bool
	pids string // v1: the unit's pids cgroup; v2: its only cgroup
	mem  string // v1: its memory cgroup, "" without a memory limit
	// hostLeft, when not nil, is closed once the spawner thread that
	// forked the unit's first process has left the cgroup
	hostLeft chan struct{}
}

// cgroupMount is a mounted cgroup hierarchy.
type cgroupMount struct {
	root, dir string // the mount's root in the hierarchy, its mount point
}

// path maps the host's cgroup path in this hierarchy to a directory, or ""
// if the host's cgroup is not visible under the mount.
func (mt cgroupMount) path(cg string) string {
	rel, ok := strings.CutPrefix(cg, mt.root)
	if !ok || (rel != "" && rel[0] != '/' && mt.root != "/") {
		return ""
	}
	return filepath.Join(mt.dir, rel)
}

// cgroupMounts reads /proc/self/mountinfo: the unified mount (v2) and the
// v1 mounts by controller.
func cgroupMounts() (v2 cgroupMount, v1 map[string]cgroupMount, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return v2, nil, err
	}
	defer f.Close()
	v1 = map[string]cgroupMount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, sf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(sf) < 3 {
			continue
		}
		mt := cgroupMount{root: unescapeMount(pf[3]), dir: unescapeMount(pf[4])}
		switch sf[0] {
		case "cgroup2":
			if v2.dir == "" {
				v2 = mt
			}
		case "cgroup":
			for _, o := range strings.Split(sf[2], ",") {
				if _, dup := v1[o]; !dup {
					v1[o] = mt
				}
			}
		}
	}
	return v2, v1, sc.Err()
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups reads /proc/self/cgroup: the host's cgroup by v1 controller,
// and in the unified hierarchy ("" if none).
func ownCgroups() (v2 string, v1 map[string]string, err error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", nil, err
	}
	v1 = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	return v2, v1, nil
}

// newCgroups makes the manager's cgroup parent: in the unified hierarchy
// where the host's cgroup delegates the pids controller, else in the v1
// pids (and memory) hierarchies. It returns the reason when it cannot.
// memNote says why a memory limit is not enforced ("" if it is or none was
// asked for).
func newCgroups(maxMem int64) (c *cgroups, memNote string, err error) {
	mv2, mv1, err := cgroupMounts()
	if err != nil {
		return nil, "", fmt.Errorf("read mounts: %w", err)
	}
	own2, own1, err := ownCgroups()
	if err != nil {
		return nil, "", fmt.Errorf("read own cgroup: %w", err)
	}
	name := fmt.Sprintf("aiod-%d-%s", os.Getpid(), randomToken()[:8])
	var errs []error
	if mv2.dir != "" {
		home := mv2.path(own2)
		c, memNote, err := newCgroupsV2(home, name, maxMem)
		if err == nil {
			return c, memNote, nil
		}
		errs = append(errs, fmt.Errorf("cgroup v2: %w", err))
	}
	if mt, ok := mv1["pids"]; ok {
		c, memNote, err := newCgroupsV1(mt.path(own1["pids"]), name, maxMem, mv1, own1)
		if err == nil {
			return c, memNote, nil
		}
		errs = append(errs, fmt.Errorf("cgroup v1: %w", err))
	} else {
		errs = append(errs, errors.New("no cgroup v1 pids hierarchy"))
	}
	return nil, "", errors.Join(errs...)
}

func newCgroupsV2(home, name string, maxMem int64) (*cgroups, string, error) {
	if home == "" {
		return nil, "", errors.New("own cgroup not under the mount")
	}
	ctrl, err := os.ReadFile(filepath.Join(home, "cgroup.controllers"))
	if err != nil {
		return nil, "", err
	}
	have := strings.Fields(string(ctrl))
	if !contains(have, "pids") {
		return nil, "", errors.New("no pids controller in " + home)
	}
	want := []string{"pids"}
	memNote := ""
	if maxMem > 0 {
		if contains(have, "memory") {
			want = append(want, "memory")
		} else {
			memNote = "no memory controller in " + home
			maxMem = 0
		}
	}
	// The host's cgroup must hand the controllers to its children. A
	// cgroup with processes (the host's) can do so only at the root;
	// a delegated subtree where aiod is alone already has them enabled.
	sub := filepath.Join(home, "cgroup.subtree_control")
	if err := enableControllers(sub, want); err != nil {
		return nil, "", fmt.Errorf("host cgroup does not delegate: %w", err)
	}
	parent := filepath.Join(home, name)
	if err := os.Mkdir(parent, 0o755); err != nil {
		return nil, "", err
	}
	if err := enableControllers(filepath.Join(parent, "cgroup.subtree_control"), want); err != nil {
		_ = os.Remove(parent)
		return nil, "", err
	}
	c := &cgroups{v2: true, pids: parent, pidsHome: home, maxMem: maxMem}
	// Probe CLONE_INTO_CGROUP (clone3, Linux 5.7) with a program that
	// does not exist: the clone happens, the exec fails with ENOENT.
	probe, err := c.create(2)
	if err == nil {
		err = probe.probeStart()
		probe.remove()
	}
	if err != nil {
		_ = os.Remove(parent)
		return nil, "", fmt.Errorf("start into a cgroup: %w", err)
	}
	return c, memNote, nil
}

func enableControllers(file string, want []string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	have := strings.Fields(string(b))
	var add []string
	for _, w := range want {
		if !contains(have, w) {
			add = append(add, "+"+w)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return writeCg(file, strings.Join(add, " "))
}

func newCgroupsV1(home, name string, maxMem int64, mounts map[string]cgroupMount, own map[string]string) (*cgroups, string, error) {
	if home == "" {
		return nil, "", errors.New("own pids cgroup not under the mount")
	}
	c := &cgroups{pids: filepath.Join(home, name), pidsHome: home}
	memNote := ""
	if maxMem > 0 {
		mt, ok := mounts["memory"]
		if mh := mt.path(own["memory"]); ok && mh != "" {
			c.mem, c.memHome, c.maxMem = filepath.Join(mh, name), mh, maxMem
		} else {
			memNote = "no cgroup v1 memory hierarchy"
		}
	}
	if err := os.Mkdir(c.pids, 0o755); err != nil {
		return nil, "", err
	}
	if c.mem != "" {
		if err := os.Mkdir(c.mem, 0o755); err != nil {
			memNote = fmt.Sprintf("memory cgroup: %v", err)
			c.mem, c.memHome, c.maxMem = "", "", 0
		}
	}
	// Probe the thread move a start does: into the parent and back.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- c.onThreadIn(&unitCgroup{pids: c.pids, mem: c.mem}, func() error { return nil })
	}()
	if err := <-errc; err != nil {
		c.close()
		return nil, "", fmt.Errorf("move a thread into a cgroup: %w", err)
	}
	return c, memNote, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeCg writes one value to a cgroup file.
func writeCg(file, v string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// create makes the cgroup of a new unit, limited to limit tasks.
func (c *cgroups) create(limit int) (*unitCgroup, error) {
	name := "u" + strconv.FormatUint(c.seq.Add(1), 10)
	cg := &unitCgroup{v2: c.v2, pids: filepath.Join(c.pids, name)}
	if err := os.Mkdir(cg.pids, 0o755); err != nil {
		return nil, err
	}
	// On v1 the starting thread sits in the unit's cgroup during the
	// fork and counts: one slot is lent to it and taken back after.
	n := limit
	if !c.v2 {
		n = max(limit, 2)
	}
	err := writeCg(filepath.Join(cg.pids, "pids.max"), strconv.Itoa(n))
	if err == nil && c.maxMem > 0 {
		mem := strconv.FormatInt(c.maxMem, 10)
		if c.v2 {
			err = writeCg(filepath.Join(cg.pids, "memory.max"), mem)
		} else {
			cg.mem = filepath.Join(c.mem, name)
			if err = os.Mkdir(cg.mem, 0o755); err == nil {
				err = writeCg(filepath.Join(cg.mem, "memory.limit_in_bytes"), mem)
			} else {
				cg.mem = ""
			}
		}
	}
	if err != nil {
		cg.remove()
		return nil, fmt.Errorf("unit cgroup: %w", err)
	}
	return cg, nil
}

// start starts cmd inside cg, so that its first process, and every process
// it forks, is counted against the unit's limits from the start.
//
// v2 clones straight into the cgroup (CLONE_INTO_CGROUP). v1 has no such
// flag, but a v1 cgroup holds threads, not processes, and a fork lands in
// the cgroup of the forking thread: the start runs on a locked OS thread
// that is moved into the unit's cgroup for the fork and back after it.
func (c *cgroups) start(cg *unitCgroup, cmd *exec.Cmd, limit int) error {
	if c.v2 {
		fd, err := syscall.Open(cg.pids, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("unit cgroup: %w", err)
		}
		defer syscall.Close(fd)
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- c.onThreadIn(cg, cmd.Start)
	}()
	if err := <-errc; err != nil {
		return err
	}
	if limit < 2 {
		return writeCg(filepath.Join(cg.pids, "pids.max"), strconv.Itoa(limit))
	}
	return nil
}

// errStuck marks a thread that could not leave a unit's cgroup.
var errStuck = errors.New("thread cannot leave the unit cgroup")

// onThreadIn runs fn with the calling OS thread, which the caller has
// locked, in cg's v1 cgroups, then moves it home and unlocks it. If it
// cannot move home the thread stays locked, so that the runtime ends it
// when the goroutine exits: no host thread stays in a unit's cgroup (a
// process it started gets its parent-death signal).
func (c *cgroups) onThreadIn(cg *unitCgroup, fn func() error) error {
	tid := strconv.Itoa(syscall.Gettid())
	err := writeCg(filepath.Join(cg.pids, "tasks"), tid)
	if err == nil && cg.mem != "" {
		err = writeCg(filepath.Join(cg.mem, "tasks"), tid)
	}
	if err == nil {
		err = fn()
	}
	var back []error
	if e := writeCg(filepath.Join(c.pidsHome, "tasks"), tid); e != nil {
		back = append(back, e)
	}
	if cg.mem != "" {
		if e := writeCg(filepath.Join(c.memHome, "tasks"), tid); e != nil {
			back = append(back, e)
		}
	}
	if len(back) > 0 {
		return fmt.Errorf("%w: %w", errStuck, errors.Join(append(back, err)...))
	}
	runtime.UnlockOSThread()
	return err
}

// probeStart starts a program that does not exist into cg.
func (cg *unitCgroup) probeStart() error {
	fd, err := syscall.Open(cg.pids, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	p, err := os.StartProcess(filepath.Join(os.TempDir(), "aiod-cg-probe-"+randomToken()), []string{"probe"},
		&os.ProcAttr{Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}})
	if err == nil {
		_ = p.Kill()
		_, _ = p.Wait()
		return nil
	}
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}

// limitHit reports whether the kernel refused the unit a fork (the "max"
// count of pids.events, in v1 and v2).
func (cg *unitCgroup) limitHit() bool {
	var buf [128]byte
	n := readSmall(filepath.Join(cg.pids, "pids.events"), buf[:])
	for _, line := range bytes.Split(buf[:n], []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("max ")); ok {
			return string(bytes.TrimSpace(v)) != "0"
		}
	}
	return false
}

func readSmall(file string, buf []byte) int {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	n, _ := f.Read(buf)
	return n
}

// procs lists the processes in the unit's cgroup (zombies are not listed),
// never the host's own (the spawner's thread may be there for a moment).
func (cg *unitCgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(cg.pids, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var ps []int
	for _, f := range bytes.Fields(b) {
		if p, err := strconv.Atoi(string(f)); err == nil && p > 0 && p != selfPid {
			ps = append(ps, p)
		}
	}
	return ps
}

// count is the number of tasks in the unit's cgroup and the most it has
// had, -1 if unknown.
func (cg *unitCgroup) count() (cur, peak int) {
	read := func(name string) int {
		var buf [32]byte
		n := readSmall(filepath.Join(cg.pids, name), buf[:])
		v, err := strconv.Atoi(string(bytes.TrimSpace(buf[:n])))
		if err != nil {
			return -1
		}
		return v
	}
	return read("pids.current"), read("pids.peak")
}

// kill SIGKILLs every process in the cgroup until none is left (or 100
// rounds have passed): its tasks cannot fork past pids.max meanwhile.
// It reports whether the cgroup is empty.
func (cg *unitCgroup) kill() bool {
	if cg.v2 {
		_ = writeCg(filepath.Join(cg.pids, "cgroup.kill"), "1")
	}
	for range 100 {
		ps := cg.procs()
		if len(ps) == 0 {
			return true
		}
		for _, p := range ps {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
	return len(cg.procs()) == 0
}

// remove kills what is left in the unit's cgroup and removes it. It
// reports whether the directories are gone.
func (cg *unitCgroup) remove() bool {
	if cg.hostInside() {
		return false // retried once the spawner's thread has left
	}
	ok := true
	for _, d := range []string{cg.pids, cg.mem} {
		if d == "" {
			continue
		}
		err := os.Remove(d)
		if errors.Is(err, syscall.EBUSY) {
			cg.kill()
			err = os.Remove(d)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			ok = false
		}
	}
	return ok
}

// close removes the manager's parent directories; it fails while a unit's
// cgroup is still in them.
func (c *cgroups) close() bool {
	ok := true
	for _, d := range []string{c.pids, c.mem} {
		if d == "" {
			continue
		}
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			ok = false
		}
	}
	return ok
}

// cleanStale removes the cgroup parents left by an aiod that died without
// Close (aiod-<pid>-<token> whose pid is not running), killing what is left
// in them.
func (c *cgroups) cleanStale() {
	homes := []string{c.pidsHome}
	if c.memHome != "" {
		homes = append(homes, c.memHome)
	}
	for _, home := range homes {
		ents, err := os.ReadDir(home)
		if err != nil {
			continue
		}
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), "aiod-")
			if !e.IsDir() || !ok {
				continue
			}
			ps, _, ok := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(ps)
			if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
				continue
			}
			if _, err := os.Stat("/proc/" + ps); err == nil || !errors.Is(err, os.ErrNotExist) {
				continue // alive, or unknown
			}
			dir := filepath.Join(home, e.Name())
			units, _ := os.ReadDir(dir)
			for _, u := range units {
				if u.IsDir() {
					(&unitCgroup{v2: c.v2, pids: filepath.Join(dir, u.Name())}).remove()
				}
			}
			_ = os.Remove(dir)
		}
	}
}

func (c *cgroups) isV2() bool { return c.v2 }
