package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/dns/dnsmessage"
)

// clusterDNS answers A queries on a loopback UDP port as a cluster's DNS
// does for a headless Service: each ready pod's name, and the Service's
// name with every ready pod's address; anything else, or a pod that is
// not ready, is NXDOMAIN.
type clusterDNS struct {
	mu   sync.Mutex
	pods map[string]net.IP // pod DNS name -> address, while ready
	svc  string            // the Service's DNS name
	addr string
}

func startClusterDNS(t *testing.T, svc string) *clusterDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	d := &clusterDNS{pods: map[string]net.IP{}, svc: svc, addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := d.answer(buf[:n]); out != nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return d
}

func (d *clusterDNS) set(name string, ip net.IP) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ip == nil {
		delete(d.pods, name)
	} else {
		d.pods[name] = ip
	}
}

func (d *clusterDNS) answer(req []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.TrimSuffix(q.Name.String(), ".")
	d.mu.Lock()
	var ips []net.IP
	if name == d.svc {
		for _, ip := range d.pods {
			ips = append(ips, ip)
		}
	} else if ip := d.pods[name]; ip != nil {
		ips = append(ips, ip)
	}
	d.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
	if q.Type == dnsmessage.TypeA && len(ips) == 0 {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	if q.Type == dnsmessage.TypeA {
		for _, ip := range ips {
			var a [4]byte
			copy(a[:], ip.To4())
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: a})
		}
	}
	out, _ := b.Finish()
	return out
}

// TestKubernetesRouter runs the router `aiod deploy kubernetes` writes
// (its ConfigMap's nginx.conf, read with a YAML parser) in Debian's
// nginx in front of three bin/aiod replicas named as the StatefulSet
// names its pods, each on an address of its own, the cluster's DNS played
// by a loopback server. The only changes to the config are where this
// machine differs from a pod: the resolver's address, the listening and
// pods' port, and the pid and temp paths. A tenant (its credential) always
// reaches one pod, the tenants spread over the pods, a pod that is down
// hands its tenants to the next pod of the ring and only those, a session
// of the gone pod is 404, and a task's tasks/update reaches its pod.
func TestKubernetesRouter(t *testing.T) {
	defaultEngine(t, "routing behind the router is host-side")
	t.Parallel()
	ngx := nginxBinary(t)
	bin, _ := binaries(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(bin, "deploy", "kubernetes", "--replicas", "3", "--image", "registry.example/aiod:1", "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("aiod deploy kubernetes: %v\n%s", err, out)
	}
	conf := routerConf(t, filepath.Join(dir, "router.yaml"))
	const svc = "aiod-replicas.default.svc.cluster.local"
	dns := startClusterDNS(t, svc)
	lb, podPort := freePort(t), freePort(t)
	for _, r := range [][2]string{ // in this order: the pid's path before the other /tmp/ ones
		{"resolver kube-dns.kube-system.svc.cluster.local valid=5s;", "resolver " + dns.addr + " valid=1s;"},
		{"listen 8080;", "listen 127.0.0.1:" + lb + ";"},
		{"pid /tmp/nginx.pid;", "pid nginx.pid;"},
		{"error_log /dev/stderr notice;", "error_log logs/error.log notice;"},
		{"/tmp/", dir + "/temp/"},
		{".svc.cluster.local:8080;", ".svc.cluster.local:" + podPort + ";"},
	} {
		if !strings.Contains(conf, r[0]) {
			t.Fatalf("the router's nginx.conf has no %q:\n%s", r[0], conf)
		}
		conf = strings.ReplaceAll(conf, r[0], r[1])
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "temp"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ngx, "-t", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "logs", "error.log")).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t of the router's config: %v\n%s", err, out)
	}
	pods := map[string]*aiod{}
	// as the StatefulSet's pods run (the drain shorter than its 5 s)
	startPod := func(i int) {
		name := fmt.Sprintf("aiod-%d", i)
		ip := net.IPv4(127, 0, 0, byte(21+i))
		pods[name] = start(t, nil, "--host", ip.String(), "--port", podPort, "--replica-id", name,
			"--state-key-file", filepath.Join(dir, "state.key"), "--browser", "off", "--drain-delay", "1s")
		dns.set(name+"."+svc, ip)
	}
	for i := range 3 {
		startPod(i)
	}
	startNginx(t, ngx, dir, lb)
	url := "http://127.0.0.1:" + lb + "/mcp"

	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	// podOf initializes a session as tenant key and returns the pod that
	// made it (its id's tag) and the id.
	podOf := func(key string) (string, string) {
		t.Helper()
		resp, body := post(t, url, initBody, map[string]string{"Authorization": "Bearer " + key})
		sid := resp.Header.Get("Mcp-Session-Id")
		tag, _, _ := strings.Cut(sid, ".")
		if resp.StatusCode != 200 || pods[tag] == nil {
			t.Fatalf("initialize as %s through the router: %d %q %s\n%s", key, resp.StatusCode, sid, body, readFile(filepath.Join(dir, "logs", "error.log")))
		}
		return tag, sid
	}
	home := map[string]string{}
	sessions := map[string]string{}
	spread := map[string]int{}
	for i := range 24 {
		key := fmt.Sprintf("tenant-key-%02d", i)
		home[key], sessions[key] = podOf(key)
		spread[home[key]]++
		for range 2 {
			if p, _ := podOf(key); p != home[key] {
				t.Fatalf("tenant %s reached %s, then %s", key, home[key], p)
			}
		}
	}
	if len(spread) != 3 {
		t.Fatalf("24 tenants over the pods: %v, want all three used", spread)
	}
	t.Logf("24 tenants over three pods: %v", spread)

	// a task's tasks/update, which only its pod serves, reaches it
	key := "tenant-key-00"
	id := toolTask(t, url, key, "slow_compute", map[string]any{"seconds": 20, "label": "k8s"})
	if !strings.HasPrefix(id, home[key]+".") {
		t.Fatalf("task id %q: want the tenant's pod %s as its tag", id, home[key])
	}
	for i := range 4 {
		if st, res, e, body := taskPostAs(t, url, key, "tasks/update", id, `{"taskId":"`+id+`","inputResponses":{}}`); st != 200 || e != nil || res["resultType"] != "complete" {
			t.Fatalf("tasks/update %d through the router: %d %s", i, st, body)
		}
	}

	// a rolling restart of aiod-0 under its tenants' calls: SIGTERM (it
	// drains, refusing new connections: the router sends them to the
	// next pod), its name leaves the DNS, the pod of the same name comes
	// back; no call fails, every answer is its own
	var calls, failed atomic.Int64
	var fails []string
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for key, p := range home {
		if p != "aiod-0" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				want := fmt.Sprintf("%s call %d", key, j)
				st, text, isErr, rpcErr, err := rawCall(url, key, "echo", `{"text":"`+want+`"}`)
				calls.Add(1)
				if err != nil || st != 200 || isErr || rpcErr != "" || text != want {
					failed.Add(1)
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%s: %d %q %v %q %v", want, st, text, isErr, rpcErr, err))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Second)
	old := pods["aiod-0"]
	if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = old.cmd.Process.Wait()
	dns.set("aiod-0."+svc, nil)
	startPod(0)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("rolling restart of aiod-0: %d calls of its tenants, %d failed %v", calls.Load(), failed.Load(), fails)
	if failed.Load() != 0 || calls.Load() < 20 {
		t.Errorf("rolling restart of aiod-0 through the router: %d of %d calls failed: %v\n%s", failed.Load(), calls.Load(), fails, readFile(filepath.Join(dir, "logs", "error.log")))
	}
	if p, _ := podOf(tenantOn(home, "aiod-0")); p != "aiod-0" {
		t.Errorf("a tenant of aiod-0 reached %s after it came back", p)
	}

	// aiod-1 goes away (its name leaves the DNS, as a pod that is not
	// ready): its tenants go to aiod-2, the others stay
	gone := pods["aiod-1"]
	dns.set("aiod-1."+svc, nil)
	_ = gone.cmd.Process.Kill()
	_, _ = gone.cmd.Process.Wait()
	moved := 0
	for key, p := range home {
		want := p
		if p == "aiod-1" {
			want, moved = "aiod-2", moved+1
		}
		if got, _ := podOf(key); got != want {
			t.Errorf("tenant %s of %s with aiod-1 gone: reached %s, want %s", key, p, got, want)
		}
	}
	if moved == 0 {
		t.Fatal("no tenant was on aiod-1: the failover was not tried")
	}
	for key, sid := range sessions {
		if home[key] != "aiod-1" {
			continue
		}
		h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer " + key}
		if resp, body := post(t, url, listBody, h); resp.StatusCode != 404 || !strings.Contains(body, "session not found") {
			t.Fatalf("a session of the gone pod: %d %s, want 404 session not found", resp.StatusCode, body)
		}
		break
	}
	// a tool call whose pod is unreachable (its name still resolving, the
	// process gone: nothing was sent) is answered by the next pod
	dns.set("aiod-1."+svc, net.IPv4(127, 0, 0, 22))
	for key, p := range home {
		if p != "aiod-1" {
			continue
		}
		st, text, isErr, rpcErr, err := rawCall(url, key, "echo", `{"text":"failover"}`)
		if err != nil || st != 200 || isErr || rpcErr != "" || text != "failover" {
			t.Fatalf("echo as %s with aiod-1 refusing connections: %d %q %v %q %v", key, st, text, isErr, rpcErr, err)
		}
	}
	// a pod that dies with a call in flight: the router had sent it, so it
	// is not sent again to the next pod (the tool would run twice); the
	// client gets 502
	key = tenantOn(home, "aiod-2")
	type answer struct {
		st   int
		text string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		st, text, _, _, err := rawCall(url, key, "slow_compute", `{"seconds":4,"label":"once"}`)
		got <- answer{st, text, err}
	}()
	time.Sleep(time.Second)
	_ = pods["aiod-2"].cmd.Process.Kill()
	select {
	case a := <-got:
		if a.st != 502 || strings.Contains(a.text, "computed") {
			t.Fatalf("a call in flight on a pod that died: %d %q %v, want 502 (not run again on the next pod)", a.st, a.text, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer for a call whose pod died")
	}
}

// tenantOn is a tenant key whose pod is pod.
func tenantOn(home map[string]string, pod string) string {
	for k, p := range home {
		if p == pod {
			return k
		}
	}
	return ""
}

// routerConf is the nginx.conf of the router's ConfigMap in router.yaml.
func routerConf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	for {
		var o struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("router.yaml: no ConfigMap with nginx.conf (%v)", err)
		}
		if o.Kind == "ConfigMap" && o.Data["nginx.conf"] != "" {
			return o.Data["nginx.conf"]
		}
	}
}
