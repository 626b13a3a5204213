//go:build linux

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// The spawner (cgroup v1). A v1 cgroup holds threads, and a fork lands in
// the cgroup of the forking thread, so a unit's first process starts from
// a host thread moved into the unit's cgroup. Moving a thread takes the
// kernel's global cgroup lock for writing, which waits for an RCU grace
// period: milliseconds on a busy machine (10 ms and more, measured), on
// every start. The spawner takes that wait off the start: locked OS
// threads (spawnThreads) each of which, ahead of need, creates the next unit's cgroup (with the
// unit's limits) and moves itself into it, then waits. A start hands it
// the command; it forks there, answers, and moves on into the cgroup after
// (which takes it out of the one it forked in). The unit is contained from
// its first instruction as before; what differs is that the host thread
// stays in the unit's cgroup until that move is done (one of its pids.max
// slots, as the synchronous start lends it one for the fork), so the
// unit's kill skips the host's own pid and its cgroup is removed once the
// thread has left. A start that finds every spawner thread busy (another
// start, or its move under way) starts synchronously as before.
type spawner struct {
	c     *cgroups
	limit int
	reqs  chan spawnReq
	stop  chan struct{}
	done  sync.WaitGroup

	stopOnce sync.Once
}

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan spawnReply
}

type spawnReply struct {
	cg  *unitCgroup
	err error
}

// spawnThreads is how many threads wait, each in a prepared cgroup: while
// one moves on after a start (a grace period), the next start takes
// another.
const spawnThreads = 2

// startSpawner starts c's spawner for units of limit tasks, once (v1).
func (c *cgroups) startSpawner(limit int) *spawner {
	c.spawnOnce.Do(func() {
		s := &spawner{c: c, limit: limit, reqs: make(chan spawnReq), stop: make(chan struct{})}
		c.spawn = s
		s.done.Add(spawnThreads)
		for range spawnThreads {
			go s.run()
		}
	})
	return c.spawn
}

// stopSpawner stops the spawner (its thread goes home and its prepared
// cgroup is removed) and waits for it.
func (c *cgroups) stopSpawner() {
	c.spawnOnce.Do(func() {}) // none may start after this
	if s := c.spawn; s != nil {
		s.stopOnce.Do(func() { close(s.stop) })
		s.done.Wait()
	}
}

// try starts cmd in a prepared cgroup if the spawner is waiting with one
// (ok false: it is not, start synchronously).
func (s *spawner) try(cmd *exec.Cmd) (cg *unitCgroup, err error, ok bool) {
	reply := make(chan spawnReply, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, reply: reply}:
	default:
		return nil, nil, false
	}
	r := <-reply
	return r.cg, r.err, true
}

func (s *spawner) run() {
	runtime.LockOSThread()
	if syscall.Gettid() == selfPid {
		// the main thread stays the host's: another one (this one is
		// held until it is taken, so the goroutine runs elsewhere)
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			s.loop()
		}()
		<-locked
		runtime.UnlockOSThread()
		return
	}
	s.loop()
}

// loop is the spawner's work, on its locked thread.
func (s *spawner) loop() {
	defer s.done.Done()
	tid := strconv.Itoa(syscall.Gettid())
	// left is closed once the thread is out of the cgroup of the unit it
	// last started
	var left chan struct{}
	out := func() {
		if left != nil {
			close(left)
			left = nil
		}
	}
	defer out()
	for {
		next, err := s.c.create(s.limit)
		if err == nil {
			err = s.c.moveThread(tid, next)
		}
		if err != nil {
			// home, and no more: starts are synchronous from now on
			home := s.c.moveHome(tid)
			if next != nil {
				next.remove()
			}
			s.c.spawnDown.Store(true)
			if home {
				runtime.UnlockOSThread()
			} // else the thread ends with this goroutine, still locked
			return
		}
		out()
		select {
		case r := <-s.reqs:
			err := r.cmd.Start()
			if err == nil && s.limit < 2 {
				err = writeCg(filepath.Join(next.pids, "pids.max"), strconv.Itoa(s.limit))
			}
			left = make(chan struct{})
			next.hostLeft = left
			r.reply <- spawnReply{cg: next, err: err}
		case <-s.stop:
			if s.c.moveHome(tid) {
				next.remove()
				runtime.UnlockOSThread()
			}
			return
		}
	}
}

// moveThread moves thread tid into cg.
func (c *cgroups) moveThread(tid string, cg *unitCgroup) error {
	if err := writeCg(filepath.Join(cg.pids, "tasks"), tid); err != nil {
		return err
	}
	if cg.mem != "" {
		return writeCg(filepath.Join(cg.mem, "tasks"), tid)
	}
	return nil
}

// moveHome moves thread tid back to the host's cgroups; false if it could
// not.
func (c *cgroups) moveHome(tid string) bool {
	ok := writeCg(filepath.Join(c.pidsHome, "tasks"), tid) == nil
	if c.memHome != "" {
		ok = writeCg(filepath.Join(c.memHome, "tasks"), tid) == nil && ok
	}
	return ok
}

// hostInside reports whether the spawner thread may still be in the
// unit's cgroup.
func (cg *unitCgroup) hostInside() bool {
	if cg.hostLeft == nil {
		return false
	}
	select {
	case <-cg.hostLeft:
		return false
	default:
		return true
	}
}

// startUnit creates a unit's cgroup and starts cmd in it: in a prepared
// one when the spawner has it ready (v1), else as start does.
func (c *cgroups) startUnit(cmd *exec.Cmd, limit int) (*unitCgroup, error) {
	if !c.v2 && !c.spawnDown.Load() {
		if cg, err, ok := c.startSpawner(limit).try(cmd); ok {
			return cg, err
		}
	}
	cg, err := c.create(limit)
	if err != nil {
		return nil, err
	}
	return cg, c.start(cg, cmd, limit)
}

var selfPid = os.Getpid()

// spawnState is the cgroups' spawner state (v1).
type spawnState struct {
	spawnOnce sync.Once
	spawn     *spawner
	spawnDown atomic.Bool // the spawner could not prepare a cgroup: it stopped for good
}
