package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const tasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

const plainMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// taskRPC sends one 2026-07-28 request as owner and returns the HTTP
// status and the decoded response. params is a JSON object without
// _meta; meta is tasksMeta or plainMeta.
func taskRPC(t *testing.T, s *Server, owner, meta, method, params string) (int, map[string]any) {
	t.Helper()
	h := mapHeaders{"mcp-protocol-version": "2026-07-28", "mcp-method": method, "accept": "application/json"}
	var p struct{ Name, TaskID string }
	_ = json.Unmarshal([]byte(params), &p)
	if p.Name != "" {
		h["mcp-name"] = p.Name
	}
	if p.TaskID != "" {
		h["mcp-name"] = p.TaskID
	}
	params = strings.TrimSuffix(params, "}")
	if params != "{" {
		params += ","
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}}`, method, params+meta)
	r := s.Serve(context.Background(), &Exchange{Method: "POST", Header: h, Body: []byte(body), Principal: Principal{Owner: owner}})
	b := r.Body
	if r.Stream != nil {
		b = drain(r.Stream)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	return r.Status, out
}

func result(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	r, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", resp)
	}
	return r
}

func errCode(resp map[string]any) int {
	e, _ := resp["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

// startTask calls tool as owner and returns the task id of its
// CreateTaskResult.
func startTask(t *testing.T, s *Server, owner, call string) string {
	t.Helper()
	_, resp := taskRPC(t, s, owner, tasksMeta, "tools/call", call)
	r := result(t, resp)
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" || r["status"] != "working" {
		t.Fatalf("%s: want a CreateTaskResult, got %v", call, r)
	}
	if ttl, _ := r["ttlMs"].(float64); ttl <= 0 {
		t.Fatalf("ttlMs %v", r["ttlMs"])
	}
	return id
}

func taskGet(t *testing.T, s *Server, owner, id string) map[string]any {
	t.Helper()
	_, resp := taskRPC(t, s, owner, tasksMeta, "tasks/get", `{"taskId":"`+id+`"}`)
	return result(t, resp)
}

// waitStatus polls until the task is in one of statuses.
func waitStatus(t *testing.T, s *Server, owner, id string, within time.Duration, statuses ...string) map[string]any {
	t.Helper()
	end := time.Now().Add(within)
	for {
		g := taskGet(t, s, owner, id)
		for _, st := range statuses {
			if g["status"] == st {
				return g
			}
		}
		if time.Now().After(end) {
			t.Fatalf("task %s: status %v after %s, want %v", id, g["status"], within, statuses)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runFinished waits for the task's plugin run to return: its context
// was cancelled, not only its status changed.
func runFinished(t *testing.T, s *Server, owner, id string) {
	t.Helper()
	tk := s.tasks.get(owner, id)
	if tk == nil {
		t.Fatalf("task %s is gone", id)
	}
	select {
	case <-tk.finished:
	case <-time.After(10 * time.Second):
		t.Fatalf("task %s: the plugin call is still running", id)
	}
}

func TestTaskLifecycle(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()

	// A tool without taskSupport answers directly, even to a client
	// that declared the extension.
	_, resp := taskRPC(t, s, "alice", tasksMeta, "tools/call", `{"name":"greet","arguments":{"name":"W"}}`)
	if r := result(t, resp); r["resultType"] != "complete" || r["taskId"] != nil {
		t.Fatalf("greet: %v", r)
	}
	// A task-capable call done within the grace period is answered
	// directly too.
	_, resp = taskRPC(t, s, "alice", tasksMeta, "tools/call", `{"name":"slow_compute","arguments":{"seconds":0,"label":"now"}}`)
	if r := result(t, resp); r["resultType"] != "complete" {
		t.Fatalf("slow_compute 0: %v", r)
	}
	// A client that did not declare the extension gets a plain result.
	_, resp = taskRPC(t, s, "alice", plainMeta, "tools/call", `{"name":"slow_compute","arguments":{"seconds":1,"label":"sync"}}`)
	if r := result(t, resp); r["resultType"] != "complete" || r["taskId"] != nil {
		t.Fatalf("slow_compute without the extension: %v", r)
	}

	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":1.5,"label":"x"}}`)
	if g := taskGet(t, s, "alice", id); g["status"] != "working" || g["result"] != nil || g["resultType"] != "complete" {
		t.Fatalf("working task: %v", g)
	}
	g := waitStatus(t, s, "alice", id, 10*time.Second, "completed")
	if !strings.Contains(fmt.Sprint(g["result"]), "computed x") {
		t.Fatalf("completed task: %v", g)
	}

	// A protocol error fails the task with the error inlined.
	id = startTask(t, s, "alice", `{"name":"protocol_error_job","arguments":{}}`)
	g = waitStatus(t, s, "alice", id, 10*time.Second, "failed", "completed")
	if e, _ := g["error"].(map[string]any); g["status"] != "failed" || e["code"] != float64(CodeInternal) || g["result"] != nil {
		t.Fatalf("failed task: %v", g)
	}
}

func TestTaskCancel(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()
	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"long"}}`)
	_, resp := taskRPC(t, s, "alice", tasksMeta, "tasks/cancel", `{"taskId":"`+id+`"}`)
	if r := result(t, resp); r["resultType"] != "complete" || r["status"] != nil {
		t.Fatalf("cancel ack: %v", r)
	}
	if g := taskGet(t, s, "alice", id); g["status"] != "cancelled" {
		t.Fatalf("after cancel: %v", g)
	}
	runFinished(t, s, "alice", id) // the 60 s sleep was interrupted
	if g := taskGet(t, s, "alice", id); g["status"] != "cancelled" {
		t.Fatalf("after the run ended: %v", g)
	}
	// Cancelling a finished task is the same empty ack.
	if _, resp := taskRPC(t, s, "alice", tasksMeta, "tasks/cancel", `{"taskId":"`+id+`"}`); errCode(resp) != 0 {
		t.Fatalf("second cancel: %v", resp)
	}
}

func TestTaskOtherOwner(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()
	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"mine"}}`)
	defer taskRPC(t, s, "alice", tasksMeta, "tasks/cancel", `{"taskId":"`+id+`"}`)
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		st, resp := taskRPC(t, s, "bob", tasksMeta, m, `{"taskId":"`+id+`","inputResponses":{}}`)
		if st != 400 || errCode(resp) != CodeInvalidParams {
			t.Fatalf("bob %s of alice's task: %d %v", m, st, resp)
		}
		_, unknown := taskRPC(t, s, "bob", tasksMeta, m, `{"taskId":"nope","inputResponses":{}}`)
		if !strings.Contains(fmt.Sprint(resp["error"]), "unknown task") || errCode(unknown) != CodeInvalidParams {
			t.Fatalf("another owner's task must look unknown: %v / %v", resp, unknown)
		}
	}
	if g := taskGet(t, s, "alice", id); g["status"] != "working" {
		t.Fatalf("bob's cancel reached alice's task: %v", g)
	}
}

func TestTaskGating(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		if st, resp := taskRPC(t, s, "alice", plainMeta, m, `{"taskId":"x"}`); st != 400 || errCode(resp) != CodeMissingCapability {
			t.Fatalf("%s without the extension: %d %v", m, st, resp)
		}
	}
	st, resp := taskRPC(t, s, "alice", plainMeta, "tools/call", `{"name":"failing_job","arguments":{}}`)
	if st != 400 || errCode(resp) != CodeMissingCapability || !strings.Contains(fmt.Sprint(resp["error"]), extTasks) {
		t.Fatalf("required-task tool without the extension: %d %v", st, resp)
	}
	for _, m := range []string{"tasks/list", "tasks/result"} {
		if st, resp := taskRPC(t, s, "alice", tasksMeta, m, `{"taskId":"x"}`); st != 404 || errCode(resp) != CodeMethodNotFound {
			t.Fatalf("%s: %d %v", m, st, resp)
		}
	}
}

func TestTaskInput(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()
	id := startTask(t, s, "alice", `{"name":"multi_input","arguments":{}}`)
	g := waitStatus(t, s, "alice", id, 10*time.Second, "input_required")
	reqs, _ := g["inputRequests"].(map[string]any)
	if len(reqs) != 2 || reqs["first"] == nil || reqs["second"] == nil {
		t.Fatalf("input_required: %v", g)
	}
	answer := func(k, name string) {
		_, resp := taskRPC(t, s, "alice", tasksMeta, "tasks/update",
			`{"taskId":"`+id+`","inputResponses":{"`+k+`":{"action":"accept","content":{"name":"`+name+`"}}}}`)
		if r := result(t, resp); r["resultType"] != "complete" || r["status"] != nil {
			t.Fatalf("update ack: %v", r)
		}
	}
	answer("first", "Ann")
	g = taskGet(t, s, "alice", id)
	if reqs, _ := g["inputRequests"].(map[string]any); g["status"] != "input_required" || len(reqs) != 1 || reqs["second"] == nil {
		t.Fatalf("after a partial update: %v", g)
	}
	answer("second", "Bea")
	g = waitStatus(t, s, "alice", id, 10*time.Second, "completed")
	if !strings.Contains(fmt.Sprint(g["result"]), "Ann and Bea") {
		t.Fatalf("completed: %v", g)
	}
}

func TestTaskDeadline(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{Tasks: TaskOptions{Deadline: 1500 * time.Millisecond}})
	defer s.Close()
	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":30,"label":"late"}}`)
	g := waitStatus(t, s, "alice", id, 10*time.Second, "failed", "completed")
	if g["status"] != "failed" || !strings.Contains(fmt.Sprint(g["error"]), "deadline") {
		t.Fatalf("past its deadline: %v", g)
	}
	// The client may ask for a longer deadline, up to the cap.
	if d := requestedTTL(json.RawMessage(`{"task":{"ttlMs":5000}}`)); d != 5*time.Second {
		t.Fatalf("requestedTTL %v", d)
	}
	s2 := NewServer(echoRegistry(t), Options{Tasks: TaskOptions{Deadline: time.Second, MaxDeadline: 2 * time.Second}})
	defer s2.Close()
	id = startTask(t, s2, "alice", `{"name":"slow_compute","arguments":{"seconds":30,"label":"capped"},"task":{"ttlMs":3600000}}`)
	g = taskGet(t, s2, "alice", id)
	if ttl := g["ttlMs"].(float64); ttl != float64((2*time.Second + DefaultTaskRetention).Milliseconds()) {
		t.Fatalf("ttlMs %v: the deadline was not capped", ttl)
	}
}

func TestTaskLimitPerOwner(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{Tasks: TaskOptions{MaxPerOwner: 1}})
	defer s.Close()
	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"a"}}`)
	st, resp := taskRPC(t, s, "alice", tasksMeta, "tools/call", `{"name":"slow_compute","arguments":{"seconds":60,"label":"b"}}`)
	if st != 500 || !strings.Contains(fmt.Sprint(resp["error"]), "task limit") {
		t.Fatalf("second task of alice: %d %v", st, resp)
	}
	other := startTask(t, s, "bob", `{"name":"slow_compute","arguments":{"seconds":60,"label":"c"}}`)
	taskRPC(t, s, "alice", tasksMeta, "tasks/cancel", `{"taskId":"`+id+`"}`)
	taskRPC(t, s, "bob", tasksMeta, "tasks/cancel", `{"taskId":"`+other+`"}`)
	startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"d"}}`) // a slot is free again
}

func TestTaskShutdown(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"s"}}`)
	tk := s.tasks.get("alice", id)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on a running task")
	}
	select {
	case <-tk.finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the task's plugin call outlived Close")
	}
	tk.mu.Lock()
	v := tk.view(true)
	tk.mu.Unlock()
	if v.Status != "failed" || v.Error == nil || !strings.Contains(v.Error.Message, "shutting down") {
		t.Fatalf("after Close: %+v", v)
	}
	// and no new task starts
	_, resp := taskRPC(t, s, "alice", tasksMeta, "tools/call", `{"name":"slow_compute","arguments":{"seconds":2,"label":"late"}}`)
	if r, _ := resp["result"].(map[string]any); r != nil && r["resultType"] == "task" {
		t.Fatalf("a task started after Close: %v", r)
	}
}

func TestTaskEviction(t *testing.T) {
	ts := &taskStore{byID: map[string]*task{}}
	base := time.Now()
	for i := 0; i < 300; i++ {
		st := taskCompleted
		if i == 0 {
			st = taskWorking // unfinished tasks are never evicted
		}
		id := fmt.Sprintf("t%03d", i)
		ts.byID[id] = &task{id: id, owner: "a", status: st, created: base.Add(time.Duration(i) * time.Millisecond)}
	}
	ts.byID["b"] = &task{id: "b", owner: "b", status: taskCompleted, created: base.Add(-time.Hour)}
	ts.evictLocked("a")
	if len(ts.byID) != 1+maxFinishedPerOwner-1+1 {
		t.Fatalf("%d tasks left", len(ts.byID))
	}
	for _, id := range []string{"t000", "t299", "b"} {
		if ts.byID[id] == nil {
			t.Fatalf("%s was evicted", id)
		}
	}
	if ts.byID["t001"] != nil {
		t.Fatal("the oldest finished task was kept")
	}
}

// TestTaskHoldsSlot: a call that becomes a task takes the request's
// admission over (Exchange.Hold) and gives it back when its run ends,
// whether it completes or is cancelled; a call answered directly leaves
// it to the transport.
func TestTaskHoldsSlot(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	defer s.Close()
	var held, released atomic.Int32
	call := func(params string) map[string]any {
		t.Helper()
		h := mapHeaders{"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "slow_compute", "accept": "application/json"}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + strings.TrimSuffix(params, "}") + `,` + tasksMeta + `}}`
		ex := &Exchange{Method: "POST", Header: h, Body: []byte(body), Principal: Principal{Owner: "alice"},
			Hold: HoldFunc(func() func() {
				held.Add(1)
				return func() { released.Add(1) }
			})}
		var out map[string]any
		if err := json.Unmarshal(s.Serve(context.Background(), ex).Body, &out); err != nil {
			t.Fatal(err)
		}
		return result(t, out)
	}
	if r := call(`{"name":"slow_compute","arguments":{"seconds":0,"label":"now"}}`); r["resultType"] != "complete" || held.Load() != 0 {
		t.Fatalf("a direct answer took the slot over: %v, held %d", r, held.Load())
	}
	cases := []struct {
		name    string
		seconds float64
		cancel  bool
	}{{"completes", 1.5, false}, {"cancelled", 60, true}}
	for i, c := range cases {
		r := call(fmt.Sprintf(`{"name":"slow_compute","arguments":{"seconds":%v,"label":%q}}`, c.seconds, c.name))
		id, _ := r["taskId"].(string)
		if id == "" || held.Load() != int32(i+1) {
			t.Fatalf("%s: %v, held %d", c.name, r, held.Load())
		}
		if released.Load() != int32(i) {
			t.Fatalf("%s: the slot was released while the task runs", c.name)
		}
		if c.cancel {
			taskRPC(t, s, "alice", tasksMeta, "tasks/cancel", `{"taskId":"`+id+`"}`)
			runFinished(t, s, "alice", id)
		} else {
			waitStatus(t, s, "alice", id, 10*time.Second, "completed")
		}
		if released.Load() != int32(i+1) {
			t.Fatalf("%s: the run ended, the slot is still held (released %d)", c.name, released.Load())
		}
	}
}

// TestTaskUnknownAfterRestart: tasks live in memory, so a new server
// (aiod restarted) does not know an old id, and says why.
func TestTaskUnknownAfterRestart(t *testing.T) {
	s := NewServer(echoRegistry(t), Options{})
	id := startTask(t, s, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"r"}}`)
	s.Close()
	s2 := NewServer(echoRegistry(t), Options{})
	defer s2.Close()
	st, resp := taskRPC(t, s2, "alice", tasksMeta, "tasks/get", `{"taskId":"`+id+`"}`)
	e, _ := resp["error"].(map[string]any)
	msg, _ := e["message"].(string)
	data, _ := e["data"].(map[string]any)
	at := processStarted.UTC().Format(time.RFC3339)
	if st != 400 || errCode(resp) != CodeInvalidParams || !strings.Contains(msg, "unknown task "+id) ||
		!strings.Contains(msg, "started "+at) || !strings.Contains(msg, "restarted") || data["serverStartedAt"] != at {
		t.Fatalf("an old id after a restart: %d %v", st, resp)
	}
}
