package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
)

// This file is the tasks extension of 2026-07-28 (SEP-2663,
// io.modelcontextprotocol/tasks): a tools/call of a tool that declares
// execution.taskSupport may outlive its HTTP request. The call starts as
// an ordinary request; when it is still running after TaskOptions.Grace
// (and asked the client nothing it could not answer yet) it becomes a
// task: the response is a CreateTaskResult, the run goes on under the
// task's own deadline, and the client polls tasks/get, answers input
// through tasks/update and stops it with tasks/cancel. Tasks live in
// memory, per owner: a task id presented by another owner is unknown.

// extTasks is the extension's identifier, in capabilities.extensions.
const extTasks = "io.modelcontextprotocol/tasks"

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// Defaults of TaskOptions.
const (
	DefaultTaskGrace        = 500 * time.Millisecond
	DefaultTaskDeadline     = 30 * time.Minute
	DefaultTaskMaxDeadline  = 2 * time.Hour
	DefaultTaskRetention    = 10 * time.Minute
	DefaultTaskMaxPerOwner  = 16
	defaultTaskPollInterval = 500 // ms
)

// TaskOptions bound the tasks extension.
type TaskOptions struct {
	// Grace is how long a task-capable call runs as a plain request
	// before it becomes a task; a call done sooner is answered directly.
	Grace time.Duration
	// Deadline is a task's run time unless the client asks for less or
	// more (params.task.ttlMs), never more than MaxDeadline; a task still
	// running at its deadline fails.
	Deadline, MaxDeadline time.Duration
	// Retention is how long a task is kept once its deadline has passed:
	// a task can be polled for Deadline + Retention after its creation
	// (its ttlMs).
	Retention time.Duration
	// MaxPerOwner bounds the tasks of one owner not yet finished.
	MaxPerOwner int
}

func (o TaskOptions) withDefaults() TaskOptions {
	if o.Grace <= 0 {
		o.Grace = DefaultTaskGrace
	}
	if o.MaxDeadline <= 0 {
		o.MaxDeadline = DefaultTaskMaxDeadline
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultTaskDeadline
	}
	o.Deadline = min(o.Deadline, o.MaxDeadline)
	if o.Retention <= 0 {
		o.Retention = DefaultTaskRetention
	}
	if o.MaxPerOwner <= 0 {
		o.MaxPerOwner = DefaultTaskMaxPerOwner
	}
	return o
}

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
}

const (
	phaseRunning = iota
	phaseEscalated
	phaseMRTR
)

// taskStore holds the tasks by id.
type taskStore struct {
	mu     sync.Mutex
	byID   map[string]*task
	closed bool
}

// taskSupport is the declared execution.taskSupport of a tool ("" when
// it declares none, or the tool is unknown).
func (s *Server) taskSupport(name *string) string {
	if name == nil || s.cat == nil {
		return ""
	}
	return s.cat.Snapshot().TaskSupport(*name)
}

// declaresExtension reports whether client capabilities list extension id.
func declaresExtension(caps json.RawMessage, id string) bool {
	if len(caps) < 20 {
		return false
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	v, ok := c.Extensions[id]
	return ok && string(v) != "null"
}

func missingTasksCapability(what string) *Error {
	return &Error{Code: CodeMissingCapability,
		Message: what + " needs the client to declare the " + extTasks + " extension",
		Data:    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{extTasks: map[string]any{}}}}}
}

// taskCall serves a tools/call of a task-capable tool for a client that
// declared the extension: answered directly when it ends (or stops for
// MRTR input) within the grace period, else as a CreateTaskResult.
func (s *Server) taskCall(ctx context.Context, ex *Exchange, rc *rpcCall) *Response {
	o := s.taskOpts
	owner := rc.ex.Principal.owner()
	if n := s.tasks.running(owner); n >= o.MaxPerOwner {
		return rc.reply(nil, errf(CodeInternal, "task limit reached: this tenant has "+strconv.Itoa(n)+" unfinished tasks (at most "+strconv.Itoa(o.MaxPerOwner)+"); wait for one or cancel one"))
	}
	deadline := o.Deadline
	if want := requestedTTL(rc.req.Params); want > 0 {
		deadline = min(want, o.MaxDeadline)
	}
	now := time.Now()
	t := &task{id: newTaskID(), owner: owner, created: now, updated: now, ttl: deadline + o.Retention,
		s: s, status: taskWorking, finished: make(chan struct{})}
	// The run keeps the request's values (principal, tracing) but not its
	// cancellation once it is a task; the server's shutdown and the
	// task's deadline end it.
	base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	runCtx, cancelT := context.WithTimeoutCause(base, deadline, errors.New("task deadline exceeded"))
	stopBase := context.AfterFunc(s.base, func() { cancel(errTaskShutdown) })
	t.cancel = func(err error) { cancel(err); cancelT() }
	if e := rc.detach(ex); e != nil {
		return rc.reply(nil, e)
	}
	rc.task = t
	rc.q = nil
	go func() {
		defer stopBase()
		res, rerr := rc.dispatch(runCtx)
		t.finish(res, rerr, runCtx)
	}()
	timer := time.NewTimer(o.Grace)
	defer timer.Stop()
	var gone <-chan struct{}
	if ex.Context != nil {
		gone = ex.Context.Done()
	}
	select {
	case <-t.finished:
	case <-timer.C:
		if s.tasks.add(t) {
			if ex.Hold != nil {
				t.hold(ex.Hold())
			}
			b, _ := json.Marshal(struct {
				ResultType string `json:"resultType"`
				taskView
			}{"task", t.view(false)})
			return &Response{Status: 200, Body: resultResponse(rc.req.ID, s.modernResult(b, "task"))}
		}
		<-t.finished
	case <-gone: // the client closed the request before it became a task
		t.cancel(context.Canceled)
		<-t.finished
	case <-ctx.Done():
		t.cancel(context.Canceled)
		<-t.finished
	}
	t.cancel(context.Canceled)
	return rc.reply(t.syncRes, t.syncErr)
}

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

// ---- the store ----

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
		}
		t.mu.Unlock()
		t.cancel(errTaskShutdown)
	}
}

func isTerminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// ---- input: MRTR before the task exists, tasks/update after ----

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

// ---- the methods ----

// taskMethod checks a tasks/* request: the client declared the
// extension, names a task id, and the task is the caller's.
func (rc *rpcCall) taskMethod(method string) (*task, *Error) {
	if rc.era != Modern {
		return nil, errf(CodeMethodNotFound, "Method not found: "+method+" is served in protocol "+modernVersion+" only")
	}
	if !declaresExtension(rc.caps.Raw, extTasks) {
		return nil, missingTasksCapability(method)
	}
	if rc.p.TaskID == nil || *rc.p.TaskID == "" {
		return nil, errf(CodeInvalidParams, "Invalid params: taskId is required")
	}
	t := rc.s.tasks.get(rc.ex.Principal.owner(), *rc.p.TaskID)
	if t == nil {
		return nil, unknownTask(*rc.p.TaskID)
	}
	return t, nil
}

// processStarted is when this aiod process started (this package's
// initialization): tasks live in memory, so an id unknown to this process
// may be a task of an earlier one, ended when it stopped.
var processStarted = time.Now()

// unknownTask is the answer for a task id this process does not have for
// the caller: one that never existed, another owner's, one past its ttlMs,
// or one of an aiod process that has since restarted. They read alike on
// purpose (another owner's id must not be told apart); the message says
// when this process started, so a client that polled across a restart
// sees its task is gone, not pending.
func unknownTask(id string) *Error {
	at := processStarted.UTC().Format(time.RFC3339)
	return &Error{Code: CodeInvalidParams,
		Message: "Invalid params: unknown task " + id + ": this aiod process (started " + at + ") has no such task; tasks live in memory, so a task started before aiod restarted has ended, and a task is forgotten ttlMs after its creation",
		Data:    map[string]any{"taskId": id, "serverStartedAt": at}}
}

func (rc *rpcCall) tasksGet() ([]byte, *Error) {
	t, e := rc.taskMethod("tasks/get")
	if e != nil {
		return nil, e
	}
	t.mu.Lock()
	v := t.view(true)
	t.mu.Unlock()
	b, err := json.Marshal(struct {
		ResultType string `json:"resultType"`
		taskView
	}{"complete", v})
	if err != nil {
		return nil, errf(CodeInternal, "internal error: "+err.Error())
	}
	return b, nil
}

func (rc *rpcCall) tasksCancel() ([]byte, *Error) {
	t, e := rc.taskMethod("tasks/cancel")
	if e != nil {
		return nil, e
	}
	t.mu.Lock()
	if !isTerminal(t.status) {
		t.status, t.message = taskCancelled, "cancelled by the client"
		t.pending = nil
		t.wakeLocked()
		t.touch()
	}
	t.mu.Unlock()
	t.cancel(context.Canceled)
	return []byte(`{}`), nil
}

func (rc *rpcCall) tasksUpdate() ([]byte, *Error) {
	t, e := rc.taskMethod("tasks/update")
	if e != nil {
		return nil, e
	}
	var responses map[string]json.RawMessage
	if raw := rc.p.InputResponses; len(raw) > 0 && string(raw) != "null" {
		if json.Unmarshal(raw, &responses) != nil {
			return nil, errf(CodeInvalidParams, "Invalid params: inputResponses must be an object of input responses by key")
		}
	}
	keys := make([]string, 0, len(responses))
	for k := range responses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.mu.Lock()
	defer t.mu.Unlock()
	answered := false
	for _, k := range keys {
		if _, asked := t.pending[k]; !asked {
			continue // not asked (or asked and answered already): ignored
		}
		if firstByte(responses[k]) != '{' {
			return nil, errf(CodeInvalidParams, "Invalid params: inputResponses."+k+" must be an object")
		}
		if t.answers == nil {
			t.answers = map[string]json.RawMessage{}
		}
		t.answers[k] = responses[k]
		delete(t.pending, k)
		answered = true
	}
	if answered {
		if len(t.pending) == 0 {
			t.wakeLocked()
		} else {
			t.touch()
		}
	}
	return []byte(`{}`), nil
}

// notifyTask sends notifications/tasks to owner's listening clients that
// declared the extension.
func (s *Server) notifyTask(owner string, v taskView) {
	s.listeners.each(func(x *listener) {
		if !x.tasks || x.owner != owner {
			return
		}
		body, _ := json.Marshal(v)
		msg := subscriptionMeta(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"_meta":{`, x.id, `},`)
		msg = append(msg, body[1:]...)
		msg = append(msg, '}')
		x.q.trySend(item{msg: msg})
	})
}

// detach gives rc its own copy of the request, which the transport may
// reuse once the handler returns while a task runs on.
func (rc *rpcCall) detach(ex *Exchange) *Error {
	body := bytes.Clone(ex.Body)
	req, p := &message{}, &params{}
	if err := decodeMessage(body, req, p); err != nil || p.Meta == nil {
		return errf(CodeInvalidRequest, "invalid request")
	}
	rc.req, rc.p = req, p
	rc.ex = &Exchange{Method: ex.Method, Principal: ex.Principal}
	rc.caps = parseClientCaps(p.Meta.ClientCapabilities)
	rc.progressToken = p.Meta.ProgressToken
	return nil
}
