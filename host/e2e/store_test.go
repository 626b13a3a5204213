package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store/storetest"
)

// Durable and shared state against real bin/aiod processes: plugin state
// (the tally-go example's count tool, a counter in aiod:state) and task
// records in the file under --data-dir across a kill -9, and in a real
// redis-server shared by three replicas (--store).

var (
	tallyGoOnce sync.Once
	tallyGoDir  string
	tallyGoErr  error
)

// tallyGoPlugins builds the tally-go example (aiod plugin build) once and
// returns a plugins directory holding it.
func tallyGoPlugins(t *testing.T) string {
	t.Helper()
	bin, _ := binaries(t)
	tallyGoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aiod-e2e-tally-go-")
		if err != nil {
			tallyGoErr = err
			return
		}
		out, err := exec.Command(bin, "plugin", "build", filepath.Join(repoRoot(), "plugins", "examples", "tally-go"),
			"--into", filepath.Join(dir, "plugins"), "--work", filepath.Join(dir, "work"), "--cache-dir", e2eCache()).CombinedOutput()
		if err != nil {
			tallyGoErr = fmt.Errorf("aiod plugin build tally-go: %v\n%s", err, out)
			return
		}
		tallyGoDir = filepath.Join(dir, "plugins")
	})
	if tallyGoErr != nil {
		t.Fatal(tallyGoErr)
	}
	return tallyGoDir
}

// statePolicy grants state to every plugin; tenants, when given, are the
// policy's tenants section.
func statePolicy(t *testing.T, tenants map[string]any) string {
	t.Helper()
	doc := map[string]any{"default": map[string]any{"state": map[string]any{}}}
	if tenants != nil {
		doc["tenants"] = tenants
	}
	b, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startTally runs bin/aiod over the tally-go plugin and the policy with
// args besides.
func startTally(t *testing.T, policy string, args ...string) *aiod {
	t.Helper()
	return startArgv(t, nil, append([]string{"start", "--host", "127.0.0.1", "--port", freePort(t),
		"--plugins-dir", tallyGoPlugins(t), "--policy", policy, "--cache-dir", e2eCache(), "--browser", "off"}, args...))
}

var loadClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// rawCall calls tool once (2026-07-28, stateless) as key's tenant ("":
// none) and returns the HTTP status, the result's text and whether it is
// an error result; err is a transport failure or an answer that is not
// JSON-RPC.
func rawCall(url, key, tool, args string) (status int, text string, isErr bool, rpcErr string, err error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, tool, args)
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := loadClient.Do(req)
	if err != nil {
		return 0, "", false, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", false, "", err
	}
	var r struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &r); err != nil {
		return resp.StatusCode, "", false, "", fmt.Errorf("%d %s: %v", resp.StatusCode, b, err)
	}
	switch {
	case r.Error != nil:
		return resp.StatusCode, "", false, r.Error.Message, nil
	case r.Result == nil || len(r.Result.Content) == 0:
		return resp.StatusCode, "", false, "", fmt.Errorf("%d %s: no content", resp.StatusCode, b)
	}
	return resp.StatusCode, r.Result.Content[0].Text, r.Result.IsError, "", nil
}

// count adds one to counter name through url and returns the new value.
func count(url, key, name string) (int, error) {
	st, text, isErr, rpcErr, err := rawCall(url, key, "count", `{"name":"`+name+`"}`)
	switch {
	case err != nil:
		return 0, err
	case rpcErr != "":
		return 0, fmt.Errorf("%d: %s", st, rpcErr)
	case isErr:
		return 0, fmt.Errorf("tool error: %s", text)
	}
	return strconv.Atoi(text)
}

func mustCount(t *testing.T, url, key, name string) int {
	t.Helper()
	n, err := count(url, key, name)
	if err != nil {
		t.Fatalf("count %s: %v", name, err)
	}
	return n
}

// TestStateKill9: bin/aiod with --data-dir, 8 clients adding to their own
// counters as fast as it answers, is killed with SIGKILL in the middle;
// the aiod started again on the same directory has every counter at
// least at the last value its client saw acknowledged (and at most one
// more: the set in flight at the kill may have committed). A task that
// finished before the kill is still read by tasks/get.
func TestStateKill9(t *testing.T) {
	defaultEngine(t, "durability is the store's, host-side")
	t.Parallel()
	data := t.TempDir()
	policy := statePolicy(t, nil)
	a := startTally(t, policy, "--data-dir", data)

	// a task finished before the kill
	id := bashTask(t, a.URL, "sleep 1.5; echo durable-task-result")
	deadline := time.Now().Add(60 * time.Second)
	for {
		g := getTask(t, a.URL, id)
		if g["status"] == "completed" {
			break
		}
		if g["status"] != "working" || time.Now().After(deadline) {
			t.Fatalf("task: %v", g)
		}
		time.Sleep(200 * time.Millisecond)
	}

	const clients = 8
	acked := make([]atomic.Int64, clients) // written by its client, read here to see progress
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, err := count(a.URL, "", "c"+strconv.Itoa(i))
				if err != nil {
					return // the kill
				}
				if last := acked[i].Load(); int64(n) != last+1 {
					t.Errorf("client %d: counter went from %d to %d", i, last, n)
				}
				acked[i].Store(int64(n))
			}
		}()
	}
	// kill once every client has had some sets acknowledged
	deadline = time.Now().Add(60 * time.Second)
	for {
		time.Sleep(300 * time.Millisecond)
		ready := true
		for i := range clients {
			if acked[i].Load() < 5 {
				ready = false
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clients made no progress\n%s", a.Logs())
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(stop)
	_ = a.cmd.Wait()
	total, last := int64(0), make([]int64, clients)
	for i := range acked {
		last[i] = acked[i].Load()
		total += last[i]
	}
	t.Logf("killed after %d acknowledged sets: %v", total, last)

	b := startTally(t, policy, "--data-dir", data)
	for i := range clients {
		n := mustCount(t, b.URL, "", "c"+strconv.Itoa(i))
		if int64(n) < last[i]+1 || int64(n) > last[i]+2 {
			t.Errorf("counter c%d after the restart is %d: the last value acknowledged was %d (want %d or %d)", i, n-1, last[i], last[i], last[i]+1)
		}
	}
	g := getTask(t, b.URL, id)
	res, _ := json.Marshal(g["result"])
	if g["status"] != "completed" || !strings.Contains(string(res), "durable-task-result") {
		t.Errorf("the finished task after the kill: %v", g)
	}
}

// TestDataDirRefused: a second aiod on the same --data-dir, and an aiod
// over a damaged state file, stop at start with an error saying so.
func TestDataDirRefused(t *testing.T) {
	defaultEngine(t, "the store's checks are host-side")
	t.Parallel()
	bin, _ := binaries(t)
	policy := statePolicy(t, nil)
	data := t.TempDir()
	startTally(t, policy, "--data-dir", data)
	run := func(dir string) string {
		cmd := exec.Command(bin, "start", "--host", "127.0.0.1", "--port", freePort(t), "--plugins-dir", tallyGoPlugins(t),
			"--policy", policy, "--cache-dir", e2eCache(), "--browser", "off", "--data-dir", dir)
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("aiod started on %s: %s", dir, out)
		}
		if err == nil {
			t.Fatalf("aiod exited 0 on %s: %s", dir, out)
		}
		return string(out)
	}
	if out := run(data); !strings.Contains(out, "locked by another process") || !strings.Contains(out, filepath.Join(data, "state.db")) {
		t.Errorf("a second aiod on the same data dir: %s", out)
	}
	damaged := t.TempDir()
	if err := os.WriteFile(filepath.Join(damaged, "state.db"), bytes.Repeat([]byte("garbage!"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run(damaged); !strings.Contains(out, "is damaged") || !strings.Contains(out, "move it aside") {
		t.Errorf("a damaged state file: %s", out)
	}
}

// TestSharedStore: three replicas share one real redis-server (--store):
// a tenant's plugin state written through one is read through the others,
// and after all three restart;
// a tenant at its calls_per_minute quota is refused on every replica; a
// task started on one is polled to completion through another, and
// another cancelled through a third; and with
// the server stopped under load, the calls that need state fail with an
// error naming the store while the others keep working, until it is back
// (no restart of aiod).
func TestSharedStore(t *testing.T) {
	defaultEngine(t, "the shared store is host-side")
	t.Parallel()
	r := storetest.StartRedis(t)
	const limitedKey = "limited-key-0123456789"
	const stateKey = "state-key-0123456789"
	const otherKey = "other-key-0123456789"
	policy := statePolicy(t, map[string]any{
		"limited": map[string]any{"keys": []string{keyDigest(limitedKey)}, "tools": []string{"*"}, "quotas": map[string]any{"calls_per_minute": 12}},
		"counter": map[string]any{"keys": []string{keyDigest(stateKey)}, "tools": []string{"*"}},
		"other":   map[string]any{"keys": []string{keyDigest(otherKey)}, "tools": []string{"*"}},
	})
	replica := func() *aiod {
		return startArgv(t, []string{"AIOD_E2E_KEY=" + stateKey}, []string{"start", "--host", "127.0.0.1", "--port", freePort(t),
			"--plugins-dir", tallyGoPlugins(t), "--policy", policy, "--cache-dir", e2eCache(), "--browser", "off", "--store", r.URL()})
	}
	var reps []*aiod
	for range 3 {
		reps = append(reps, replica())
	}

	t.Run("state written through one replica is read through the others", func(t *testing.T) {
		for i := range 6 {
			if n := mustCount(t, reps[i%3].URL, stateKey, "shared"); n != i+1 {
				t.Fatalf("count %d through replica %d: %d", i+1, i%3, n)
			}
		}
	})

	t.Run("and after all three restart", func(t *testing.T) {
		for i, a := range reps {
			if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = a.cmd.Wait(); close(exited) }()
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("replica %d did not stop", i)
			}
		}
		for i := range reps {
			reps[i] = replica()
		}
		for i := range 3 {
			if n := mustCount(t, reps[i].URL, stateKey, "shared"); n != 7+i {
				t.Fatalf("count through the restarted replica %d: %d, want %d", i, n, 7+i)
			}
		}
	})

	t.Run("a tenant at its quota is refused on every replica", func(t *testing.T) {
		// 12 a minute holds 2 tokens (ten seconds' worth) and refills one
		// every 5 s: per replica, each would grant 2
		for i := range 2 {
			if st, _, _, e, err := rawCall(reps[i].URL, limitedKey, "echo", `{"text":"x"}`); err != nil || e != "" || st != 200 {
				t.Fatalf("call %d: %d %q %v", i, st, e, err)
			}
		}
		for i, a := range reps {
			st, _, _, e, err := rawCall(a.URL, limitedKey, "echo", `{"text":"x"}`)
			if err != nil || st != 429 || !strings.Contains(e, "calls_per_minute") {
				t.Errorf("replica %d after the tenant's 2 calls: %d %q %v", i, st, e, err)
			}
		}
	})

	t.Run("a task started on one replica is polled and cancelled through the others", func(t *testing.T) {
		id := toolTask(t, reps[0].URL, stateKey, "sandbox_execute_bash", map[string]any{"cmd": "sleep 2; echo shared-task-result", "timeout": 60, "new_session": true})
		getAs := func(url, key string) (map[string]any, map[string]any, string) {
			_, res, e, body := taskPostAs(t, url, key, "tasks/get", id, `{"taskId":"`+id+`"}`)
			return res, e, body
		}
		st, _, e, body := taskPostAs(t, reps[2].URL, stateKey, "tasks/update", id, `{"taskId":"`+id+`","inputResponses":{}}`)
		if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "runs on another aiod replica") {
			t.Errorf("tasks/update through another replica: %d %s", st, body)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			g, e, body := getAs(reps[1].URL, stateKey)
			if e != nil {
				t.Fatalf("tasks/get through replica 1: %s", body)
			}
			if g["status"] == "completed" {
				res, _ := json.Marshal(g["result"])
				if !strings.Contains(string(res), "shared-task-result") {
					t.Fatalf("result through replica 1: %s", res)
				}
				break
			}
			if g["status"] != "working" || time.Now().After(deadline) {
				t.Fatalf("task through replica 1: %v", g)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if g, e, body := getAs(reps[2].URL, stateKey); e != nil || g["status"] != "completed" {
			t.Errorf("tasks/get through replica 2: %s", body)
		}
		// cancelled through another replica than the one running it
		long := toolTask(t, reps[0].URL, stateKey, "sandbox_execute_bash", map[string]any{"cmd": "sleep 60; echo never", "timeout": 120, "new_session": true})
		if _, res, e, body := taskPostAs(t, reps[2].URL, stateKey, "tasks/cancel", long, `{"taskId":"`+long+`"}`); e != nil || res == nil {
			t.Fatalf("tasks/cancel through replica 2: %s", body)
		}
		deadline = time.Now().Add(20 * time.Second)
		for {
			_, g, e, body := taskPostAs(t, reps[1].URL, stateKey, "tasks/get", long, `{"taskId":"`+long+`"}`)
			if e != nil {
				t.Fatalf("tasks/get of the cancelled task: %s", body)
			}
			if g["status"] == "cancelled" {
				if !strings.Contains(fmt.Sprint(g["statusMessage"]), "through another replica") {
					t.Errorf("cancelled task: %v", g)
				}
				break
			}
			if g["status"] != "working" || time.Now().After(deadline) {
				t.Fatalf("task cancelled through replica 2, read through replica 1: %v", g)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// and on the replica that ran it
		if _, g, _, body := taskPostAs(t, reps[0].URL, stateKey, "tasks/get", long, `{"taskId":"`+long+`"}`); g["status"] != "cancelled" {
			t.Errorf("the cancelled task on its own replica: %s", body)
		}
		// another tenant does not see it, on any replica
		for i, a := range reps {
			if _, e, body := getAs(a.URL, otherKey); e == nil || !strings.Contains(body, "unknown task") {
				t.Errorf("another tenant's tasks/get through replica %d: %s", i, body)
			}
		}
	})

	t.Run("the store stopped and started under load", func(t *testing.T) {
		var mu sync.Mutex
		var echoFails, stateFails, stateOK, stateOKAfter int
		var stateMsgs []string
		var down, back time.Time
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				url := reps[i%3].URL
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					if i%2 == 0 { // echo needs no store
						_, text, isErr, e, err := rawCall(url, stateKey, "echo", `{"text":"e`+strconv.Itoa(j)+`"}`)
						if err != nil || e != "" || isErr || text != "e"+strconv.Itoa(j) {
							mu.Lock()
							echoFails++
							mu.Unlock()
							t.Errorf("echo while the store is away: %q %v %q %v", text, isErr, e, err)
						}
						continue
					}
					_, err := count(url, stateKey, "load"+strconv.Itoa(i))
					now := time.Now()
					mu.Lock()
					switch {
					case err == nil:
						stateOK++
						if !back.IsZero() && now.After(back) {
							stateOKAfter++
						}
					default:
						stateFails++
						if len(stateMsgs) < 3 {
							stateMsgs = append(stateMsgs, err.Error())
						}
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Second)
		mu.Lock()
		down = time.Now()
		mu.Unlock()
		r.Stop(t)
		time.Sleep(3 * time.Second)
		r.Start(t)
		mu.Lock()
		back = time.Now()
		mu.Unlock()
		deadline := time.Now().Add(20 * time.Second)
		for {
			time.Sleep(500 * time.Millisecond)
			mu.Lock()
			n := stateOKAfter
			mu.Unlock()
			if n >= 10 || time.Now().After(deadline) {
				break
			}
		}
		close(stop)
		wg.Wait()
		t.Logf("store down %s..%s: %d state calls ok, %d failed (%v), %d ok after it came back; %d echo failures",
			down.Format("15:04:05.000"), back.Format("15:04:05.000"), stateOK, stateFails, stateMsgs, stateOKAfter, echoFails)
		if stateFails == 0 {
			t.Error("no state call failed while the store was down")
		}
		for _, m := range stateMsgs {
			if !strings.Contains(m, "state store (redis "+r.Addr()+")") || !strings.Contains(m, "unavailable") {
				t.Errorf("a state call's error does not name the store: %s", m)
			}
		}
		if stateOKAfter < 10 {
			t.Errorf("only %d state calls went through after the store came back: no reconnection", stateOKAfter)
		}
	})
}
