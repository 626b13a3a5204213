package sandboxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The built-ins, in tools/list order, and the package of each.
var builtins = []struct{ name, pkg string }{
	{"sandbox_execute_bash", "plugins/sandbox/bash"},
	{"sandbox_execute_code", "plugins/sandbox/code"},
	{"sandbox_file_operations", "plugins/sandbox/files"},
	{"sandbox_str_replace_editor", "plugins/sandbox/editor"},
	{"sandbox_get_context", "plugins/sandbox/context"},
	{"sandbox_get_packages", "plugins/sandbox/packages"},
	{"sandbox_load_skill", "plugins/sandbox/skill"},
	{"browser_get_info", "plugins/sandbox/browserinfo"},
	{"browser_gui_screenshot", "plugins/sandbox/browsershot"},
	{"browser_gui_execute_action", "plugins/sandbox/browseraction"},
}

var (
	buildOnce sync.Once
	builtDir  string
	buildErr  error
	cacheDir  string
)

// plugins builds the ten built-ins once per test binary and returns the
// directory holding their packages and the order file.
func plugins(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aiod-sandboxtest-")
		if err != nil {
			buildErr = err
			return
		}
		builtDir = dir
		fams := host.AllFamilies()
		var order []string
		for _, b := range builtins {
			testplugins.Package(t, dir, b.pkg, fams, nil)
			order = append(order, b.name)
		}
		buildErr = os.WriteFile(filepath.Join(dir, "order"), []byte(strings.Join(order, "\n")+"\n"), 0o644)
		// The modules were compiled into the shared cache while they
		// were described; the host reuses it.
		cacheDir = testplugins.CacheDir()
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtDir
}

func TestMain(m *testing.M) {
	flag.Parse()
	root, err := makeSkills()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skillsRoot = root
	os.Setenv("AIO_SKILLS_PATH", root)
	code := m.Run()
	os.RemoveAll(root)
	if wsDir != "" {
		os.RemoveAll(wsDir)
	}
	for _, s := range servers {
		s.stop()
	}
	if pageToolsDir != "" {
		os.RemoveAll(pageToolsDir) // pagetools_test.go
	}
	if builtDir != "" {
		os.RemoveAll(builtDir)
		os.RemoveAll(builtDir + "-browser") // browser_test.go
	}
	os.Exit(code)
}

// server is a running host.
type server struct {
	url    string
	h      *host.Host
	cancel context.CancelFunc
	done   chan error
	ids    atomic.Int64
}

func (s *server) stop() {
	s.cancel()
	<-s.done
	s.h.Close(context.Background())
}

var (
	serversMu sync.Mutex
	servers   = map[string]*server{}
)

// sharedServer returns the host for a workspace ("" for none) on the
// default engine, started on first use and shared by the tests of the
// binary.
func sharedServer(t testing.TB, workspace string) *server {
	t.Helper()
	return sharedServerOn(t, workspace, runtimetest.Default)
}

// onEngines runs f as a subtest per engine of the engine table
// (runtimetest.Engines): the tests whose subject is the engine.
func onEngines(t *testing.T, f func(t *testing.T, engine string)) {
	runtimetest.OnEngines(t, func(t *testing.T, e *runtimetest.Engine) { f(t, e.Name) })
}

// defaultEngine marks a test whose subject is not the engine: it runs on
// the default engine only, for the reason given.
func defaultEngine(t testing.TB, reason string) {
	t.Helper()
	runtimetest.DefaultOnly(t, reason)
}

// sharedServerOn is sharedServer on the named engine.
func sharedServerOn(t testing.TB, workspace, engine string) *server {
	t.Helper()
	dir := plugins(t)
	serversMu.Lock()
	defer serversMu.Unlock()
	key := engine + "\x00" + workspace
	if s := servers[key]; s != nil {
		return s
	}
	s := startServer(t, dir, workspace, engine)
	servers[key] = s
	return s
}

func startServer(t testing.TB, dir, workspace, engine string) *server {
	t.Helper()
	// No browser: the browser tools are tested on servers of their own
	// (browser_test.go), never on whatever listens on 9222.
	return startHost(t, host.Config{Builtins: os.DirFS(dir), Workspace: workspace, Browser: browser.Config{Mode: browser.Off}, Engine: engine})
}

// startHost starts a host with cfg (cfg.Engine "" is the default engine),
// on the shared cache and a quiet logger.
func startHost(t testing.TB, cfg host.Config) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.CacheDir = cacheDir
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := host.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("host.New: %v", err)
	}
	// it lists at once and compiles in the background: wait, so that
	// no call (and no timing) includes compiling
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	if err := h.Registry().WaitLoaded(lctx); err != nil {
		t.Fatalf("plugins still loading after 5 minutes: %v", err)
	}
	lcancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &server{url: "http://" + ln.Addr().String() + "/mcp", h: h, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- h.Serve(ctx, ln) }()
	return s
}

var client = &http.Client{Timeout: 5 * time.Minute}

// post sends one JSON-RPC body and returns the HTTP status and the body.
func (s *server) post(t testing.TB, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", s.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// rpcResponse is a JSON-RPC response to tools/call.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *toolResult     `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// toolResult is a CallToolResult.
type toolResult struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// Text is the concatenated text of the result.
func (r *toolResult) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// Object decodes the text as a JSON object.
func (r *toolResult) Object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Text()), &m); err != nil {
		t.Fatalf("result text is not a JSON object: %v\n%s", err, r.Text())
	}
	return m
}

// rpc sends a request and decodes the response.
func (s *server) rpc(t testing.TB, method string, params any) *rpcResponse {
	t.Helper()
	id := s.ids.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	status, b := s.post(t, body)
	if status != 200 {
		t.Fatalf("%s: HTTP %d: %s", method, status, b)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: bad response %q: %v", method, b, err)
	}
	return &r
}

// call calls a tool and returns its result (failing on a JSON-RPC error).
func (s *server) call(t testing.TB, tool string, args any) *toolResult {
	t.Helper()
	r := s.rpc(t, "tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d: %s", tool, r.Error.Code, r.Error.Message)
	}
	if r.Result == nil {
		t.Fatalf("%s: no result", tool)
	}
	if len(r.Result.StructuredContent) > 0 && r.Result.StructuredContent[0] == '{' {
		// The structured content is the same object as the text.
		var a, b any
		if json.Unmarshal(r.Result.StructuredContent, &a) != nil || json.Unmarshal([]byte(r.Result.Text()), &b) != nil ||
			!jsonEqual(a, b) {
			t.Errorf("%s: structuredContent differs from the text:\n%s\n%s", tool, r.Result.StructuredContent, r.Result.Text())
		}
	}
	s.checkResult(t, tool, r.Result) // schema_test.go
	return r.Result
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// alive checks that the host still serves: a cheap call answers.
func (s *server) alive(t testing.TB) {
	t.Helper()
	r := s.call(t, "sandbox_execute_bash", map[string]any{"cmd": "echo alive"})
	if r.IsError || !strings.Contains(r.Text(), "alive") {
		t.Fatalf("host no longer serving: %s", r.Text())
	}
}

// tmpDir is a unique directory under /tmp (inside the default sandbox
// roots), removed after the test.
func tmpDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "aiod-sbt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
