package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	status, res, e, b := taskPostAs(t, url, "", method, name, params)
	if res == nil {
		t.Fatalf("%s: %d %v %s", method, status, e, b)
	}
	return res
}

// taskPostAs sends one 2026-07-28 request declaring the tasks extension
// with the API key key ("": none) and returns the HTTP status, the result
// or the error, and the body.
func taskPostAs(t *testing.T, url, key, method, name, params string) (status int, res, rpcErr map[string]any, body string) {
	t.Helper()
	params = strings.TrimSuffix(params, "}")
	if params != "{" {
		params += ","
	}
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`,
		method, params, tasksCaps)
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	resp, b := post(t, url, req, h)
	var r struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(b), &r); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: 429 without Retry-After", method)
	}
	return resp.StatusCode, r.Result, r.Error, b
}

// toolTask calls tool with args and returns its task id.
func toolTask(t *testing.T, url, key, tool string, args map[string]any) string {
	t.Helper()
	a, _ := json.Marshal(args)
	st, r, e, b := taskPostAs(t, url, key, "tools/call", tool, `{"name":"`+tool+`","arguments":`+string(a)+`}`)
	id, _ := r["taskId"].(string)
	if st != 200 || r["resultType"] != "task" || id == "" {
		t.Fatalf("%s %v: want a CreateTaskResult, got %d %v %s", tool, args, st, e, b)
	}
	return id
}

// bashTask starts cmd in sandbox_execute_bash and returns its task id.
func bashTask(t *testing.T, url, cmd string) string {
	t.Helper()
	return toolTask(t, url, "", "sandbox_execute_bash", map[string]any{"cmd": cmd, "timeout": 120, "new_session": true})
}

func getTask(t *testing.T, url, id string) map[string]any {
	t.Helper()
	return taskPost(t, url, "tasks/get", id, `{"taskId":"`+id+`"}`)
}

// lineRE finds the output lines of TestBashTask's command in a status
// message.
var lineRE = regexp.MustCompile(`tick (\d+)`)

// TestBashTask runs a 60-second command (the tasks extension's "a 60-second command
// as a task polled to completion"), a line of output every 3 s, as a task
// and polls it once a second to completion; while it runs, the task's
// statusMessage carries the latest output lines (the command's
// notifications/progress), so the agent sees the output grow. It runs in
// parallel with the other task tests, so the minute overlaps theirs.
func TestBashTask(t *testing.T) {
	defaultEngine(t, "the 60 s task run's subject is the MCP task layer (the bash tool runs on every engine in host/sandboxtest, TestBashTaskCancel here)")
	t.Parallel()
	a := start(t, nil)
	dir := t.TempDir()
	start := time.Now()
	id := bashTask(t, a.URL, "cd "+dir+" && for i in $(seq 1 20); do echo tick $i; sleep 3; done; echo done")
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the CreateTaskResult took %s: the call did not detach", time.Since(start))
	}
	polls, last, seen := 0, 0, 0
	for {
		g := getTask(t, a.URL, id)
		polls++
		st, _ := g["status"].(string)
		if st == "completed" {
			res, _ := json.Marshal(g["result"])
			if !strings.Contains(string(res), "tick 20") || !strings.Contains(string(res), "done") || strings.Contains(string(res), `"isError":true`) {
				t.Fatalf("completed task: %s", res)
			}
			if el := time.Since(start); el < 59*time.Second {
				t.Fatalf("completed after %s, before the command could have", el)
			}
			break
		}
		if st != "working" {
			t.Fatalf("status %q while the command runs: %v", st, g)
		}
		msg, _ := g["statusMessage"].(string)
		for _, m := range lineRE.FindAllStringSubmatch(msg, -1) {
			n, _ := strconv.Atoi(m[1])
			if n < last {
				t.Fatalf("statusMessage went back from tick %d to %q", last, msg)
			}
			if n > last {
				last = n
				seen++
			}
		}
		if time.Since(start) > 150*time.Second {
			t.Fatalf("still %s after 150 s", st)
		}
		time.Sleep(time.Second)
	}
	// 20 lines over 60 s, polled every second: the agent saw most of
	// them arrive, not only the final result.
	if polls < 40 || seen < 10 || last < 15 {
		t.Fatalf("%d polls saw %d growing status messages, the last at tick %d: the output did not reach the task's status as it ran", polls, seen, last)
	}
}

// TestCodeTask: sandbox_execute_code is task-capable too: a Python run
// longer than the grace period answers a CreateTaskResult and completes
// with its output.
func TestCodeTask(t *testing.T) {
	defaultEngine(t, "the code tool runs its interpreter as a host process; the task layer is host-side")
	t.Parallel()
	a := start(t, nil)
	id := toolTask(t, a.URL, "", "sandbox_execute_code", map[string]any{"language": "python",
		"code": "import time\nfor i in range(3):\n    print('step', i, flush=True)\n    time.sleep(1)\nprint('code done')"})
	for end := time.Now().Add(60 * time.Second); ; {
		g := getTask(t, a.URL, id)
		if g["status"] == "completed" {
			res, _ := json.Marshal(g["result"])
			if !strings.Contains(string(res), "code done") || strings.Contains(string(res), `"isError":true`) {
				t.Fatalf("completed code task: %s", res)
			}
			return
		}
		if g["status"] != "working" || time.Now().After(end) {
			t.Fatalf("code task: %v", g)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestBashTaskCancel cancels a task midway: its status is cancelled at
// once, and the command's process is gone soon after. The sandbox may
// run bash in its own pid namespace, so the process is found by its
// unique command line in the host's /proc, not by the pid it sees.
func TestBashTaskCancel(t *testing.T) {
	t.Parallel()
	onEngines(t, testBashTaskCancel)
}

func testBashTaskCancel(t *testing.T, engine string) {
	a := start(t, nil, "--engine", engine)
	marker := uniqueSleep()
	id := bashTask(t, a.URL, "sleep "+marker)
	waitProc(t, marker)
	if r := taskPost(t, a.URL, "tasks/cancel", id, `{"taskId":"`+id+`"}`); r["resultType"] != "complete" || r["status"] != nil {
		t.Fatalf("cancel ack: %v", r)
	}
	if g := getTask(t, a.URL, id); g["status"] != "cancelled" {
		t.Fatalf("after cancel: %v", g)
	}
	waitProcGone(t, marker, 15*time.Second)
	if g := getTask(t, a.URL, id); g["status"] != "cancelled" {
		t.Fatalf("the run's end changed the cancelled status: %v", g)
	}
}

// TestTaskTenantQuota: a task outlives its HTTP request but not its
// tenant's concurrent_calls quota. alice (concurrent_calls 1) starts a
// long task: her next call is refused 429/-32029 while it runs, yet she
// can poll and cancel it; bob is unaffected. Once the task is cancelled
// (its run has returned) or completes, alice calls again.
func TestTaskTenantQuota(t *testing.T) {
	defaultEngine(t, "the task quota is host-side")
	t.Parallel()
	keys := map[string]string{"alice": "task-quota-key-alice", "bob": "task-quota-key-bob"}
	specs := map[string]any{}
	for name, key := range keys {
		sum := sha256.Sum256([]byte(key))
		specs[name] = map[string]any{"keys": []string{"sha256:" + hex.EncodeToString(sum[:])}, "tools": []string{"sandbox_*"},
			"quotas": map[string]any{"concurrent_calls": 1}}
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	b, _ := json.Marshal(map[string]any{"tenants": specs})
	if err := os.WriteFile(policy, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// the API key (the default tenant's) lets start see the plugins loaded
	a := start(t, []string{"AIO_API_KEY=task-quota-key-default"}, "--policy", policy, "--data-dir", dataDir(t))
	alice, bob := keys["alice"], keys["bob"]
	// a call that is never a task (the tool is not task-capable), so that
	// it holds no slot past its response
	callAs := func(key string) (int, map[string]any, map[string]any) {
		st, r, e, _ := taskPostAs(t, a.URL, key, "tools/call", "sandbox_get_context", `{"name":"sandbox_get_context","arguments":{}}`)
		return st, r, e
	}
	refused := func(who string) {
		t.Helper()
		st, r, e := callAs(alice)
		if code, _ := e["code"].(float64); st != 429 || code != -32029 || !strings.Contains(fmt.Sprint(e["message"]), "concurrent_calls") {
			t.Fatalf("alice's call while %s: %d %v %v, want 429 -32029 concurrent_calls", who, st, r, e)
		}
	}
	admitted := func(key, who string) {
		t.Helper()
		if st, r, e := callAs(key); st != 200 || r["resultType"] != "complete" {
			t.Fatalf("%s: %d %v %v", who, st, r, e)
		}
	}

	marker := uniqueSleep()
	id := toolTask(t, a.URL, alice, "sandbox_execute_bash", map[string]any{"cmd": "sleep " + marker, "new_session": true})
	refused("her task runs")
	// polling and cancelling take no slot of their own
	if st, r, e, _ := taskPostAs(t, a.URL, alice, "tasks/get", id, `{"taskId":"`+id+`"}`); st != 200 || r["status"] != "working" {
		t.Fatalf("alice polls her task at her quota: %d %v %v", st, r, e)
	}
	refused("her task runs, after a poll")
	admitted(bob, "bob while alice's task runs")
	other := toolTask(t, a.URL, bob, "sandbox_execute_bash", map[string]any{"cmd": "sleep 60", "new_session": true})
	if st, _, e, _ := taskPostAs(t, a.URL, bob, "tasks/cancel", other, `{"taskId":"`+other+`"}`); st != 200 {
		t.Fatalf("bob cancels: %d %v", st, e)
	}
	if st, _, e, _ := taskPostAs(t, a.URL, alice, "tasks/cancel", id, `{"taskId":"`+id+`"}`); st != 200 {
		t.Fatalf("alice cancels at her quota: %d %v", st, e)
	}
	waitProcGone(t, marker, 15*time.Second)
	// the slot is free once the run has returned (its processes killed)
	for end := time.Now().Add(15 * time.Second); ; {
		st, r, _ := callAs(alice)
		if st == 200 && r["resultType"] == "complete" {
			break
		}
		if st != 429 || time.Now().After(end) {
			t.Fatalf("alice after cancelling her task: %d", st)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A task that completes frees the slot before its completed status
	// can be read.
	id = toolTask(t, a.URL, alice, "sandbox_execute_bash", map[string]any{"cmd": "sleep 3; echo ok", "new_session": true})
	refused("her second task runs")
	for end := time.Now().Add(60 * time.Second); ; {
		st, r, e, _ := taskPostAs(t, a.URL, alice, "tasks/get", id, `{"taskId":"`+id+`"}`)
		if st != 200 || time.Now().After(end) {
			t.Fatalf("alice polls: %d %v %v", st, r, e)
		}
		if r["status"] == "completed" {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	admitted(alice, "alice once her task completed")
}

// TestTaskRestart: aiod stopping with a task running ends it without a
// hang (the process exits promptly, the command's process is gone), and
// after a restart a tasks/get of the old id says the task is unknown to
// this aiod process and when it started: the client stops polling.
func TestTaskRestart(t *testing.T) {
	defaultEngine(t, "ending tasks at shutdown is host-side")
	t.Parallel()
	a := start(t, nil)
	marker := uniqueSleep()
	id := bashTask(t, a.URL, "sleep "+marker)
	waitProc(t, marker)
	stopped := time.Now()
	_ = a.cmd.Process.Signal(os.Interrupt)
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("aiod still runs 10 s after SIGINT with a task running:\n%s", a.Logs())
	}
	t.Logf("aiod exited %s after SIGINT with a task running", time.Since(stopped).Round(time.Millisecond))
	waitProcGone(t, marker, 10*time.Second)

	b := start(t, nil)
	st, r, e, body := taskPostAs(t, b.URL, "", "tasks/get", id, `{"taskId":"`+id+`"}`)
	msg, _ := e["message"].(string)
	code, _ := e["code"].(float64)
	data, _ := e["data"].(map[string]any)
	at, _ := data["serverStartedAt"].(string)
	began, err := time.Parse(time.RFC3339, at)
	if st != 400 || r != nil || code != -32602 || !strings.Contains(msg, "unknown task "+id) || !strings.Contains(msg, "restarted") ||
		err != nil || !strings.Contains(msg, at) || began.Before(stopped.Truncate(time.Second)) {
		t.Fatalf("the old task after a restart: %d %s", st, body)
	}
}

// uniqueSleep is a sleep argument no other process has.
func uniqueSleep() string {
	return fmt.Sprintf("300.%d", time.Now().UnixNano()%1_000_000_000)
}

// waitProc waits until a process has arg on its command line.
func waitProc(t *testing.T, arg string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); len(procsWith(arg)) == 0; {
		if time.Now().After(end) {
			t.Fatalf("sleep %s never showed up in /proc", arg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitProcGone waits until no process has arg on its command line.
func waitProcGone(t *testing.T, arg string, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); ; {
		left := procsWith(arg)
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("sleep %s (pids %v) still runs %s after its task ended", arg, left, within)
		}
		time.Sleep(100 * time.Millisecond)
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
