package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sort"
	"strconv"
	"time"
)

// This file is the tasks extension of 2026-07-28 (SEP-2663,
// io.modelcontextprotocol/tasks): a tools/call of a tool that declares
// execution.taskSupport may outlive its HTTP request. The call starts as
// an ordinary request; when it is still running after TaskOptions.Grace
// (and asked the client nothing it could not answer yet) it becomes a
// task: the response is a CreateTaskResult, the run goes on under the
// task's own deadline, and the client polls tasks/get, answers input
// through tasks/update and stops it with tasks/cancel. Tasks live in
// memory, per owner: a task id presented by another owner is unknown;
// with TaskOptions.Records their records also live in a store, where
// tasks/get finds a task of another replica or an earlier process
// (taskrecord.go).
//
// The extension wraps the plain path; it does not sit inside it. The
// snapshot says which tools declare execution.taskSupport, and only their
// 2026-07-28 calls reach the extension's tools/call (Server.taskCalls,
// installed by installTasks); a plain tools/call runs no code of it. A
// call that becomes a task takes its notifications and input requests
// through the call's onNotify and onInput hooks. The extension's methods
// (tasks/get, tasks/update, tasks/cancel) join the Server's copy of the
// method table.
//
// The files: this one (the options, the installation, the handlers),
// taskstate.go (one task), taskstore.go (the tasks by id).

// extTasks is the extension's identifier, in capabilities.extensions.
const extTasks = "io.modelcontextprotocol/tasks"

// installTasks turns the tasks extension on for s, bounded by o: its
// tools/call and its methods.
func (s *Server) installTasks(o TaskOptions) {
	s.taskOpts = o.withDefaults()
	s.taskCalls = s.serveTaskCapable
	s.methods = maps.Clone(s.methods)
	s.methods["tasks/get"] = method{serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.tasksGet() }}
	s.methods["tasks/update"] = method{serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.tasksUpdate() }}
	s.methods["tasks/cancel"] = method{serve: func(rc *rpcCall, _ context.Context) ([]byte, *Error) { return rc.tasksCancel() }}
}

// serveTaskCapable serves a 2026-07-28 tools/call of a tool whose
// declared execution.taskSupport is support ("optional" or "required"):
// as a task-capable call when the client declared the extension, refused
// when the tool requires it and the client did not; nil otherwise (the
// call is served the plain way).
func (s *Server) serveTaskCapable(ctx context.Context, ex *Exchange, rc *rpcCall, support string) *Response {
	switch {
	case declaresExtension(rc.caps.Raw, extTasks):
		return s.taskCall(ctx, ex, rc)
	case support == "required":
		return rc.reply(nil, missingTasksCapability("tool "+*rc.p.Name))
	}
	return nil
}

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
	// Records, when set, keep every task's record beyond this process
	// (taskrecord.go): tasks/get reads there a task this process does not
	// run. Nil: tasks live in this process only.
	Records TaskRecords
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
	t := &task{id: s.sessions.prefix + newTaskID(), owner: owner, created: now, updated: now, ttl: deadline + o.Retention,
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
	rc.onNotify = t.notify
	rc.onInput = func(ctx context.Context, keys []string, reqs map[string]inputRequest) ([]byte, error) {
		return t.input(ctx, rc, keys, reqs)
	}
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
				t.hold(ex.Hold.Hold())
			}
			t.mu.Lock() // the run may be changing it
			v := t.view(false)
			t.mu.Unlock()
			t.awaitFirstSave(5 * time.Second)
			b, _ := json.Marshal(struct {
				ResultType string `json:"resultType"`
				taskView
			}{"task", v})
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

// taskMethod checks a tasks/* request: the client declared the
// extension, names a task id, and the task is the caller's: one this
// process runs (t), else one in the task records (rec: another replica's,
// or an earlier process's).
func (rc *rpcCall) taskMethod(method string) (t *task, rec *taskView, e *Error) {
	t, e = rc.localTask(method)
	if t != nil || e == nil || e.Data == nil {
		return t, nil, e
	}
	rec, re := rc.s.recordedTask(rc.ex.Principal.owner(), *rc.p.TaskID)
	switch {
	case re != nil:
		return nil, nil, re
	case rec == nil:
		return nil, nil, e
	case method == "tasks/update" && !isTerminal(rec.Status):
		return nil, nil, errf(CodeInternal, method+": task "+rec.TaskID+" runs on another aiod replica (or ran in an aiod process that has since stopped): tasks/get and tasks/cancel reach it from any replica; "+method+" only where it runs")
	}
	return nil, rec, nil
}

// localTask is taskMethod for the tasks this process runs; an unknown
// task's error carries Data.
func (rc *rpcCall) localTask(method string) (*task, *Error) {
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
		return nil, unknownTask(*rc.p.TaskID, rc.s.taskOpts.Records != nil)
	}
	return t, nil
}

// processStarted is when this aiod process started (this package's
// initialization): without task records tasks live in memory, so an id
// unknown to this process may be a task of an earlier one, ended when it
// stopped.
var processStarted = time.Now()

// unknownTask is the answer for a task id this process does not have for
// the caller: one that never existed, another owner's, one past its ttlMs,
// or one of an aiod process that has since restarted. They read alike on
// purpose (another owner's id must not be told apart); the message says
// when this process started, so a client that polled across a restart
// sees its task is gone, not pending. recorded: the tasks' records
// outlive the process (TaskOptions.Records), so a restart is not the
// reason.
func unknownTask(id string, recorded bool) *Error {
	at := processStarted.UTC().Format(time.RFC3339)
	why := "tasks live in memory, so a task started before aiod restarted has ended, and a task is forgotten ttlMs after its creation"
	if recorded {
		why = "it never existed, is another owner's, or is past its ttlMs (the tasks' records outlive a restart)"
	}
	return &Error{Code: CodeInvalidParams,
		Message: "Invalid params: unknown task " + id + ": this aiod process (started " + at + ") has no such task; " + why,
		Data:    map[string]any{"taskId": id, "serverStartedAt": at}}
}

func (rc *rpcCall) tasksGet() ([]byte, *Error) {
	t, rec, e := rc.taskMethod("tasks/get")
	if e != nil {
		return nil, e
	}
	var v taskView
	if rec != nil {
		v = *rec
	} else {
		t.mu.Lock()
		v = t.view(true)
		t.mu.Unlock()
	}
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
	t, rec, e := rc.taskMethod("tasks/cancel")
	if e != nil {
		return nil, e
	}
	if rec != nil { // another replica's: asked there (taskrecord.go)
		if e := rc.s.requestCancel(rec); e != nil {
			return nil, e
		}
		return []byte(`{}`), nil
	}
	t.cancelBy("cancelled by the client")
	return []byte(`{}`), nil
}

// cancelBy ends t as cancelled with message, unless it ended already.
func (t *task) cancelBy(message string) {
	t.mu.Lock()
	if !isTerminal(t.status) {
		t.status, t.message = taskCancelled, message
		t.pending = nil
		t.wakeLocked()
		t.touch()
	}
	t.mu.Unlock()
	t.cancel(context.Canceled)
}

func (rc *rpcCall) tasksUpdate() ([]byte, *Error) {
	t, rec, e := rc.taskMethod("tasks/update")
	if e != nil {
		return nil, e
	}
	if rec != nil { // finished already: nothing asked
		return []byte(`{}`), nil
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
