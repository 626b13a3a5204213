package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Programs that call tools (spec/code-tools.md), end to end: bin/aiod with
// tenants, the real go-sdk client in both eras and the TypeScript v2
// client, Python and JavaScript programs calling tools through
// sandbox_execute_code.

// Keys of the tenants of codePolicy.
const (
	readerKey = "code-reader-key-0123456789"
	narrowKey = "code-narrow-key-0123456789"
	wideKey   = "code-wide-key-0123456789"
)

func keyDigest(k string) string {
	sum := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// codePolicy: reader may use the sandbox tools, narrow only the code tool
// and echo (with tool search on), wide every tool, and its programs may
// call sandbox_file_operations too.
func codePolicy(t *testing.T, extra map[string]any) string {
	t.Helper()
	doc := map[string]any{"tenants": map[string]any{
		"reader": map[string]any{"keys": []string{keyDigest(readerKey)},
			"tools": []string{"sandbox_execute_code", "sandbox_get_context", "sandbox_file_operations", "sandbox_execute_bash", "echo"}},
		"narrow": map[string]any{"keys": []string{keyDigest(narrowKey)}, "tools": []string{"sandbox_execute_code", "echo"}, "tool_search": true},
		"wide":   map[string]any{"keys": []string{keyDigest(wideKey)}, "tools": []string{"*"}, "code_tools": []string{"sandbox_file_operations"}},
	}}
	for k, v := range extra {
		doc[k] = v
	}
	b, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// goSDK connects the go-sdk client as the key's tenant, asking for
// protocol version v.
func goSDK(t *testing.T, url, key, v string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := map[string]string{}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	hc := &http.Client{Transport: headerTransport{h: h, base: http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "aiod-e2e-code", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatalf("go-sdk connect (%s): %v", v, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// runCode calls sandbox_execute_code and returns its result object.
func runCode(t *testing.T, cs *mcp.ClientSession, lang, code string, timeout int) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := map[string]any{"language": lang, "code": code}
	if timeout > 0 {
		args["timeout"] = timeout
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbox_execute_code", Arguments: args})
	if err != nil {
		t.Fatalf("sandbox_execute_code: %v", err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("sandbox_execute_code: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("sandbox_execute_code: content %+v", res.Content[0])
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &out); err != nil {
		t.Fatalf("sandbox_execute_code: %v: %s", err, tc.Text)
	}
	return out
}

// TestCodeTools: programs call tools, on each engine, from the go-sdk
// client in both eras.
func TestCodeTools(t *testing.T) {
	t.Parallel()
	onEngines(t, testCodeTools)
}

func testCodeTools(t *testing.T, engine string) {
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	a := start(t, []string{"AIOD_E2E_KEY=" + readerKey}, "--engine", engine, "--policy", codePolicy(t, nil), "--audit-log", auditLog)
	files := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(files, fmt.Sprintf("f%d.txt", i)), []byte("alpha beta alpha\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			reader, narrow, wide := goSDK(t, a.URL, readerKey, v), goSDK(t, a.URL, narrowKey, v), goSDK(t, a.URL, wideKey, v)
			for _, tc := range []struct {
				name, lang, code string
				cs               *mcp.ClientSession
				timeout          int
				status           string
				stdout           []string // each in stdout
				check            func(t *testing.T, out map[string]any)
			}{
				{name: "python calls a read-only tool", lang: "python", cs: reader, status: "ok",
					code:   "import json\nprint(sorted(json.loads(tools.sandbox_get_context()))[0])\nprint(json.loads(call('sandbox_get_context', {}))['home_dir'] != '')",
					stdout: []string{"home_dir\nTrue\n"}},
				{name: "javascript calls a read-only tool", lang: "javascript", cs: reader, status: "ok",
					code:   "const c = JSON.parse(tools.sandbox_get_context()); console.log(typeof c.home_dir, JSON.parse(tools.call('sandbox_get_context', {})).home_dir === c.home_dir)",
					stdout: []string{"string true\n"}},
				{name: "a write tool is the model's to call", lang: "python", cs: reader, status: "ok",
					code: "for n, a in [('sandbox_execute_bash', {'cmd': 'touch x'}), ('sandbox_file_operations', {'action': 'write', 'path': '/tmp/x', 'content': 'x'})]:\n" +
						"    try:\n        call(n, a)\n    except ToolError as e:\n        print(e.kind, e)",
					stdout: []string{"refused sandbox_execute_bash may change something: it is not called from code; make that call yourself\n",
						"refused sandbox_file_operations may change something"}},
				{name: "javascript names of its own", lang: "javascript", cs: reader, status: "ok",
					code:   "const code = 1, fs = 2, vm = 3, channel = 4; let r = JSON.parse(tools.sandbox_get_context()); console.log(code + fs + vm + channel, typeof r)",
					stdout: []string{"10 object\n"}},
				{name: "a write tool from javascript", lang: "javascript", cs: reader, status: "ok",
					code:   "try { tools.sandbox_execute_bash({cmd: 'touch x'}) } catch (e) { console.log(e instanceof ToolError, e.kind) }",
					stdout: []string{"true refused\n"}},
				{name: "the code tool itself", lang: "python", cs: wide, status: "ok",
					code:   "try:\n    tools.sandbox_execute_code(code='print(1)')\nexcept ToolError as e:\n    print(e.kind, e)",
					stdout: []string{"refused sandbox_execute_code cannot be called from the program it runs"}},
				{name: "a hidden tool is unknown", lang: "python", cs: narrow, status: "ok",
					code:   "for n in ['sandbox_get_context', 'no_such_tool']:\n    try:\n        call(n)\n    except ToolError as e:\n        print(e.kind, e)",
					stdout: []string{"unknown unknown tool: sandbox_get_context\nunknown unknown tool: no_such_tool\n"}},
				{name: "the policy widens", lang: "python", cs: wide, status: "ok",
					code:   fmt.Sprintf("import json\nn = 0\nfor i in range(3):\n    n += json.loads(tools.sandbox_file_operations(action='read', path='%s/f%%d.txt' %% i))['content'].count('alpha')\nprint('alpha', n)", files),
					stdout: []string{"alpha 6\n"}},
				{name: "a failing tool raises ToolError", lang: "python", cs: wide, status: "error",
					code: "tools.sandbox_file_operations(action='read', path='/nonexistent/file')",
					check: func(t *testing.T, out map[string]any) {
						tb, _ := out["traceback"].([]any)
						if len(tb) < 3 || !strings.HasPrefix(fmt.Sprint(tb[len(tb)-1]), "ToolError: ") || strings.Contains(fmt.Sprint(tb), "<aiod>") {
							t.Errorf("traceback %q", tb)
						}
					}},
				{name: "201 calls", lang: "python", cs: reader, status: "ok",
					code:   "n = 0\nfor i in range(201):\n    try:\n        tools.sandbox_get_context()\n        n += 1\n    except ToolError as e:\n        print(i, e.kind, e)\nprint('made', n)",
					stdout: []string{"200 limit this program has made its 200 tool calls", "made 200\n"}},
				{name: "a loop forever", lang: "python", cs: reader, status: "timeout", timeout: 2,
					code: "tools.sandbox_get_context()\nwhile True:\n    pass"},
				{name: "a flood of output", lang: "python", cs: reader, status: "ok",
					code: "tools.sandbox_get_context()\nimport sys\nsys.stdout.write('é' * 1000000)\nsys.stderr.write('e' * 1000000)",
					check: func(t *testing.T, out map[string]any) {
						for _, k := range []string{"stdout", "stderr"} {
							s, _ := out[k].(string)
							body, note, ok := strings.Cut(s, "\n... [")
							if !ok || len([]rune(body)) != 24000 || note != k+" cut at 24,000 characters]" {
								t.Errorf("%s: %d characters, ending %q", k, len([]rune(s)), s[max(0, len(s)-60):])
							}
						}
					}},
				{name: "a failing program", lang: "python", cs: reader, status: "error",
					code: "x = tools.sandbox_get_context()\n1/0",
					check: func(t *testing.T, out map[string]any) {
						tb, _ := out["traceback"].([]any)
						if len(tb) < 3 || tb[0] != "Traceback (most recent call last):" || tb[len(tb)-1] != "ZeroDivisionError: division by zero" || tb[2] != "    1/0" {
							t.Errorf("traceback %q", tb)
						}
					}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out := runCode(t, tc.cs, tc.lang, tc.code, tc.timeout)
					if out["status"] != tc.status {
						t.Fatalf("status %v, want %s: %v", out["status"], tc.status, out)
					}
					stdout, _ := out["stdout"].(string)
					for _, w := range tc.stdout {
						if !strings.Contains(stdout, w) {
							t.Errorf("stdout %q, want it to hold %q (stderr %q)", stdout, w, out["stderr"])
						}
					}
					if tc.check != nil {
						tc.check(t, out)
					}
				})
			}
			t.Run("tool search does not find a hidden tool", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				for _, tc := range []struct {
					query, tool string
					found       bool
				}{{"sandbox context home directory version", "sandbox_get_context", false}, {"echo text", "echo", true}} {
					res, err := narrow.CallTool(ctx, &mcp.CallToolParams{Name: "aiod_tool_search", Arguments: map[string]any{"query": tc.query}})
					if err != nil || res.IsError {
						t.Fatalf("aiod_tool_search: %v %+v", err, res)
					}
					b, _ := json.Marshal(res.StructuredContent)
					if strings.Contains(string(b), `"`+tc.tool+`"`) != tc.found {
						t.Errorf("narrow's search for %q: %s", tc.query, b)
					}
				}
			})
		})
	}
	// every call a program made is a line of the audit log: its tenant,
	// the tool, via sandbox_execute_code, its step; refusals too
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Tenant, Tool, Via, Outcome, Reason, Method string
		Step                                       int
	}
	var steps, refused, hidden int
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if l.Via == "" {
			continue
		}
		if l.Via != "sandbox_execute_code" || l.Step < 1 || l.Step > 200 || l.Method != "tools/call" {
			t.Errorf("audit line %q", sc.Text())
		}
		switch {
		case l.Outcome == "ok" && l.Tool == "sandbox_get_context" && l.Tenant == "reader":
			steps++
		case l.Outcome == "denied" && l.Reason == "policy" && l.Tool == "sandbox_execute_bash":
			refused++
		case l.Outcome == "denied" && l.Reason == "unknown" && l.Tool == "sandbox_get_context" && l.Tenant == "narrow":
			hidden++
		}
	}
	if steps < 2*203 || refused != 4 || hidden != 2 {
		t.Errorf("audit log: %d steps of reader's sandbox_get_context (want at least %d), %d refused bash calls (want 4), %d hidden calls (want 2)", steps, 2*203, refused, hidden)
	}
}

// TestCodeToolsTypeScript: the TypeScript v2 client, in both eras, runs a
// program that calls a tool.
func TestCodeToolsTypeScript(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "the client's protocol: the host's MCP layer (TestCodeTools runs the programs on every engine)")
	a := start(t, []string{"AIOD_E2E_KEY=" + readerKey}, "--policy", codePolicy(t, nil))
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			r := runNode(t, []string{"AIOD_CLIENT_API_KEY=" + readerKey}, clientScript("ts-v2-code.mjs"), a.URL, era)
			if r["stdout"] != "string refused\n" || r["era"] != era {
				t.Fatalf("ts-v2 %s: %v", era, r)
			}
		})
	}
}

// TestCodeToolsLockdown: in lockdown (bubblewrap, no network) a program
// calls a tool over its inherited channel.
func TestCodeToolsLockdown(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "the sandbox around the program, not the engine (TestCodeTools runs on every engine)")
	_, plugins := binaries(t)
	const key = "code-lockdown-key"
	a := start(t, []string{"AIO_API_KEY=" + key}, "--lockdown", "--api-key", key, "--data-dir", dataDir(t),
		"--policy", pinPolicy(t, plugins), "--audit-log", filepath.Join(t.TempDir(), "audit.jsonl"))
	if !strings.Contains(a.Logs(), "lockdown: processes run under bubblewrap") {
		t.Fatalf("not locked down:\n%s", a.Logs())
	}
	cs := goSDK(t, a.URL, key, "2025-11-25")
	out := runCode(t, cs, "python", "import json, os\nprint(os.getuid(), json.loads(tools.sandbox_get_context())['home_dir'] != '')\n"+
		"try:\n    tools.sandbox_execute_bash(cmd='id')\nexcept ToolError as e:\n    print(e.kind)", 0)
	if out["status"] != "ok" || out["stdout"] != "10001 True\nrefused\n" {
		t.Fatalf("in lockdown: %v", out)
	}
}
