// Package machinetest tests the Machine Mode adapter (plugins/machine,
// spec/machine-mode.md) end to end: Machine Mode tools written from the
// public specification (testdata/aoidocs in Go, testdata/notes.py in
// Python) registered with a real host, and called through the official Go
// SDK client in both protocol eras; every structuredContent is validated
// against the tool's published outputSchema with jsonschema-go.
package machinetest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eras are the protocol versions the client speaks in turn.
var eras = []string{"2025-11-25", "2026-07-28"}

var (
	buildOnce sync.Once
	buildDir  string // the machine_tools package (builtins) and bin/
	buildErr  error
)

// built builds the adapter plugin and the Go fixture once per test binary.
func built(t testing.TB) (builtins, docs string) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aiod-machinetest-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		testplugins.Package(t, filepath.Join(dir, "builtin"), "plugins/machine", host.AllFamilies(), nil)
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "aoidocs"), "./testdata/aoidocs")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{string(out), err}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "builtin"), filepath.Join(buildDir, "bin", "aoidocs")
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	// aiod's environment: one variable the docs tool is given, one it is
	// not
	os.Setenv("AIOD_MT_TOKEN", "token-for-docs")
	os.Setenv("AIOD_MT_OTHER", "must-not-leak")
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// python is the python3 interpreter's path: the system's (what a
// sandbox shows), else the one on PATH.
func python(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/usr/bin/python3"); err == nil && st.Mode()&0o111 != 0 {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	abs, _ := filepath.Abs(p)
	return filepath.Clean(abs)
}

// registrations are the test's Machine Mode tools: the Go fixture as
// "docs" (and, bounded tight, as "tight"), the Python one as "notes", and
// tools whose registration or discovery is refused.
func registrations(t testing.TB, docs string) map[string]caps.MachineTool {
	notes, _ := filepath.Abs(filepath.Join("testdata", "notes.py"))
	return map[string]caps.MachineTool{
		"docs":      {Command: []string{docs, "docs"}, Env: []string{"AIOD_MT_TOKEN", "AIOD_MT_UNSET"}},
		"tight":     {Command: []string{docs, "docs"}, TimeoutMs: 1500, MaxOutputBytes: 64 << 10},
		"n":         {Command: []string{python(t), notes}, Prefix: "notes"},
		"broken":    {Command: []string{docs, "broken"}},
		"liar":      {Command: []string{docs, "liar"}},
		"badschema": {Command: []string{docs, "badschema"}},
		"unlisted":  {Command: []string{docs, "unlisted"}},
		"failing":   {Command: []string{docs, "failing"}},
		"missing":   {Command: []string{"/nonexistent/aoi-cli"}},
		"pinned":    {Command: []string{docs, "docs"}, SHA256: strings.Repeat("0", 64)},
	}
}

// adminKey opens the test hosts' admin API.
const adminKey = "machinetest-admin-key"

// quiet is a logger that discards.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fixture is a running host with the test's registrations.
type fixture struct {
	h         *host.Host
	url       string
	workspace string
}

// start runs a host with the machine_tools plugin and regs (the
// registrations of the flag), and policy (a policy file, "" for none),
// until the test ends.
func start(t *testing.T, regs map[string]caps.MachineTool, policy string) *fixture {
	t.Helper()
	f, stop := launch(t, regs, policy)
	t.Cleanup(stop)
	return f
}

// stops are the shared hosts' stops, run when the test binary ends.
var stops []func()

// startShared is start for a host that lives as long as the test binary.
func startShared(t testing.TB, regs map[string]caps.MachineTool) *fixture {
	t.Helper()
	f, stop := launch(t, regs, "")
	stops = append(stops, stop)
	return f
}

// launch runs a host, and returns it with the function that stops it.
func launch(t testing.TB, regs map[string]caps.MachineTool, policy string) (*fixture, func()) {
	t.Helper()
	return launchWith(t, regs, policy, nil)
}

// launchWith is launch with edit applied to the host's configuration.
func launchWith(t testing.TB, regs map[string]caps.MachineTool, policy string, edit func(*host.Config)) (*fixture, func()) {
	t.Helper()
	builtins, _ := built(t)
	ws, err := os.MkdirTemp("", "aiod-machinetest-ws-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := host.Config{Builtins: os.DirFS(builtins), MachineTools: regs, Workspace: ws, PolicyFile: policy, AdminKey: adminKey,
		Browser: browser.Config{Mode: browser.Off}, CacheDir: testplugins.CacheDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer lcancel()
	if err := h.Registry().WaitLoaded(lctx); err != nil {
		t.Fatalf("still loading: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			h.Close(context.Background())
			os.RemoveAll(ws)
		})
	}
	return &fixture{h: h, url: "http://" + ln.Addr().String() + "/mcp", workspace: ws}, stop
}

// clientOpts configure a client session.
type clientOpts struct {
	era      string
	elicit   func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) // nil: no elicitation capability
	progress func(*mcp.ProgressNotificationParams)
}

// session is a connected go-sdk client and the tools it listed.
type session struct {
	cs    *mcp.ClientSession
	tools map[string]*mcp.Tool
	out   map[string]*jsonschema.Resolved
}

func (f *fixture) connect(t *testing.T, o clientOpts) *session {
	t.Helper()
	co := &mcp.ClientOptions{}
	if o.elicit != nil {
		co.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return o.elicit(r) }
	}
	if o.progress != nil {
		co.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { o.progress(r.Params) }
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "aiod-machinetest", Version: "1.0.0"}, co)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.url}, &mcp.ClientSessionOptions{ProtocolVersion: o.era})
	if err != nil {
		t.Fatalf("connect (%s): %v", o.era, err)
	}
	t.Cleanup(func() { cs.Close() })
	s := &session{cs: cs, tools: map[string]*mcp.Tool{}, out: map[string]*jsonschema.Resolved{}}
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tl := range lr.Tools {
		s.tools[tl.Name] = tl
		if tl.OutputSchema == nil {
			continue
		}
		b, _ := json.Marshal(tl.OutputSchema)
		var sch jsonschema.Schema
		if err := json.Unmarshal(b, &sch); err != nil {
			t.Fatalf("%s: outputSchema: %v", tl.Name, err)
		}
		rs, err := sch.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: outputSchema does not resolve: %v\n%s", tl.Name, err, b)
		}
		s.out[tl.Name] = rs
	}
	return s
}

// call calls tool and checks the result's shape: structuredContent valid
// against the published outputSchema, and the text block holding the same
// JSON. It returns the result and its structuredContent.
func (s *session) call(t *testing.T, tool string, args map[string]any, token any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := s.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: tools/call: %v", tool, err)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s: structuredContent is %T: %+v", tool, res.StructuredContent, res)
	}
	rs := s.out[tool]
	if rs == nil {
		t.Fatalf("%s: no outputSchema listed", tool)
	}
	if err := rs.Validate(sc); err != nil {
		b, _ := json.Marshal(sc)
		t.Fatalf("%s: structuredContent does not validate against the outputSchema: %v\n%s", tool, err, b)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T", tool, res.Content[0])
	}
	var fromText any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		t.Fatalf("%s: the text block is not JSON: %v", tool, err)
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(sc)
	if !bytes.Equal(a, b) {
		t.Fatalf("%s: the text block differs from structuredContent:\n%s\n%s", tool, a, b)
	}
	return res, sc
}

// events are the events of a structuredContent.
func events(sc map[string]any) []map[string]any {
	var out []map[string]any
	l, _ := sc["events"].([]any)
	for _, e := range l {
		m, _ := e.(map[string]any)
		out = append(out, m)
	}
	return out
}

// errorOf is the error of a structuredContent (nil without one).
func errorOf(sc map[string]any) map[string]any {
	e, _ := sc["error"].(map[string]any)
	return e
}

func summaryOf(sc map[string]any) map[string]any {
	s, _ := sc["summary"].(map[string]any)
	return s
}
