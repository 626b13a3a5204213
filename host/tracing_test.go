package host_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/plugins/builtin"
)

// span is one span a receiver got, with the service that sent it.
type span struct {
	Service, Name, Trace, ID, Parent string
	Kind                             tracepb.Span_SpanKind
	Attrs                            map[string]string
	Error                            bool
}

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes
// each ExportTraceServiceRequest (protobuf, gzip or not) as the
// collector's receiver does, and keeps the spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []span
	bad   []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fail := func(msg string) {
			r.mu.Lock()
			r.bad = append(r.bad, msg)
			r.mu.Unlock()
			http.Error(w, msg, http.StatusBadRequest)
		}
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			fail("unexpected " + req.Method + " " + req.URL.Path + " " + req.Header.Get("Content-Type"))
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(req.Body)
			if err != nil {
				fail(err.Error())
				return
			}
			body = z
		}
		b, err := io.ReadAll(body)
		var ex coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &ex)
		}
		if err != nil {
			fail(err.Error())
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := span{Service: service, Name: s.Name, Trace: hex.EncodeToString(s.TraceId), ID: hex.EncodeToString(s.SpanId),
						Parent: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind, Attrs: map[string]string{},
						Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
					for _, a := range s.Attributes {
						v := a.GetValue()
						switch {
						case v.GetStringValue() != "":
							sp.Attrs[a.Key] = v.GetStringValue()
						default:
							sp.Attrs[a.Key] = strconv.FormatInt(v.GetIntValue(), 10)
						}
					}
					r.spans = append(r.spans, sp)
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// trace returns the spans of trace id.
func (r *otlpReceiver) trace(id string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.Trace == id {
			out = append(out, s)
		}
	}
	return out
}

// aiodBinary runs bin/aiod (make build) with args and env on a free
// loopback port, stopped (SIGINT, which flushes its spans) at cleanup; it
// returns the /mcp URL.
func aiodBinary(t *testing.T, env []string, args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs bin/aiod: make test builds and runs it, make test-short does not")
	}
	bin := filepath.Join(testplugins.Root(), "bin", "aiod")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: make build (make test builds it first)", bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin, append([]string{"start", "--host", "127.0.0.1", "--port", port, "--cache-dir", testplugins.CacheDir()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	var logs strings.Builder
	var mu sync.Mutex
	up := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), `"msg":"aiod listening"`) {
				once.Do(func() { close(up) })
			}
		}
	}()
	t.Cleanup(func() {
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
	select {
	case <-up:
	case <-ended:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("bin/aiod exited before listening (make build builds it):\n%s", logs.String())
	case <-time.After(2 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("bin/aiod did not start:\n%s", logs.String())
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

// TestTraces: a call that goes plugin → upstream → plugin is one trace
// across two aiod processes, exported over OTLP/HTTP to a receiver: the
// client's traceparent (in _meta) is the root's parent, the relay
// plugin's call, its instance wait and run, its aiod:upstream call and the
// upstream call nest in order, the upstream aiod (bin/aiod with
// --otlp-endpoint) continues the trace from the traceparent header it was
// sent, down to its echo plugin's run. No span carries an argument value.
// An HTTP traceparent header is continued too; a malformed one starts a
// new trace.
func TestTraces(t *testing.T) {
	recv := newOTLPReceiver(t)
	echoDir := t.TempDir()
	testplugins.Package(t, echoDir, "plugins/examples/echo", nil, nil)
	bURL := aiodBinary(t, []string{"OTEL_SERVICE_NAME=aiod-upstream", "OTEL_BSP_SCHEDULE_DELAY=50"},
		"--plugins-dir", echoDir, "--watch=false", "--otlp-endpoint", recv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	url, stop := startUpstreamHost(t, []upstream.Server{{Name: "b", URL: bURL, Prefix: "b"}}, func(c *host.Config) {
		testplugins.Package(t, c.PluginsDir, "plugins/examples/relay", host.AllFamilies(), nil)
		c.PolicyFile = filepath.Join(t.TempDir(), "policy.json")
		must(t, os.WriteFile(c.PolicyFile, []byte(`{"plugins":{"relay":{"upstream":{"servers":["b"]}}}}`), 0o644))
		c.OTLPEndpoint = recv.URL
	})

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		client  = "00f067aa0ba902b7"
		secret  = "argument-text-never-in-a-span-5d2"
	)
	a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"relay_call",`+
		`"arguments":{"server":"b","tool":"echo","arguments":{"text":"`+secret+`"}},`+
		`"_meta":{"traceparent":"00-`+traceID+`-`+client+`-01"}}}`)
	if a.Error != nil || a.Result.IsError || len(a.Result.Content) != 1 || a.Result.Content[0].Text != secret {
		t.Fatalf("relay_call: %s", raw)
	}
	// the header form: a tools/list with a traceparent header
	const headerTrace, headerParent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("traceparent", "00-"+headerTrace+"-"+headerParent+"-01")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	// a malformed traceparent is ignored (a trace of its own)
	req, _ = http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"traceparent":"00-zz-<script>-01"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	stop() // flushes this host's spans

	byName := func(spans []span, service, name string) span {
		t.Helper()
		var found []span
		for _, s := range spans {
			if s.Service == service && s.Name == name {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans %q of %s in the trace, want 1; the trace:\n%s", len(found), name, service, dump(spans))
		}
		return found[0]
	}
	var spans []span
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = recv.trace(traceID)
		names := map[string]bool{}
		for _, s := range spans {
			names[s.Service+" "+s.Name] = true
		}
		if names["aiod tools/call relay_call"] && names["aiod-upstream aiod.plugin.run"] && names["aiod-upstream tools/call echo"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trace is incomplete after 30 s:\n%s\nreceiver errors: %v", dump(spans), recv.bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the upstream's last batch
	spans = recv.trace(traceID)
	t.Logf("the trace:\n%s", dump(spans))

	root := byName(spans, "aiod", "tools/call relay_call")
	call := byName(spans, "aiod", "aiod.plugin.call")
	wait := byName(spans, "aiod", "aiod.plugin.instance")
	run := byName(spans, "aiod", "aiod.plugin.run")
	fam := byName(spans, "aiod", "aiod.hostfn aiod:upstream.call")
	up := byName(spans, "aiod", "aiod.upstream.call")
	bRoot := byName(spans, "aiod-upstream", "tools/call echo")
	bCall := byName(spans, "aiod-upstream", "aiod.plugin.call")
	bRun := byName(spans, "aiod-upstream", "aiod.plugin.run")
	for _, c := range []struct {
		child, parent span
	}{{root, span{ID: client, Name: "the client's span"}}, {call, root}, {wait, call}, {run, call}, {fam, run}, {up, fam},
		{bRoot, up}, {bCall, bRoot}, {bRun, bCall}} {
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
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER || up.Kind != tracepb.Span_SPAN_KIND_CLIENT || bRoot.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("kinds: request %v, upstream call %v, upstream's request %v", root.Kind, up.Kind, bRoot.Kind)
	}
	b, _ := json.Marshal(spans)
	if bytes.Contains(b, []byte(secret)) {
		t.Fatalf("a span carries the argument value:\n%s", b)
	}

	hs := recv.trace(headerTrace)
	if len(hs) != 1 || hs[0].Name != "tools/list" || hs[0].Parent != headerParent {
		t.Fatalf("the traceparent header's trace: %s", dump(hs))
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, s := range recv.spans {
		if s.Name == "ping" && (s.Parent != "" || s.Trace == "") {
			t.Fatalf("a malformed traceparent was continued: %+v", s)
		}
	}
	if len(recv.bad) > 0 {
		t.Fatalf("the receiver refused exports: %v", recv.bad)
	}
}

func dump(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.Service + " " + s.Name + " id=" + s.ID + " parent=" + s.Parent + " " + strings.TrimSpace(strings.ReplaceAll(strconv.Quote(toJSON(s.Attrs)), `\"`, `"`)) + "\n")
	}
	return b.String()
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestTraceDecisions: a tenant's quota decisions and the guards around a
// call are spans of the request's trace: admitted then refused
// (calls_per_minute), a guard that allows and one that blocks.
func TestTraceDecisions(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	policy := filepath.Join(t.TempDir(), "policy.json")
	writeHookPolicy(t, policy, `{"hooks":[{"plugin":"secrets","tools":["echo"]}],"tenants":{
	  "alice":{"keys":[`+strconv.Quote(keyLine(aliceKey))+`],"tools":["echo"],"quotas":{"calls_per_minute":6}}}}`, 0o600)
	_, url, stop := runHost(t, host.Config{PluginsDir: echoDir(t), PolicyFile: policy, Builtins: builtin.FS(), APIKey: "operator-key-1",
		OTLPEndpoint: recv.URL})
	send := func(key, traceID, text string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + strconv.Quote(text) +
			`},"_meta":{"traceparent":"00-` + traceID + `-00f067aa0ba902b7-01"}}}`
		_, _, out := adminRequest(t, "POST", url+"/mcp", map[string]string{"Authorization": "Bearer " + key,
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, body)
		return out
	}
	const admitted, refused, blocked = "11111111111111111111111111111111", "22222222222222222222222222222222", "33333333333333333333333333333333"
	if out := send(aliceKey, admitted, "clean"); !strings.Contains(out, `"clean"`) {
		t.Fatalf("first call: %s", out)
	}
	if out := send(aliceKey, refused, "again"); !strings.Contains(out, "calls_per_minute") {
		t.Fatalf("second call at once (burst 1): %s, want the quota's refusal", out)
	}
	if out := send("operator-key-1", blocked, "AKIAIOSFODNN7EXAMPLE"); !strings.Contains(out, "Blocked by the operator's hook (guard secrets)") {
		t.Fatalf("a credential in the arguments: %s", out)
	}
	stop()

	one := func(trace, name, phase string) span {
		t.Helper()
		var found []span
		for _, s := range recv.trace(trace) {
			if s.Name == name && (phase == "" || s.Attrs["aiod.guard.phase"] == phase) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans %q %s in trace %s, want 1:\n%s", len(found), name, phase, trace, dump(recv.trace(trace)))
		}
		return found[0]
	}
	q := one(admitted, "aiod.quota", "")
	req := one(admitted, "tools/call echo", "")
	before, after := one(admitted, "aiod.guard", "before"), one(admitted, "aiod.guard", "after")
	if q.Attrs["aiod.outcome"] != "admitted" || q.Attrs["aiod.tenant"] != "alice" || q.Parent != "00f067aa0ba902b7" || q.Error {
		t.Errorf("admitted: %+v", q)
	}
	if before.Parent != req.ID || after.Parent != req.ID || before.Attrs["aiod.outcome"] != "allowed" || before.Attrs["aiod.guard"] != "guard secrets" ||
		before.Attrs["aiod.tenant"] != "alice" || before.Attrs["aiod.tool"] != "echo" {
		t.Errorf("guards: %+v %+v (request %s)", before, after, req.ID)
	}
	if r := one(refused, "aiod.quota", ""); r.Attrs["aiod.outcome"] != "refused" || r.Attrs["aiod.quota"] != "calls_per_minute" || !r.Error {
		t.Errorf("refused: %+v", r)
	}
	if len(recv.trace(refused)) != 1 {
		t.Errorf("a refused request ran: %s", dump(recv.trace(refused)))
	}
	if b := one(blocked, "aiod.guard", "before"); b.Attrs["aiod.outcome"] != "blocked" || !b.Error {
		t.Errorf("blocked: %+v", b)
	}
	for _, s := range recv.trace(blocked) {
		if s.Name == "aiod.plugin.call" && s.Attrs["aiod.plugin"] == "echo" {
			t.Error("the blocked call ran the echo plugin")
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, s := range recv.spans {
		if strings.Contains(toJSON(s.Attrs), "AKIA") {
			t.Fatalf("a span carries the argument: %+v", s)
		}
	}
}

// TestTraceSettingsRefused: an endpoint or OTEL_ setting aiod cannot export
// to refuses to start, naming it.
func TestTraceSettingsRefused(t *testing.T) {
	for _, c := range []struct{ endpoint, env, val, want string }{
		{"ftp://127.0.0.1:4318", "", "", "OTLP endpoint"},
		{"http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		if c.env != "" {
			t.Setenv(c.env, c.val)
		}
		_, err := host.New(t.Context(), host.Config{CacheDir: "-", OTLPEndpoint: c.endpoint})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s=%s: %v, want an error naming %s", c.endpoint, c.env, c.val, err, c.want)
		}
	}
}
