package mcp

// This file is one task of the tasks extension (tasks.go): its state,
// its outcome, its view on the wire, and its input and progress while
// it runs.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
)

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// errTaskShutdown ends the tasks still running when the server closes.
var errTaskShutdown = errors.New("aiod is shutting down")

// task is one tools/call run as a task.
type task struct {
	id      string
	owner   string
	created time.Time
	ttl     time.Duration // how long the record is kept after created
	cancel  context.CancelCauseFunc
	s       *Server

	mu        sync.Mutex
	state     int // phaseRunning, phaseEscalated, phaseMRTR (ending for MRTR input)
	done      bool
	status    string
	message   string
	updated   time.Time
	result    json.RawMessage // completed
	err       *Error          // failed
	pending   map[string]inputRequest
	answers   map[string]json.RawMessage
	wake      chan struct{} // closed when pending empties
	finished  chan struct{} // closed when the run returns
	syncRes   []byte        // the run's outcome before it became a task
	syncErr   *Error
	lastWrite time.Time
	slot      func() // the request's admission, held until the run ends (Exchange.Hold)
	seq       int    // changes to save (taskrecord.go)
	// firstSaved is closed once the first record is written (nil
	// without records)
	firstSaved chan struct{}

	saveMu sync.Mutex
	saved  int // the last change saved
}

const (
	phaseRunning = iota
	phaseEscalated
	phaseMRTR
)

// hold keeps release (the request's admission) until the task's run
// ends: a task counts against its tenant's concurrent_calls quota for as
// long as it runs, not only while its request was open.
func (t *task) hold(release func()) {
	if release == nil {
		return
	}
	t.mu.Lock()
	if t.done { // the run ended already
		t.mu.Unlock()
		release()
		return
	}
	t.slot = release
	t.mu.Unlock()
}

// requestedTTL reads a client's wish for the task's lifetime:
// params.task.ttlMs (or the v1 spelling params.task.ttl), in ms.
func requestedTTL(params json.RawMessage) time.Duration {
	var p struct {
		Task *struct {
			TTLMs *int64 `json:"ttlMs"`
			TTL   *int64 `json:"ttl"`
		} `json:"task"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.Task == nil {
		return 0
	}
	for _, v := range []*int64{p.Task.TTLMs, p.Task.TTL} {
		if v != nil && *v > 0 {
			return time.Duration(*v) * time.Millisecond
		}
	}
	return 0
}

// newTaskID is a task id's random part; the server puts its replica tag
// and "." before it (--replica-id), as before a session id, so that a
// load balancer sends tasks/get, tasks/update and tasks/cancel (whose
// Mcp-Name header carries the task id) to the replica running the task.
func newTaskID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// finish records the run's outcome: the answer of a call that did not
// become a task, or the task's terminal status.
func (t *task) finish(res []byte, rerr *Error, ctx context.Context) {
	t.mu.Lock()
	defer func() {
		// the slot is free before the terminal status can be read: a
		// client that sees its task completed may call again at once
		if t.slot != nil {
			t.slot()
			t.slot = nil
		}
		t.mu.Unlock()
		close(t.finished)
	}()
	t.done = true
	if t.state != phaseEscalated {
		t.syncRes, t.syncErr = res, rerr
		return
	}
	if t.status == taskCancelled || t.status == taskFailed {
		return // cancelled or ended by shutdown already
	}
	switch {
	case ctx.Err() != nil:
		// the deadline (or expiry) ended the run: whatever the plugin
		// answered on its way out, the task did not finish its work
		cause := context.Cause(ctx)
		t.status, t.err = taskFailed, errf(CodeInternal, cause.Error())
		t.message = cause.Error()
	case rerr == nil:
		t.status, t.result = taskCompleted, json.RawMessage(res)
	default:
		t.status, t.err = taskFailed, rerr
	}
	t.touch()
}

// touch marks a change of status and tells listening clients. t.mu is held.
func (t *task) touch() {
	t.updated = time.Now()
	t.save()
	v := t.view(true)
	go t.s.notifyTask(t.owner, v)
}

// taskView is a task on the wire: CreateTaskResult's fields, and
// DetailedTask's when full.
type taskView struct {
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          int64                   `json:"ttlMs"`
	PollIntervalMs int64                   `json:"pollIntervalMs"`
	Result         json.RawMessage         `json:"result,omitempty"`
	Error          *wireError              `json:"error,omitempty"`
	InputRequests  map[string]inputRequest `json:"inputRequests,omitempty"`
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// view renders t. t.mu is held (or t is not yet shared).
func (t *task) view(full bool) taskView {
	v := taskView{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs: t.ttl.Milliseconds(), PollIntervalMs: defaultTaskPollInterval}
	if !full {
		return v
	}
	switch t.status {
	case taskCompleted:
		v.Result = t.result
	case taskFailed:
		if t.err != nil {
			v.Error = &wireError{Code: t.err.Code, Message: t.err.Message, Data: t.err.Data}
		}
	case taskInputRequired:
		v.InputRequests = make(map[string]inputRequest, len(t.pending))
		for k, r := range t.pending {
			v.InputRequests[k] = r
		}
	}
	return v
}

// input answers a plugin's input requests inside a task-capable call.
// Before the call became a task they go the MRTR way (an unanswered
// request ends the run with input_required, and the call never becomes a
// task); once it is a task, they park the task in input_required until
// tasks/update answers all of them.
func (t *task) input(ctx context.Context, rc *rpcCall, keys []string, reqs map[string]inputRequest) ([]byte, error) {
	t.mu.Lock()
	if t.state != phaseEscalated {
		b, err := rc.mrtrInput(keys, reqs)
		var ce *hostfn.ClientError
		if errors.As(err, &ce) && errors.Is(ce.Kind, hostfn.ErrClientInputRequired) {
			t.state = phaseMRTR
		}
		t.mu.Unlock()
		return b, err
	}
	out := map[string]json.RawMessage{}
	var missing []string
	for _, k := range keys {
		// answers collected in the MRTR rounds before the task count once
		if m := rc.mrtr; m != nil && m.answers[k] != nil && !m.asked[k] {
			out[k] = m.answers[k]
			if m.asked == nil {
				m.asked = map[string]bool{}
			}
			m.asked[k] = true
			continue
		}
		missing = append(missing, k)
	}
	if len(missing) == 0 {
		t.mu.Unlock()
		return json.Marshal(out)
	}
	if isTerminal(t.status) {
		t.mu.Unlock()
		return nil, clientErr(hostfn.ErrClientUnavailable, "the task has ended")
	}
	if t.pending == nil {
		t.pending = map[string]inputRequest{}
	}
	for _, k := range missing {
		t.pending[k] = reqs[k]
		delete(t.answers, k)
	}
	t.wake = make(chan struct{})
	wake := t.wake
	t.status = taskInputRequired
	t.touch()
	t.mu.Unlock()
	select {
	case <-wake:
	case <-ctx.Done():
		return nil, clientErr(hostfn.ErrClientTimeout, "no answer to the task's input requests: %v", context.Cause(ctx))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if isTerminal(t.status) {
		return nil, clientErr(hostfn.ErrClientUnavailable, "the task has ended")
	}
	for _, k := range missing {
		a, ok := t.answers[k]
		if !ok {
			return nil, clientErr(hostfn.ErrClientUnavailable, "input request %s was not answered", k)
		}
		out[k] = a
		delete(t.answers, k)
	}
	t.status = taskWorking
	t.touch()
	return json.Marshal(out)
}

// wakeLocked releases a run waiting for input. t.mu is held.
func (t *task) wakeLocked() {
	if t.wake != nil {
		close(t.wake)
		t.wake = nil
	}
}

// notify keeps a task's progress as its status message (the request that
// could have carried notifications/progress is gone).
func (t *task) notify(kind string, params any) {
	m, ok := params.(map[string]any)
	if !ok || kind != "notifications/progress" {
		return
	}
	msg, _ := m["message"].(string)
	if msg == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == phaseEscalated && !isTerminal(t.status) && msg != t.message {
		t.message = msg
		t.updated = time.Now()
		// status notifications only for status changes, at most a few a
		// second for messages
		if time.Since(t.lastWrite) > 250*time.Millisecond {
			t.lastWrite = t.updated
			v := t.view(false)
			go t.s.notifyTask(t.owner, v)
		}
	}
}
