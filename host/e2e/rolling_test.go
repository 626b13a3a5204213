package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/store/storetest"
)

// TestRollingRestart: three replicas behind Debian's nginx, configured by
// `aiod deploy nginx` and run with the flags it prints (--drain-delay 2s
// among them), restarted one at a time (SIGTERM, then started again on
// the same port) while 32 clients call echo through nginx without pause:
// no call fails, and every answer is the one its request asked for. While
// a replica drains it refuses new connections (nginx tries another) and
// is still running.
func TestRollingRestart(t *testing.T) {
	defaultEngine(t, "draining is host-side")
	t.Parallel()
	ngx := nginxBinary(t)
	dir, lb, printed := deployNginx(t, 3)
	const drain = 2 * time.Second // what deploy prints
	if !strings.Contains(printed[0][1], "--drain-delay "+drain.String()) {
		t.Fatalf("deploy does not print --drain-delay %s: %s", drain, printed[0][1])
	}
	args := func(i int) []string { return append(strings.Fields(printed[i][1]), "--browser", "off") }
	reps := []*aiod{start(t, nil, args(0)...), start(t, nil, args(1)...), start(t, nil, args(2)...)}
	startNginx(t, ngx, dir, lb)
	url := "http://127.0.0.1:" + lb + "/mcp"

	var calls, failed atomic.Int64
	var mu sync.Mutex
	var fails []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				want := fmt.Sprintf("client %d call %d", i, j)
				st, text, isErr, rpcErr, err := rawCall(url, "", "echo", `{"text":"`+want+`"}`)
				calls.Add(1)
				if err != nil || rpcErr != "" || isErr || st != 200 || text != want {
					failed.Add(1)
					mu.Lock()
					if len(fails) < 5 {
						fails = append(fails, fmt.Sprintf("%s: %d %q %v %q %v", want, st, text, isErr, rpcErr, err))
					}
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Second)
	for i := range reps {
		before := calls.Load()
		a := reps[i]
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(exited) }()
		// draining: new connections refused while the process lives on
		time.Sleep(drain / 4)
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(a.Base, "http://"), time.Second); err == nil {
			c.Close()
			t.Errorf("replica %d accepts a connection while draining", i)
		}
		select {
		case <-exited:
			t.Errorf("replica %d exited before its drain delay (%s)", i, drain)
		default:
		}
		select {
		case <-exited:
		case <-time.After(drain + 20*time.Second):
			t.Fatalf("replica %d did not exit after SIGTERM:\n%s", i, a.Logs())
		}
		reps[i] = start(t, nil, args(i)...)
		t.Logf("replica %d restarted; %d calls meanwhile", i, calls.Load()-before)
		// nginx keeps a server it failed to reach aside for its
		// fail_timeout (10 s): the next restart waits for it to be back
		time.Sleep(11 * time.Second)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d calls through three rolling restarts, %d failed %v", calls.Load(), failed.Load(), fails)
	if failed.Load() != 0 {
		log := readFile(filepath.Join(dir, "logs", "error.log"))
		if len(log) > 4000 {
			log = log[len(log)-4000:]
		}
		t.Errorf("%d of %d calls failed during the rolling restart: %v\nnginx's error log:\n%s", failed.Load(), calls.Load(), fails, log)
	}
	if calls.Load() < 100 {
		t.Errorf("only %d calls went through", calls.Load())
	}
}

// TestKillReplica: two replicas behind nginx sharing a real redis-server,
// 16 clients adding to their own counters (plugin state) through nginx;
// one replica is killed with SIGKILL. Only the calls in flight on it at
// that moment fail (at most one per client), the rest go to the other
// replica, and no acknowledged set is lost: read through the survivor,
// every counter is where its client last saw it, or one more (the set in
// flight at the kill may have committed).
func TestKillReplica(t *testing.T) {
	defaultEngine(t, "failover is host-side")
	t.Parallel()
	ngx := nginxBinary(t)
	r := storetest.StartRedis(t)
	dir, lb, printed := deployNginx(t, 2)
	policy := statePolicy(t, nil)
	var reps []*aiod
	for _, p := range printed {
		reps = append(reps, startArgv(t, nil, append(append([]string{"start"}, strings.Fields(p[1])...),
			"--plugins-dir", tallyGoPlugins(t), "--policy", policy, "--cache-dir", e2eCache(), "--browser", "off", "--store", r.URL())))
	}
	startNginx(t, ngx, dir, lb)
	url := "http://127.0.0.1:" + lb + "/mcp"

	const clients = 16
	acked := make([]int, clients)
	failures := make([]int, clients)
	var total atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("kill-%d", i)
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, err := count(url, "", name)
				total.Add(1)
				switch {
				case err != nil:
					failures[i]++
				case n == acked[i]+1 || (n == acked[i]+2 && failures[i] > 0):
					acked[i] = n // +2: a failed call's set had committed
				default:
					t.Errorf("client %d: counter went from %d to %d", i, acked[i], n)
					acked[i] = n
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	before := total.Load()
	if err := reps[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	failed := 0
	for _, f := range failures {
		failed += f
		if f > 1 {
			t.Errorf("a client saw %d failed calls: more than its call in flight at the kill", f)
		}
	}
	t.Logf("%d calls before the kill, %d after; %d failed (the calls in flight on the killed replica)", before, total.Load()-before, failed)
	if total.Load()-before < 100 {
		t.Errorf("only %d calls after the kill: the survivor did not take over", total.Load()-before)
	}
	for i := range clients {
		n := mustCount(t, reps[1].URL, "", fmt.Sprintf("kill-%d", i))
		if n < acked[i]+1 || n > acked[i]+2 {
			t.Errorf("counter %d read through the survivor is %d, the last acknowledged %d", i, n-1, acked[i])
		}
	}
}

// TestTenantAffinity: behind nginx as `aiod deploy nginx` writes it, a
// tenant's requests without a session (here its initializes, whose
// session id names the replica that served it) all reach one replica, the
// tenants spread over both, requests without a credential go round robin,
// and when a replica is killed its tenants move to the other.
func TestTenantAffinity(t *testing.T) {
	defaultEngine(t, "routing is nginx's")
	t.Parallel()
	ngx := nginxBinary(t)
	dir, lb, printed := deployNginx(t, 2)
	tenants := map[string]any{}
	var keys []string
	for i := range 16 {
		k := fmt.Sprintf("tenant-key-%02d-0123456789", i)
		keys = append(keys, k)
		tenants[fmt.Sprintf("t%02d", i)] = map[string]any{"keys": []string{keyDigest(k)}, "tools": []string{"*"}}
	}
	policy := statePolicy(t, tenants)
	var reps []*aiod
	for _, p := range printed {
		reps = append(reps, startArgv(t, []string{"AIOD_E2E_KEY=" + keys[0]}, append(append([]string{"start"}, strings.Fields(p[1])...),
			"--plugins-dir", tallyGoPlugins(t), "--policy", policy, "--cache-dir", e2eCache(), "--browser", "off")))
	}
	startNginx(t, ngx, dir, lb)
	url := "http://127.0.0.1:" + lb + "/mcp"
	initialize := func(key string) string {
		h := map[string]string{}
		if key != "" {
			h["Authorization"] = "Bearer " + key
		}
		resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, h)
		tag, _, ok := strings.Cut(resp.Header.Get("Mcp-Session-Id"), ".")
		if resp.StatusCode != 200 || !ok {
			t.Fatalf("initialize through nginx with key %q: %d %s", key, resp.StatusCode, body)
		}
		return tag
	}
	home := map[string]string{}
	spread := map[string]int{}
	for _, k := range keys {
		home[k] = initialize(k)
		spread[home[k]]++
		for range 3 {
			if tag := initialize(k); tag != home[k] {
				t.Fatalf("tenant %s went to %s, then %s", k, home[k], tag)
			}
		}
	}
	if len(spread) != 2 {
		t.Errorf("16 tenants all on one replica: %v", spread)
	}
	t.Logf("tenants per replica: %v", spread)

	// the replica of tenant 0 dies: its tenants move, the others stay
	dead := home[keys[0]]
	victim := reps[0]
	if printed[1][2] == dead {
		victim = reps[1]
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()
	for _, k := range keys {
		tag := initialize(k)
		switch {
		case home[k] == dead && tag == dead:
			t.Errorf("tenant %s still sent to the dead replica %s", k, dead)
		case home[k] != dead && tag != home[k]:
			t.Errorf("tenant %s moved from the live replica %s to %s", k, home[k], tag)
		}
	}
}
