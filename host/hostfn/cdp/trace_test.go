package cdp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/sdk/abi"
)

// memory is a guest's linear memory for calling the family's functions
// as a guest does (through hostfn.ReqResp, which makes their spans).
type memory []byte

func (m memory) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func (m memory) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}

// guestCall runs aiod:cdp.<name> with req as a guest would and returns
// its ABI code and response.
func guestCall(t *testing.T, ctx context.Context, f *Family, c *hostfn.Call, name string, req any) (abi.Code, []byte) {
	t.Helper()
	body, _ := json.Marshal(req)
	mem := make(memory, len(body))
	copy(mem, body)
	for _, d := range f.Defs() {
		if d.Name == name {
			stack := []uint64{0, uint64(len(body))}
			d.Fn(ctx, c, mem, stack)
			return abi.Code(stack[0] >> 32), c.Response
		}
	}
	t.Fatalf("no function %s", name)
	return 0, nil
}

// TestTraceContextToPage: with tracing on, every aiod:cdp function call
// is a span (aiod.hostfn aiod:cdp.<function>) and a Page.navigate a
// plugin sends through aiod:cdp.call makes the page's document request
// carry that call's span as its traceparent header, in real Chromium
// against a loopback server that records the headers; its stylesheet and
// its script's fetch to another origin go without (no CORS preflight);
// the plugin's own session gets no event from it. With tracing off no new
// trace context is set.
func TestTraceContextToPage(t *testing.T) {
	if testing.Short() {
		t.Skip("launches Chromium: make test runs it, make test-short does not")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatalf("chromium is not installed (.ci/run installs it): %v", err)
	}
	var mu sync.Mutex
	seen := map[string][]string{} // "METHOD path" -> traceparent headers
	record := func(r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.URL.Path] = append(seen[r.Method+" "+r.URL.Path], r.Header.Get("traceparent"))
		mu.Unlock()
	}
	// another origin, answering CORS for simple requests only: a
	// traceparent header on the page's fetch would make it preflight
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		io.WriteString(w, "{}")
	}))
	defer api.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		switch r.URL.Path {
		case "/style.css":
			w.Header().Set("Content-Type", "text/css")
			io.WriteString(w, "body{}")
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><link rel="stylesheet" href="/style.css"><p>page</p><script>fetch("`+api.URL+`/api")</script>`)
		}
	}))
	defer srv.Close()
	headers := func(key string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen[key]...)
	}

	b, err := browser.New(browser.Config{Mode: browser.Launch, Viewport: "800x600", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f := New(b)
	scope := abi.CDPScope{Methods: []string{"Page.*", "Runtime.evaluate"}}
	pol := &caps.Policy{Default: &abi.Capabilities{CDP: &scope}}
	c := &hostfn.Call{Plugin: "pages", Owner: "default", Grant: pol.Allow(&abi.Manifest{Name: "pages", Capabilities: abi.Capabilities{CDP: &scope}}, caps.Env{})}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracing.Enable(tp)
	defer tracing.Disable()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx, root := tracing.Start(ctx, "test")
	code, resp := guestCall(t, ctx, f, c, "attach", abi.CDPAttachRequest{})
	if code != abi.OK {
		t.Fatalf("attach: %s %s", code, resp)
	}
	var att abi.CDPAttachResponse
	_ = json.Unmarshal(resp, &att)
	if code, resp := guestCall(t, ctx, f, c, "call", abi.CDPCallRequest{Session: att.Session, Method: "Page.enable"}); code != abi.OK {
		t.Fatalf("Page.enable: %s %s", code, resp)
	}
	params, _ := json.Marshal(map[string]string{"url": srv.URL + "/"})
	if code, resp := guestCall(t, ctx, f, c, "call", abi.CDPCallRequest{Session: att.Session, Method: "Page.navigate", Params: params}); code != abi.OK {
		t.Fatalf("Page.navigate: %s %s", code, resp)
	}
	deadline := time.Now().Add(20 * time.Second)
	for (len(headers("GET /style.css")) == 0 || len(headers("GET /api")) == 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if code, resp := guestCall(t, ctx, f, c, "targets", struct{}{}); code != abi.OK {
		t.Fatalf("targets: %s %s", code, resp)
	}
	if code, resp := guestCall(t, ctx, f, c, "info", struct{}{}); code != abi.OK {
		t.Fatalf("info: %s %s", code, resp)
	}
	code, resp = guestCall(t, ctx, f, c, "events", abi.CDPEventsRequest{Session: att.Session})
	if code != abi.OK {
		t.Fatalf("events: %s %s", code, resp)
	}
	if strings.Contains(string(resp), `"Network.`) || strings.Contains(string(resp), `"Fetch.`) {
		t.Errorf("the plugin's session got Network or Fetch events it never enabled: %s", resp)
	}
	if code, resp := guestCall(t, ctx, f, c, "detach", abi.CDPSessionRequest{Session: att.Session}); code != abi.OK {
		t.Fatalf("detach: %s %s", code, resp)
	}
	root.End()

	// the spans: one per function call, children of the caller's span
	var navigate sdktrace.ReadOnlySpan
	names := map[string]int{}
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() != root.SpanContext().SpanID() {
			continue
		}
		names[s.Name()]++
		for _, a := range s.Attributes() {
			if a.Key == attrMethod && a.Value.AsString() == "Page.navigate" {
				navigate = s
			}
		}
	}
	for _, fn := range []string{"attach", "call", "targets", "info", "events", "detach"} {
		if names[tracing.HostfnSpanName(abi.ModuleCDP, fn)] == 0 {
			t.Errorf("no span %q: %v", tracing.HostfnSpanName(abi.ModuleCDP, fn), names)
		}
	}
	if navigate == nil {
		t.Fatalf("no span of the Page.navigate call: %v", names)
	}
	var carried string
	for _, a := range navigate.Attributes() {
		if a.Key == attrCarry {
			carried = a.Value.AsString()
		}
	}
	if carried != "sent" {
		t.Errorf("the navigate span's %s = %q, want sent", attrCarry, carried)
	}
	want := "00-" + navigate.SpanContext().TraceID().String() + "-" + navigate.SpanContext().SpanID().String() + "-01"
	if h := headers("GET /"); len(h) != 1 || h[0] != want {
		t.Errorf("the document: traceparent %q, want the navigate call's %q", h, want)
	}
	// subresources and the page's own fetches go as the page sends them:
	// no header, so no CORS preflight to another origin
	if h := headers("GET /style.css"); len(h) != 1 || h[0] != "" {
		t.Errorf("the stylesheet: traceparent %q, want none", h)
	}
	if h, pre := headers("GET /api"), headers("OPTIONS /api"); len(h) != 1 || h[0] != "" || len(pre) != 0 {
		t.Errorf("the page's cross-origin fetch: traceparent %q, preflights %d, want neither", h, len(pre))
	}

	// tracing off: a navigation no call traced sends no new trace context
	tracing.Disable()
	mu.Lock()
	clear(seen)
	mu.Unlock()
	code, resp = guestCall(t, context.Background(), f, c, "attach", abi.CDPAttachRequest{})
	if code != abi.OK {
		t.Fatalf("attach: %s %s", code, resp)
	}
	_ = json.Unmarshal(resp, &att)
	params, _ = json.Marshal(map[string]string{"url": srv.URL + "/again"})
	if code, resp := guestCall(t, context.Background(), f, c, "call", abi.CDPCallRequest{Session: att.Session, Method: "Page.navigate", Params: params}); code != abi.OK {
		t.Fatalf("Page.navigate, tracing off: %s %s", code, resp)
	}
	if h := headers("GET /again"); len(h) == 0 || (h[0] != "" && h[0] != want) {
		t.Errorf("tracing off: traceparent %q", h)
	}
}
