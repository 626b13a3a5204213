package otelcol_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

// span is one span the collector's receiver took, with the service that
// sent it.
type span struct {
	Service, Name, Trace, ID, Parent string
	Kind                             ptrace.SpanKind
	Attrs                            map[string]string
	Error                            bool
}

// collector is the OpenTelemetry Collector's OTLP receiver (HTTP only) on
// a loopback port, feeding a sink.
type collector struct {
	URL  string
	sink *consumertest.TracesSink
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	addr := freeAddr(t)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	sink := new(consumertest.TracesSink)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(component.MustNewType("otlp")), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return &collector{URL: "http://" + addr, sink: sink}
}

// spans are every span received so far.
func (c *collector) spans() []span {
	var out []span
	for _, td := range c.sink.AllTraces() {
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			rs := rss.At(i)
			service := ""
			if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
				service = v.Str()
			}
			sss := rs.ScopeSpans()
			for j := range sss.Len() {
				ss := sss.At(j).Spans()
				for k := range ss.Len() {
					s := ss.At(k)
					sp := span{Service: service, Name: s.Name(), Trace: s.TraceID().String(), ID: s.SpanID().String(),
						Kind: s.Kind(), Attrs: map[string]string{}, Error: s.Status().Code() == ptrace.StatusCodeError}
					if !s.ParentSpanID().IsEmpty() {
						sp.Parent = s.ParentSpanID().String()
					}
					s.Attributes().Range(func(k string, v pcommon.Value) bool {
						sp.Attrs[k] = v.AsString()
						return true
					})
					out = append(out, sp)
				}
			}
		}
	}
	return out
}

// trace returns the spans of trace id.
func (c *collector) trace(id string) []span {
	var out []span
	for _, s := range c.spans() {
		if s.Trace == id {
			out = append(out, s)
		}
	}
	return out
}

// waitFor polls until every "service name" in want is a span of trace
// id, then waits for the exporters' last batches.
func (c *collector) waitFor(t *testing.T, id string, want ...string) []span {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		have := map[string]bool{}
		for _, s := range c.trace(id) {
			have[s.Service+" "+s.Name] = true
		}
		missing := ""
		for _, w := range want {
			if !have[w] {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s has no %q after 30 s:\n%s", id, missing, dump(c.trace(id)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	return c.trace(id)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// aiod runs bin/aiod (make build) with args and env on a free loopback
// port, stopped with SIGINT (which flushes its spans) by the returned
// function and at cleanup; it returns the /mcp URL.
func aiod(t *testing.T, env []string, args ...string) (string, func()) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs bin/aiod: make test builds and runs it, make test-short does not")
	}
	bin := filepath.Join(testplugins.Root(), "bin", "aiod")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: make build (make test builds it first)", bin)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, append([]string{"start", "--host", "127.0.0.1", "--port", port, "--cache-dir", testplugins.CacheDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	up, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var once sync.Once
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), `"msg":"aiod listening"`) {
				once.Do(func() { close(up) })
			}
		}
	}()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-up:
	case <-ended:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("bin/aiod exited before listening:\n%s", logs.String())
	case <-time.After(2 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("bin/aiod did not start:\n%s", logs.String())
	}
	return "http://" + addr + "/mcp", stop
}

// post sends one JSON-RPC request and returns the response's body.
func post(t *testing.T, url string, header map[string]string, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func one(t *testing.T, spans []span, service, name, phase string) span {
	t.Helper()
	var found []span
	for _, s := range spans {
		if s.Service == service && s.Name == name && (phase == "" || s.Attrs["aiod.guard.phase"] == phase) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q %s of %s, want 1; the trace:\n%s", len(found), name, phase, service, dump(spans))
	}
	return found[0]
}

func dump(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		a, _ := json.Marshal(s.Attrs)
		b.WriteString(s.Service + " " + s.Name + " id=" + s.ID + " parent=" + s.Parent + " " + string(a) + "\n")
	}
	return b.String()
}

// TestTraces: a call that goes plugin → upstream → plugin is one trace
// across two aiod processes, exported over OTLP/HTTP to the collector's
// receiver: the client's traceparent (in _meta) is the root's parent, the
// relay plugin's call, its instance wait and run, its aiod:upstream call
// and the upstream call nest in order, and the upstream aiod continues the
// trace from the traceparent header it was sent, down to its echo
// plugin's run. No span carries an argument value. An HTTP traceparent
// header is continued too; a malformed one starts a new trace.
func TestTraces(t *testing.T) {
	col := startCollector(t)
	echoDir, relayDir := t.TempDir(), t.TempDir()
	testplugins.Package(t, echoDir, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, relayDir, "plugins/examples/relay", host.AllFamilies(), nil)
	bURL, _ := aiod(t, []string{"OTEL_SERVICE_NAME=aiod-upstream", "OTEL_BSP_SCHEDULE_DELAY=50"},
		"--plugins-dir", echoDir, "--watch=false", "--otlp-endpoint", col.URL)
	policy := filepath.Join(t.TempDir(), "policy.json")
	pol, _ := json.Marshal(map[string]any{
		"upstreams": map[string]any{"b": map[string]any{"url": bURL, "prefix": "b"}},
		"plugins":   map[string]any{"relay": map[string]any{"upstream": map[string]any{"servers": []string{"b"}}}},
	})
	if err := os.WriteFile(policy, pol, 0o600); err != nil {
		t.Fatal(err)
	}
	url, stop := aiod(t, []string{"OTEL_BSP_SCHEDULE_DELAY=50"},
		"--plugins-dir", relayDir, "--policy", policy, "--watch=false", "--otlp-endpoint", col.URL)

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		client  = "00f067aa0ba902b7"
		secret  = "argument-text-never-in-a-span-5d2"
	)
	out := post(t, url, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"relay_call",`+
		`"arguments":{"server":"b","tool":"echo","arguments":{"text":"`+secret+`"}},`+
		`"_meta":{"traceparent":"00-`+traceID+`-`+client+`-01"}}}`)
	if !strings.Contains(out, `"text":"`+secret+`"`) || strings.Contains(out, `"isError":true`) {
		t.Fatalf("relay_call: %s", out)
	}
	const headerTrace, headerParent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	post(t, url, map[string]string{"traceparent": "00-" + headerTrace + "-" + headerParent + "-01"}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	post(t, url, nil, `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"traceparent":"00-zz-<script>-01"}}}`)
	stop() // flushes this aiod's spans

	spans := col.waitFor(t, traceID, "aiod tools/call relay_call", "aiod-upstream aiod.plugin.run", "aiod-upstream tools/call echo")
	t.Logf("the trace:\n%s", dump(spans))
	root := one(t, spans, "aiod", "tools/call relay_call", "")
	call := one(t, spans, "aiod", "aiod.plugin.call", "")
	wait := one(t, spans, "aiod", "aiod.plugin.instance", "")
	run := one(t, spans, "aiod", "aiod.plugin.run", "")
	fam := one(t, spans, "aiod", "aiod.hostfn aiod:upstream.call", "")
	up := one(t, spans, "aiod", "aiod.upstream.call", "")
	bRoot := one(t, spans, "aiod-upstream", "tools/call echo", "")
	bCall := one(t, spans, "aiod-upstream", "aiod.plugin.call", "")
	bRun := one(t, spans, "aiod-upstream", "aiod.plugin.run", "")
	for _, c := range []struct{ child, parent span }{
		{root, span{ID: client, Name: "the client's span"}}, {call, root}, {wait, call}, {run, call}, {fam, run}, {up, fam},
		{bRoot, up}, {bCall, bRoot}, {bRun, bCall},
	} {
		if c.child.Parent != c.parent.ID {
			t.Errorf("%s %q: parent %s, want %s %q", c.child.Service, c.child.Name, c.child.Parent, c.parent.ID, c.parent.Name)
		}
	}
	for _, c := range []struct {
		s    span
		want map[string]string
	}{
		{root, map[string]string{"mcp.method.name": "tools/call", "aiod.tool": "relay_call", "aiod.tenant": "default", "aiod.outcome": "ok"}},
		{call, map[string]string{"aiod.plugin": "relay", "aiod.tool": "relay_call", "aiod.tenant": "default", "aiod.outcome": "ok"}},
		{fam, map[string]string{"aiod.hostfn.family": "aiod:upstream", "aiod.hostfn.function": "call", "aiod.plugin": "relay", "aiod.outcome": "ok"}},
		{up, map[string]string{"aiod.upstream.server": "b", "aiod.tool": "echo", "aiod.outcome": "ok"}},
		{bRoot, map[string]string{"mcp.method.name": "tools/call", "aiod.tool": "echo", "aiod.outcome": "ok"}},
		{bCall, map[string]string{"aiod.plugin": "echo", "aiod.outcome": "ok"}},
	} {
		for k, v := range c.want {
			if c.s.Attrs[k] != v {
				t.Errorf("%s %q: %s = %q, want %q", c.s.Service, c.s.Name, k, c.s.Attrs[k], v)
			}
		}
	}
	if root.Kind != ptrace.SpanKindServer || up.Kind != ptrace.SpanKindClient || bRoot.Kind != ptrace.SpanKindServer {
		t.Errorf("kinds: request %v, upstream call %v, upstream's request %v", root.Kind, up.Kind, bRoot.Kind)
	}
	all := col.spans()
	if b, _ := json.Marshal(all); strings.Contains(string(b), secret) {
		t.Fatalf("a span carries the argument value:\n%s", b)
	}
	if hs := col.trace(headerTrace); len(hs) != 1 || hs[0].Name != "tools/list" || hs[0].Parent != headerParent {
		t.Fatalf("the traceparent header's trace: %s", dump(hs))
	}
	pings := 0
	for _, s := range all {
		if s.Name == "ping" {
			pings++
			if s.Parent != "" || s.Trace == "" {
				t.Fatalf("a malformed traceparent was continued: %+v", s)
			}
		}
	}
	if pings != 1 {
		t.Fatalf("%d ping spans, want 1", pings)
	}
}

// TestTraceDecisions: a tenant's quota decisions and the guards around a
// call are spans of the request's trace: admitted then refused
// (calls_per_minute), a guard that allows and one that blocks.
func TestTraceDecisions(t *testing.T) {
	col := startCollector(t)
	const aliceKey, operatorKey = "alice-secret-key-0123456789", "operator-key-1"
	echoDir := t.TempDir()
	testplugins.Package(t, echoDir, "plugins/examples/echo", nil, nil)
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"hooks":[{"plugin":"secrets","tools":["echo"]}],"tenants":{
	  "alice":{"keys":[`+strconv.Quote(caps.KeyLine(sha256.Sum256([]byte(aliceKey))))+`],"tools":["echo"],"quotas":{"calls_per_minute":6}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url, stop := aiod(t, []string{"OTEL_BSP_SCHEDULE_DELAY=50", "AIO_API_KEY=" + operatorKey},
		"--plugins-dir", echoDir, "--policy", policy, "--watch=false", "--otlp-endpoint", col.URL)
	send := func(key, traceID, text string) string {
		t.Helper()
		return post(t, url, map[string]string{"Authorization": "Bearer " + key}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":`+
			strconv.Quote(text)+`},"_meta":{"traceparent":"00-`+traceID+`-00f067aa0ba902b7-01"}}}`)
	}
	const admitted, refused, blocked = "11111111111111111111111111111111", "22222222222222222222222222222222", "33333333333333333333333333333333"
	if out := send(aliceKey, admitted, "clean"); !strings.Contains(out, `"clean"`) {
		t.Fatalf("first call: %s", out)
	}
	if out := send(aliceKey, refused, "again"); !strings.Contains(out, "calls_per_minute") {
		t.Fatalf("second call at once (burst 1): %s, want the quota's refusal", out)
	}
	if out := send(operatorKey, blocked, "AKIAIOSFODNN7EXAMPLE"); !strings.Contains(out, "Blocked by the operator's hook (guard secrets)") {
		t.Fatalf("a credential in the arguments: %s", out)
	}
	stop()

	ad := col.waitFor(t, admitted, "aiod aiod.quota", "aiod tools/call echo", "aiod aiod.guard")
	q := one(t, ad, "aiod", "aiod.quota", "")
	req := one(t, ad, "aiod", "tools/call echo", "")
	before, after := one(t, ad, "aiod", "aiod.guard", "before"), one(t, ad, "aiod", "aiod.guard", "after")
	if q.Attrs["aiod.outcome"] != "admitted" || q.Attrs["aiod.tenant"] != "alice" || q.Parent != "00f067aa0ba902b7" || q.Error {
		t.Errorf("admitted: %+v", q)
	}
	if before.Parent != req.ID || after.Parent != req.ID || before.Attrs["aiod.outcome"] != "allowed" || before.Attrs["aiod.guard"] != "guard secrets" ||
		before.Attrs["aiod.tenant"] != "alice" || before.Attrs["aiod.tool"] != "echo" {
		t.Errorf("guards: %+v %+v (request %s)", before, after, req.ID)
	}
	rf := col.waitFor(t, refused, "aiod aiod.quota")
	if r := one(t, rf, "aiod", "aiod.quota", ""); r.Attrs["aiod.outcome"] != "refused" || r.Attrs["aiod.quota"] != "calls_per_minute" || !r.Error {
		t.Errorf("refused: %+v", r)
	}
	if len(rf) != 1 {
		t.Errorf("a refused request ran: %s", dump(rf))
	}
	bl := col.waitFor(t, blocked, "aiod aiod.guard")
	if b := one(t, bl, "aiod", "aiod.guard", "before"); b.Attrs["aiod.outcome"] != "blocked" || !b.Error {
		t.Errorf("blocked: %+v", b)
	}
	for _, s := range bl {
		if s.Name == "aiod.plugin.call" && s.Attrs["aiod.plugin"] == "echo" {
			t.Error("the blocked call ran the echo plugin")
		}
	}
	for _, s := range col.spans() {
		if a, _ := json.Marshal(s.Attrs); strings.Contains(string(a), "AKIA") {
			t.Fatalf("a span carries the argument: %+v", s)
		}
	}
}
