package sandboxtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host"
)

// TestToolsList: the seven built-ins come first, in aiod's order, each
// with an object schema; sandbox_execute_code's is aiod's, verbatim.
func TestToolsList(t *testing.T) { onEngines(t, testToolsList) }

func testToolsList(t *testing.T, engine string) {
	s := sharedServerOn(t, "", engine)
	id := s.ids.Add(1)
	status, body := s.post(t, []byte(`{"jsonrpc":"2.0","id":`+fmtJSON(id)+`,"method":"tools/list"}`))
	if status != 200 {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	var r struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	must(t, json.Unmarshal(body, &r))
	if len(r.Result.Tools) < len(builtins) {
		t.Fatalf("%d tools: %s", len(r.Result.Tools), body)
	}
	for i, b := range builtins {
		tl := r.Result.Tools[i]
		if tl.Name != b.name {
			t.Errorf("tool %d is %s, want %s", i, tl.Name, b.name)
		}
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
		var sch map[string]any
		if err := json.Unmarshal(tl.InputSchema, &sch); err != nil || sch["type"] != "object" {
			t.Errorf("%s schema: %s", tl.Name, tl.InputSchema)
		}
	}
	code := r.Result.Tools[1]
	if code.Description != "Execute code in Python or JavaScript runtime." ||
		string(code.InputSchema) != `{"properties":{"code":{"description":"Code to execute","type":"string"},"language":{"description":"Programming language ('python', 'javascript')","type":"string"},"timeout":{"description":"Execution timeout in seconds","type":"integer"}},"required":["code"],"type":"object"}` {
		t.Errorf("sandbox_execute_code: %s %s", code.Description, code.InputSchema)
	}
	var req []string
	var bashSchema struct {
		Required []string `json:"required"`
	}
	must(t, json.Unmarshal(r.Result.Tools[0].InputSchema, &bashSchema))
	req = bashSchema.Required
	if strings.Join(req, ",") != "cmd" {
		t.Errorf("bash required: %v", req)
	}
}

func TestCode(t *testing.T) {
	defaultEngine(t, "the code tool runs its interpreters as host processes")
	s := sharedServer(t, "")
	code := func(args map[string]any) map[string]any {
		t.Helper()
		r := s.call(t, "sandbox_execute_code", args)
		if r.IsError {
			t.Fatalf("%v: %s", args, r.Text())
		}
		m := r.Object(t)
		if len(m) != 5 {
			t.Errorf("keys: %s", fmtJSON(m))
		}
		return m
	}
	m := code(map[string]any{"code": "import sys\nprint('out')\nprint('err', file=sys.stderr)"})
	if m["status"] != "ok" || m["stdout"] != "out\n" || m["stderr"] != "err\n" || m["exit_code"] != float64(0) || m["traceback"] != nil {
		t.Errorf("python: %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "2**10", "language": "python"})
	if m["stdout"] != "" || m["status"] != "ok" {
		t.Errorf("python bare expression (a script prints nothing): %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "def f():\n    return 1/0\nf()", "language": "python"})
	tb, _ := m["traceback"].([]any)
	if m["status"] != "error" || m["exit_code"] != float64(1) || len(tb) < 3 ||
		tb[0] != "Traceback (most recent call last):" || tb[len(tb)-1] != "ZeroDivisionError: division by zero" {
		t.Errorf("python error: %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "console.log('hi'); 10 + 20", "language": "javascript"})
	if m["status"] != "ok" || m["stdout"] != "hi\n30\n" {
		t.Errorf("javascript: %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "const x = await Promise.resolve(5); console.log(x * 2)", "language": "javascript"})
	if m["status"] != "ok" || m["stdout"] != "10\n" {
		t.Errorf("javascript await: %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "const fs = require('fs'); console.log(typeof fs.readFileSync)", "language": "javascript"})
	if m["stdout"] != "function\n" {
		t.Errorf("javascript require: %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "undefinedThing.x", "language": "javascript"})
	tb, _ = m["traceback"].([]any)
	if m["status"] != "error" || m["exit_code"] != float64(1) || len(tb) == 0 || !strings.HasPrefix(tb[0].(string), "ReferenceError: undefinedThing is not defined") {
		t.Errorf("javascript error: %s", fmtJSON(m))
	}
	m = code(map[string]any{"code": "while True:\n    pass", "timeout": 2})
	if m["status"] != "timeout" || m["exit_code"] != nil || !strings.Contains(m["stderr"].(string), "Execution timed out after 2 seconds") {
		t.Errorf("python loop: %s", fmtJSON(m))
	}
	r := s.call(t, "sandbox_execute_code", map[string]any{"code": "puts 1", "language": "ruby"})
	if !r.IsError || r.Text() != "Unsupported language 'ruby'. Supported languages: python, javascript" {
		t.Errorf("ruby: %v %q", r.IsError, r.Text())
	}
	r = s.call(t, "sandbox_execute_code", map[string]any{"language": "python"})
	if !r.IsError || r.Text() != "code is required" {
		t.Errorf("no code: %v %q", r.IsError, r.Text())
	}
}

// TestContext: sandbox_get_context reports the home directory and the
// daemon's semantic version (host.Version, the one `aiod version` prints),
// not a commit hash.
func TestContext(t *testing.T) {
	defaultEngine(t, "the context tool's answer: the plugin's logic")
	s := sharedServer(t, "")
	r := s.call(t, "sandbox_get_context", map[string]any{})
	m := r.Object(t)
	home, _ := os.UserHomeDir()
	if r.IsError || len(m) != 2 || m["home_dir"] != home ||
		!strings.HasPrefix(m["info"].(string), "AIO sandbox (aiod) version: "+host.Version+"\n") || !strings.Contains(m["info"].(string), "\nHome directory: "+home) {
		t.Errorf("context: %s", fmtJSON(m))
	}
}

func TestPackages(t *testing.T) {
	defaultEngine(t, "the packages tool's answer: the plugin's logic")
	s := sharedServer(t, "")
	get := func(args map[string]any) string {
		t.Helper()
		r := s.call(t, "sandbox_get_packages", args)
		if r.IsError || r.StructuredContent != nil {
			t.Errorf("%v: isError=%v structured=%s", args, r.IsError, r.StructuredContent)
		}
		return r.Text()
	}
	py := get(map[string]any{"language": "python"})
	if !strings.HasPrefix(py, "Python Packages:\n") || strings.Contains(py, "Node.js") {
		t.Errorf("python: %q", py)
	}
	for _, l := range strings.Split(py, "\n")[1:] {
		if !strings.HasPrefix(l, "  - ") && l != "  (none)" || (strings.HasPrefix(l, "  - ") && !strings.Contains(l, "==")) {
			t.Errorf("python line %q", l)
		}
	}
	if alias := get(map[string]any{"language": "py"}); alias != py {
		t.Errorf("py alias differs")
	}
	node := get(map[string]any{"language": "nodejs"})
	if !strings.HasPrefix(node, "Node.js Packages:\n") || !strings.Contains(node, "  - npm==") {
		t.Errorf("nodejs: %q", node)
	}
	if both := get(map[string]any{}); both != py+"\n\n"+node {
		t.Errorf("both: %q", both)
	}
	if nf := get(map[string]any{"language": "ruby"}); nf != "No packages found for the specified language. Sandbox only support nodejs and python." {
		t.Errorf("ruby: %q", nf)
	}
}

// skillsRoot is AIO_SKILLS_PATH for the test binary (set in TestMain, so
// that the host's programs inherit it when the host passes it on).
var skillsRoot string

func makeSkills() (string, error) {
	d, err := os.MkdirTemp("/tmp", "aiod-skills-")
	if err != nil {
		return "", err
	}
	files := map[string]string{
		"report-writer/SKILL.md":     "---\nname: report-writer\ndescription: Create structured reports from source material.\n---\n\n# Report Writer\n\nUse this skill when a task requires a structured report.\n",
		"report-writer/scripts/a.sh": "echo hi\n",
		"analyzer/SKILL.md":          "---\nname: data-analyzer\ndescription: \"Analyze: CSV files\"\n---\nSteps.\n",
		"not-a-skill/README.md":      "nothing\n",
	}
	for p, c := range files {
		full := filepath.Join(d, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return "", err
		}
	}
	return d, nil
}

func TestSkills(t *testing.T) {
	defaultEngine(t, "the skill loader: the plugin's logic over aiod:files")
	s := sharedServer(t, "")
	load := func(args map[string]any) string {
		t.Helper()
		r := s.call(t, "sandbox_load_skill", args)
		if r.IsError {
			t.Fatalf("%v: %s", args, r.Text())
		}
		return r.Text()
	}
	list := load(map[string]any{})
	want := "Skills Count: 2\n\n- data-analyzer\n  Analyze: CSV files\n- report-writer\n  Create structured reports from source material."
	if list != want {
		t.Errorf("list:\n%s\nwant\n%s", list, want)
	}
	if got := load(map[string]any{"name": "report-writer"}); got != "Base Path: "+skillsRoot+"/report-writer\n\n# Report Writer\n\nUse this skill when a task requires a structured report.\n" {
		t.Errorf("load: %q", got)
	}
	if got := load(map[string]any{"name": "analyzer"}); got != "Base Path: "+skillsRoot+"/analyzer\n\nSteps.\n" {
		t.Errorf("load by directory name: %q", got)
	}
	if got := load(map[string]any{"name": "nope"}); got != "Skill not found: nope" {
		t.Errorf("unknown: %q", got)
	}
}
