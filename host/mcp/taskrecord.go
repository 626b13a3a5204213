package mcp

// This file is the tasks' records outside the process (tasks.go): when
// TaskOptions.Records is set (a store under --data-dir, or one every
// replica shares), each change of a task's status is written there, so a
// task is read by tasks/get on another replica, and a finished task's
// result after aiod restarts.

import (
	"context"
	"encoding/json"
	"time"
)

// TaskRecords keeps records by id for a while (host/store's Store is
// one): where the tasks' records outlive the process and are seen by
// every replica sharing it.
type TaskRecords interface {
	PutRecord(ctx context.Context, id string, val []byte, ttl time.Duration) error
	GetRecord(ctx context.Context, id string) ([]byte, bool, error)
}

// taskRecord is a task as it is kept in TaskRecords.
type taskRecord struct {
	Owner string   `json:"owner"`
	View  taskView `json:"view"`
}

func taskRecordID(id string) string { return "task/" + id }

// save writes t's record when there are records: now, in the order of
// the changes (a later change is never overwritten by an earlier one).
// t.mu is held.
func (t *task) save() {
	recs := t.s.taskOpts.Records
	if recs == nil || t.state != phaseEscalated {
		return
	}
	t.seq++
	seq := t.seq
	b, err := json.Marshal(taskRecord{Owner: t.owner, View: t.view(true)})
	if err != nil {
		return
	}
	ttl := time.Until(t.created.Add(t.ttl))
	if ttl <= 0 {
		return
	}
	var first chan struct{}
	if seq == 1 {
		first = make(chan struct{})
		t.firstSaved = first
	}
	t.s.taskSaves.Add(1)
	go func() {
		defer t.s.taskSaves.Done()
		if first != nil {
			defer close(first)
		}
		t.saveMu.Lock()
		defer t.saveMu.Unlock()
		if seq <= t.saved {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := recs.PutRecord(ctx, taskRecordID(t.id), b, ttl); err != nil {
			t.s.log.Warn("task record not written", "task", t.id, "err", err)
			return
		}
		t.saved = seq
	}()
}

// awaitFirstSave waits (at most d) until the task's first record is
// written, so that the CreateTaskResult's id is known to every replica
// before the client has it. The goroutine that added the task calls it.
func (t *task) awaitFirstSave(d time.Duration) {
	if t.firstSaved == nil {
		return
	}
	select {
	case <-t.firstSaved:
	case <-time.After(d):
	}
}

// recordedTask reads owner's task id from the records: a task of another
// replica, or of an earlier process. Nil when there is none for owner
// (or no records).
func (s *Server) recordedTask(owner, id string) (*taskView, *Error) {
	recs := s.taskOpts.Records
	if recs == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(s.base, 5*time.Second)
	defer cancel()
	b, ok, err := recs.GetRecord(ctx, taskRecordID(id))
	if err != nil {
		return nil, errf(CodeInternal, "internal error: the task records cannot be read: "+err.Error())
	}
	if !ok {
		return nil, nil
	}
	var r taskRecord
	if json.Unmarshal(b, &r) != nil || r.Owner != owner || r.View.TaskID != id {
		return nil, nil
	}
	return &r.View, nil
}

// waitTaskSaves waits (at most d) for the records being written.
func (s *Server) waitTaskSaves(d time.Duration) {
	done := make(chan struct{})
	go func() { s.taskSaves.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func taskCancelID(id string) string { return "task-cancel/" + id }

// requestCancel asks the replica running the task of rec to cancel it
// (a cancel request in the records, which that replica watches: watch);
// a finished task is left as it is.
func (s *Server) requestCancel(rec *taskView) *Error {
	if isTerminal(rec.Status) {
		return nil
	}
	created, err := time.Parse(time.RFC3339Nano, rec.CreatedAt)
	if err != nil {
		return errf(CodeInternal, "internal error: task "+rec.TaskID+" has a bad record")
	}
	ttl := time.Until(created.Add(time.Duration(rec.TTLMs) * time.Millisecond))
	if ttl <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.base, 5*time.Second)
	defer cancel()
	if err := s.taskOpts.Records.PutRecord(ctx, taskCancelID(rec.TaskID), []byte("1"), ttl); err != nil {
		return errf(CodeInternal, "internal error: the task's cancellation cannot be recorded: "+err.Error())
	}
	return nil
}

// cancelPoll is how often a running task looks for a cancel request made
// through another replica.
const cancelPoll = 250 * time.Millisecond

// watch cancels t when a cancel request for it appears in the records
// (requestCancel, on another replica), until t's run ends or the server
// closes. Only with records.
func (t *task) watch() {
	recs := t.s.taskOpts.Records
	if recs == nil {
		return
	}
	go func() {
		tick := time.NewTicker(cancelPoll)
		defer tick.Stop()
		for {
			select {
			case <-t.finished:
				return
			case <-t.s.base.Done():
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(t.s.base, 2*time.Second)
			_, asked, err := recs.GetRecord(ctx, taskCancelID(t.id))
			cancel()
			if err == nil && asked {
				t.cancelBy("cancelled by the client (through another replica)")
				return
			}
		}
	}()
}
