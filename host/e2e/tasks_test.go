package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tasks extension (io.modelcontextprotocol/tasks) against a real
// bin/aiod, over raw HTTP: no client SDK speaks the 2026-07-28 tasks
// extension yet.

const tasksCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskPost sends one 2026-07-28 request declaring the tasks extension and
// returns the decoded result, failing on a JSON-RPC error.
func taskPost(t *testing.T, url, method, name, params string) map[string]any {
	t.Helper()
	params = strings.TrimSuffix(params, "}")
	if params != "{" {
		params += ","
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`,
		method, params, tasksCaps)
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	resp, b := post(t, url, body, h)
	var r struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal([]byte(b), &r); err != nil || r.Result == nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	return r.Result
}

// bashTask starts cmd in sandbox_execute_bash and returns its task id.
func bashTask(t *testing.T, url, cmd string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"cmd": cmd, "timeout": 120, "new_session": true})
	r := taskPost(t, url, "tools/call", "sandbox_execute_bash", `{"name":"sandbox_execute_bash","arguments":`+string(args)+`}`)
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" {
		t.Fatalf("sandbox_execute_bash %q: want a CreateTaskResult, got %v", cmd, r)
	}
	return id
}

func getTask(t *testing.T, url, id string) map[string]any {
	t.Helper()
	return taskPost(t, url, "tasks/get", id, `{"taskId":"`+id+`"}`)
}

// TestBashTask runs a 20-second command as a task and polls it to
// completion. 20 s is twice the conformance harness's own polling bound
// (10 s) and forty times the grace period after which a call becomes a
// task, so the task clearly outlives its request and many polls; 60 s
// would test nothing more and add 40 s to every run.
func TestBashTask(t *testing.T) {
	a := start(t, nil)
	dir := t.TempDir()
	start := time.Now()
	id := bashTask(t, a.URL, "cd "+dir+" && sleep 20 && echo done")
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the CreateTaskResult took %s: the call did not detach", time.Since(start))
	}
	polls := 0
	for {
		g := getTask(t, a.URL, id)
		polls++
		st, _ := g["status"].(string)
		if st == "completed" {
			res, _ := json.Marshal(g["result"])
			if !strings.Contains(string(res), "done") || strings.Contains(string(res), `"isError":true`) {
				t.Fatalf("completed task: %s", res)
			}
			if el := time.Since(start); el < 19*time.Second {
				t.Fatalf("completed after %s, before the command could have", el)
			}
			break
		}
		if st != "working" {
			t.Fatalf("status %q while the command runs: %v", st, g)
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("still %s after 90 s", st)
		}
		time.Sleep(time.Second)
	}
	if polls < 10 {
		t.Fatalf("only %d polls over a 20 s command", polls)
	}
}

// TestBashTaskCancel cancels a task midway: its status is cancelled at
// once, and the command's process is gone soon after. The sandbox may
// run bash in its own pid namespace, so the process is found by its
// unique command line in the host's /proc, not by the pid it sees.
func TestBashTaskCancel(t *testing.T) {
	a := start(t, nil)
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1_000_000_000)
	id := bashTask(t, a.URL, "sleep "+marker)
	for end := time.Now().Add(20 * time.Second); len(procsWith(marker)) == 0; {
		if time.Now().After(end) {
			t.Fatal("the command's sleep never showed up in /proc")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := taskPost(t, a.URL, "tasks/cancel", id, `{"taskId":"`+id+`"}`); r["resultType"] != "complete" || r["status"] != nil {
		t.Fatalf("cancel ack: %v", r)
	}
	if g := getTask(t, a.URL, id); g["status"] != "cancelled" {
		t.Fatalf("after cancel: %v", g)
	}
	for end := time.Now().Add(15 * time.Second); ; {
		left := procsWith(marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("sleep %s (pids %v) still runs 15 s after its task was cancelled", marker, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if g := getTask(t, a.URL, id); g["status"] != "cancelled" {
		t.Fatalf("the run's end changed the cancelled status: %v", g)
	}
}

// procsWith lists the pids whose command line has arg as an argument.
func procsWith(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
