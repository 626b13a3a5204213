package mcp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store"
)

// TestTaskRecords: with records, a task's status changes are written
// there, so another Server sharing them (another replica, or aiod after a
// restart) answers tasks/get for it: a finished task with its result, a
// task the first server was running when it closed as failed (shutdown);
// another owner's id stays unknown; and a tasks/cancel through the
// second server ends a task the first one runs.
func TestTaskRecords(t *testing.T) {
	recs := store.NewMemory(0)
	opts := Options{Tasks: TaskOptions{Records: recs}}
	s1 := NewServer(echoRegistry(t), opts)
	s2 := NewServer(echoRegistry(t), opts)
	defer s2.Close()
	poll := func(s *Server, owner, id string, want string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, resp := taskRPC(t, s, owner, tasksMeta, "tasks/get", `{"taskId":"`+id+`"}`)
			r, _ := resp["result"].(map[string]any)
			if r != nil && r["status"] == want {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s never %s: %v", id, want, resp)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	done := startTask(t, s1, "alice", `{"name":"slow_compute","arguments":{"seconds":1,"label":"rec"}}`)
	r := poll(s2, "alice", done, "completed")
	if !strings.Contains(fmt.Sprint(r["result"]), "rec") {
		t.Errorf("completed through the other server: %v", r)
	}
	// another owner does not see it
	_, resp := taskRPC(t, s2, "bob", tasksMeta, "tasks/get", `{"taskId":"`+done+`"}`)
	if e, _ := resp["error"].(map[string]any); errCode(resp) != CodeInvalidParams ||
		!strings.Contains(fmt.Sprint(e["message"]), "records outlive a restart") || strings.Contains(fmt.Sprint(e["message"]), "live in memory") {
		t.Errorf("bob's tasks/get of alice's task: %v", resp)
	}
	// cancelled through s2 while s1 runs it
	long := startTask(t, s1, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"long"}}`)
	if _, resp := taskRPC(t, s2, "alice", tasksMeta, "tasks/cancel", `{"taskId":"`+long+`"}`); resp["error"] != nil {
		t.Fatalf("tasks/cancel through the other server: %v", resp)
	}
	r = poll(s1, "alice", long, "cancelled")
	if !strings.Contains(fmt.Sprint(r["statusMessage"]), "another replica") {
		t.Errorf("cancelled: %v", r)
	}
	poll(s2, "alice", long, "cancelled")
	// running when s1 closes: failed, and so recorded
	running := startTask(t, s1, "alice", `{"name":"slow_compute","arguments":{"seconds":60,"label":"shut"}}`)
	s1.Close()
	r = poll(s2, "alice", running, "failed")
	if !strings.Contains(fmt.Sprint(r["statusMessage"]), "shutting down") {
		t.Errorf("a task ended by the shutdown: %v", r)
	}
	// tasks/update of a finished task elsewhere: nothing to answer
	if _, resp := taskRPC(t, s2, "alice", tasksMeta, "tasks/update", `{"taskId":"`+done+`","inputResponses":{}}`); resp["error"] != nil {
		t.Errorf("tasks/update of a finished recorded task: %v", resp)
	}
}
