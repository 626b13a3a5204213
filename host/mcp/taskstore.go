package mcp

// This file is the store of the tasks extension (tasks.go): the tasks by
// id, their expiry and eviction, and the shutdown that ends them.

import (
	"errors"
	"sort"
	"sync"
	"time"
)

// taskStore holds the tasks by id.
type taskStore struct {
	mu     sync.Mutex
	byID   map[string]*task
	closed bool
}

// add makes t a task (visible to tasks/get) unless its run ended or
// stopped for MRTR input first; false then.
func (ts *taskStore) add(t *task) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done || t.state != phaseRunning {
		return false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return false
	}
	if ts.byID == nil {
		ts.byID = map[string]*task{}
	}
	ts.expireLocked(time.Now())
	ts.evictLocked(t.owner)
	t.state = phaseEscalated
	ts.byID[t.id] = t
	t.save()
	t.watch()
	return true
}

// maxFinishedPerOwner bounds the finished tasks kept for one owner: past
// it the oldest finished one goes before its ttl (the one exception to
// ttlMs, so that a client starting short tasks in a loop cannot grow the
// store without bound).
const maxFinishedPerOwner = 256

// evictLocked drops owner's oldest finished tasks beyond
// maxFinishedPerOwner - 1. ts.mu is held; the tasks' own locks are taken
// (never the other way round).
func (ts *taskStore) evictLocked(owner string) {
	var done []*task
	for _, t := range ts.byID {
		if t.owner != owner || t == nil {
			continue
		}
		if t.mu.TryLock() {
			if isTerminal(t.status) {
				done = append(done, t)
			}
			t.mu.Unlock()
		}
	}
	if len(done) < maxFinishedPerOwner {
		return
	}
	sort.Slice(done, func(i, j int) bool { return done[i].created.Before(done[j].created) })
	for _, t := range done[:len(done)-maxFinishedPerOwner+1] {
		delete(ts.byID, t.id)
	}
}

// expireLocked drops tasks past their ttl. ts.mu is held.
func (ts *taskStore) expireLocked(now time.Time) {
	for id, t := range ts.byID {
		if now.Sub(t.created) > t.ttl {
			t.cancel(errors.New("task expired"))
			delete(ts.byID, id)
		}
	}
}

// get finds owner's task id (nil for an unknown id or another owner's).
func (ts *taskStore) get(owner, id string) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.expireLocked(time.Now())
	t := ts.byID[id]
	if t == nil || t.owner != owner {
		return nil
	}
	return t
}

// running counts owner's unfinished tasks.
func (ts *taskStore) running(owner string) int {
	ts.mu.Lock()
	all := make([]*task, 0, len(ts.byID))
	for _, t := range ts.byID {
		if t.owner == owner {
			all = append(all, t)
		}
	}
	ts.mu.Unlock()
	n := 0
	for _, t := range all {
		t.mu.Lock()
		if !isTerminal(t.status) {
			n++
		}
		t.mu.Unlock()
	}
	return n
}

// close fails every unfinished task (aiod is shutting down) and cancels
// its run; it does not wait for the runs.
func (ts *taskStore) close() {
	ts.mu.Lock()
	ts.closed = true
	all := make([]*task, 0, len(ts.byID))
	for _, t := range ts.byID {
		all = append(all, t)
	}
	ts.mu.Unlock()
	for _, t := range all {
		t.mu.Lock()
		if !isTerminal(t.status) {
			t.status, t.message = taskFailed, errTaskShutdown.Error()
			t.err = errf(CodeInternal, errTaskShutdown.Error()+": the task was ended")
			t.updated = time.Now()
			t.pending = nil
			t.wakeLocked()
			t.save()
		}
		t.mu.Unlock()
		t.cancel(errTaskShutdown)
	}
}

func isTerminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}
