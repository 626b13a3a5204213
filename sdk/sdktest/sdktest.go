//go:build !wasip1

// Package sdktest runs a plugin's registered handlers natively, against a
// fake host, so plugin code unit-tests with plain `go test`:
//
//	func TestEcho(t *testing.T) {
//		h := sdktest.New(t)
//		r := h.CallTool("echo", map[string]any{"text": "hi"})
//		if r.IsError || r.Text() != "hi" { t.Fatal(r) }
//	}
//
// The plugin's package must be the package under test (its init registers
// the tools). Host function families are faked with WithHandler, or served
// by the real host implementation with WithFiles, WithProcess and WithState
// (for example the files family over a temporary directory), so a test
// exercises exactly the requests the host will see. The API takes and
// returns only plain data and sdk/abi types: a plugin author's test needs no
// host package.
package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/fsroot"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/hostfn/files"
	"github.com/aiodhq/aiod/host/hostfn/process"
	"github.com/aiodhq/aiod/host/hostfn/state"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// Host is a fake aiod host. It is installed by New for the duration of the
// test; tests using it must not run in parallel with each other.
type Host struct {
	t        testing.TB
	mu       sync.Mutex
	out      []byte
	logs     []Log
	progress []Progress
	handlers map[string]func(req []byte) ([]byte, uint32)
	defs     map[string]hostfn.Def
	call     *hostfn.Call
	caps     abi.Capabilities // granted by the With* options
}

// Log is one message a handler logged.
type Log struct {
	Level int
	Msg   string
}

// Progress is one progress report.
type Progress struct {
	Progress, Total float64
	Msg             string
}

// Option configures a Host.
type Option func(*Host)

// WithHandler fakes one host function: module is e.g. "aiod:files", name
// e.g. "read"; fn gets the raw request and returns the response and the
// error code (0 for ok; see spec/abi/v1.md §5).
func WithHandler(module, name string, fn func(req []byte) (resp []byte, code uint32)) Option {
	return func(h *Host) { h.handlers[module+"."+name] = fn }
}

// FilePath is a directory the files family may reach (WithFiles).
type FilePath struct {
	Path     string // absolute
	ReadOnly bool
}

// WithFiles serves aiod:files with the host's real implementation, scoped
// to paths exactly as a policy granting them would scope a plugin.
func WithFiles(paths ...FilePath) Option {
	scopes := make([]abi.PathScope, len(paths))
	for i, p := range paths {
		scopes[i] = abi.PathScope{Path: p.Path, Mode: abi.ReadWrite}
		if p.ReadOnly {
			scopes[i].Mode = abi.ReadOnly
		}
	}
	return func(h *Host) {
		h.grant(abi.Capabilities{Files: &abi.FilesScope{Paths: scopes}})
		fam := files.New(fsroot.Options{})
		h.t.Cleanup(func() { fam.Close() })
		h.link(fam)
	}
}

// Process is the process grant of WithProcess: the programs a plugin may
// run (names or absolute paths, "*" for any), the directories it may run
// them in, and whether it may use the persistent shell.
type Process struct {
	Commands []string
	Cwd      []string
	Shell    bool
}

// WithProcess serves aiod:process with the host's real implementation
// (real processes, real shell sessions) under the given grant.
func WithProcess(p Process) Option {
	return func(h *Host) {
		h.grant(abi.Capabilities{Process: &abi.ProcessScope{Commands: p.Commands, Cwd: p.Cwd, Shell: p.Shell}})
		m := proc.New(proc.Config{})
		h.t.Cleanup(func() { m.Close() })
		h.link(process.New(m))
	}
}

// WithState serves aiod:state with the host's real store, capped at
// maxBytes per plugin.
func WithState(maxBytes int64) Option {
	return func(h *Host) {
		h.grant(abi.Capabilities{State: &abi.StateScope{MaxBytes: maxBytes}})
		h.link(state.New(nil))
	}
}

// grant adds c to what the fake host grants, as an operator policy
// granting exactly what the plugin asks would.
func (h *Host) grant(c abi.Capabilities) {
	if c.Files != nil {
		h.caps.Files = c.Files
	}
	if c.Process != nil {
		h.caps.Process = c.Process
	}
	if c.State != nil {
		h.caps.State = c.State
	}
	want := h.caps
	p := &caps.Policy{Default: &want}
	h.call.Grant = p.Allow(&abi.Manifest{Name: "sdktest", Capabilities: want}, caps.Env{Tmp: os.TempDir()})
}

func (h *Host) link(fams ...hostfn.Family) {
	for _, f := range append([]hostfn.Family{core.New()}, fams...) {
		for _, d := range f.Defs() {
			h.defs[d.Module+"."+d.Name] = d
		}
	}
}

// New installs a fake host for the rest of the test.
func New(t testing.TB, opts ...Option) *Host {
	t.Helper()
	h := &Host{t: t, handlers: map[string]func([]byte) ([]byte, uint32){}, defs: map[string]hostfn.Def{},
		call: &hostfn.Call{Plugin: "sdktest", Owner: "sdktest", MaxOutput: 64 << 20}}
	for _, o := range opts {
		o(h)
	}
	restore := guest.SetNativeHost(h)
	t.Cleanup(restore)
	return h
}

// WriteOutput implements the abi's native host.
func (h *Host) WriteOutput(b []byte) {
	h.mu.Lock()
	h.out = append(h.out, b...)
	h.mu.Unlock()
}

// Log implements the abi's native host.
func (h *Host) Log(level int, msg string) {
	h.mu.Lock()
	h.logs = append(h.logs, Log{level, msg})
	h.mu.Unlock()
}

// Progress implements the abi's native host.
func (h *Host) Progress(p, total float64, msg string) {
	h.mu.Lock()
	h.progress = append(h.progress, Progress{p, total, msg})
	h.mu.Unlock()
}

// Call implements the abi's native host: a faked handler, else a real
// family function, else "unavailable".
func (h *Host) Call(module, name string, req []byte) ([]byte, uint32) {
	if fn := h.handlers[module+"."+name]; fn != nil {
		return fn(req)
	}
	d, ok := h.defs[module+"."+name]
	if !ok {
		return []byte(fmt.Sprintf(`{"code":"unavailable","message":"sdktest: %s.%s is not provided (use WithHandler or WithFamilies)"}`, module, name)), uint32(abi.Unavailable)
	}
	m := mem(append([]byte(nil), req...))
	stack := []uint64{0, uint64(len(req))}
	d.Fn(context.Background(), h.call, m, stack)
	code, n := uint32(stack[0]>>32), uint32(stack[0])
	if n == 0 {
		return nil, code
	}
	out := make(mem, n)
	h.defs[abi.ModuleCore+".response_read"].Fn(context.Background(), h.call, out, []uint64{0})
	return out, code
}

// KeptBytes are the bytes of response h that a family call kept on the
// host (the process family's collection), for the native SDK.
func (h *Host) KeptBytes(k uint32) []byte {
	if int(k) >= len(h.call.Kept) {
		h.t.Fatalf("sdktest: no kept response %d", k)
	}
	return h.call.Kept[k].Bytes
}

// Logs returns the messages logged so far.
func (h *Host) Logs() []Log {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Log(nil), h.logs...)
}

// ProgressReports returns the progress reported so far.
func (h *Host) ProgressReports() []Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Progress(nil), h.progress...)
}

// Result is a decoded CallToolResult.
type Result struct {
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text,omitempty"`
		Data     string          `json:"data,omitempty"`
		MIMEType string          `json:"mimeType,omitempty"`
		Resource json.RawMessage `json:"resource,omitempty"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
	// Raw is the JSON the plugin wrote.
	Raw []byte `json:"-"`
}

// Text joins the text content blocks.
func (r *Result) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// CallTool calls tool with args (a JSON string, []byte, or any value that
// marshals to a JSON object) as the host would, and decodes the result. It
// fails the test if the plugin does not answer with a valid result.
func (h *Host) CallTool(tool string, args any) *Result {
	h.t.Helper()
	var raw []byte
	switch a := args.(type) {
	case nil:
		raw = []byte("{}")
	case string:
		raw = []byte(a)
	case []byte:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			h.t.Fatalf("sdktest: arguments: %v", err)
		}
		raw = b
	}
	out, ret := h.invoke(abi.OpToolCall, tool, raw)
	if ret != abi.RetOK {
		h.t.Fatalf("sdktest: tool %s: aiod_call returned %d: %s", tool, ret, out)
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		h.t.Fatalf("sdktest: tool %s: result is not JSON: %v: %s", tool, err, out)
	}
	r.Raw = out
	return &r
}

// Manifest is what a plugin describes itself as, checked as aiod checks a
// manifest: the fields a test usually asserts, and the whole document.
type Manifest struct {
	Name, Version, Description string
	Tools                      []ManifestTool
	JSON                       json.RawMessage
}

// ManifestTool is one tool of a Manifest.
type ManifestTool struct {
	Name, Title, Description  string
	InputSchema, OutputSchema json.RawMessage
}

// Describe returns the plugin's manifest, as aiodpack would write it
// (without module and sha256), after the host's own validation.
func (h *Host) Describe() *Manifest {
	h.t.Helper()
	out, ret := h.invoke(abi.OpDescribe, "", nil)
	if ret != abi.RetOK {
		h.t.Fatalf("sdktest: describe returned %d: %s", ret, out)
	}
	var m abi.Manifest
	if err := caps.StrictUnmarshal(out, &m); err != nil {
		h.t.Fatalf("sdktest: describe: %v", err)
	}
	if err := caps.ValidateManifest(&m); err != nil {
		h.t.Fatalf("sdktest: describe: %v", err)
	}
	r := &Manifest{Name: m.Name, Version: m.Version, Description: m.Description, JSON: out}
	for _, t := range m.Tools {
		r.Tools = append(r.Tools, ManifestTool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	return r
}

func (h *Host) invoke(op int32, name string, args []byte) ([]byte, int32) {
	if guest.Handler == nil {
		h.t.Fatal("sdktest: no plugin registered (import the sdk and register tools in init)")
	}
	h.mu.Lock()
	h.out = nil
	h.mu.Unlock()
	ret := guest.Handler(op, []byte(name), args)
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.out...), ret
}

type mem []byte

func (m mem) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func (m mem) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}
