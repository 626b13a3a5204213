// Command code is the built-in plugin sandbox_execute_code: Python code
// run by python3 and JavaScript by node, each a fresh process spawned
// through the aiod:process family with a wall-clock timeout.
// spec/sandbox-tools.md describes the tool.
package main

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/process"
)

// Args are the tool's arguments.
type Args struct {
	Code     *string `json:"code"`
	Language *string `json:"language"`
	Timeout  *int    `json:"timeout"`
}

// Name is the tool's (and the plugin's) name.
const Name = "sandbox_execute_code"

// Limits.
const (
	defaultTimeout = 30  // seconds
	maxTimeout     = 300 // seconds, as aiod's code execution allows
	maxOutput      = 8 << 20
)

// InputSchema is aiod's schema, verbatim.
const InputSchema = `{"properties":{"code":{"description":"Code to execute","type":"string"},"language":{"description":"Programming language ('python', 'javascript')","type":"string"},"timeout":{"description":"Execution timeout in seconds","type":"integer"}},"required":["code"],"type":"object"}`

// OutputSchema is the schema of the result object.
const OutputSchema = `{"additionalProperties":false,"properties":{` +
	`"exit_code":{"type":["integer","null"]},"status":{"enum":["ok","error","timeout"],"type":"string"},` +
	`"stderr":{"type":"string"},"stdout":{"type":"string"},` +
	`"traceback":{"anyOf":[{"items":{"type":"string"},"type":"array"},{"type":"null"}]}` +
	`},"required":["exit_code","status","stderr","stdout","traceback"],"type":"object"}`

// nodeRunner runs the code (read from stdin) as a script and prints the
// value of its last expression when it is not undefined, as a REPL or a
// notebook would; code using top-level await runs in an async function.
const nodeRunner = `const vm = require('vm'), util = require('util');
const code = require('fs').readFileSync(0, 'utf8');
Object.assign(globalThis, {require, module, exports, __filename: '[code]', __dirname: process.cwd()});
// An error's stack without the runner's own frames.
const fail = (e) => {
  let s = e instanceof Error && e.stack ? String(e.stack) : 'Uncaught ' + util.inspect(e);
  const lines = s.split('\n'), at = lines.findIndex((l) => /^\s+at /.test(l));
  if (at >= 0) s = lines.slice(0, at).concat(lines.slice(at).filter((l) => l.includes('[code]'))).join('\n');
  console.error(s);
  process.exitCode = 1;
};
let r;
try {
  try {
    r = vm.runInThisContext(code, {filename: '[code]'});
  } catch (e) {
    if (!(e instanceof SyntaxError) || !/await/.test(e.message)) throw e;
    r = vm.runInThisContext('(async () => {\n' + code + '\n})()', {filename: '[code]', lineOffset: -1});
  }
  Promise.resolve(r).then((v) => { if (v !== undefined) console.log(util.inspect(v)); }, fail);
} catch (e) { fail(e); }
`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: run Python (python3) or JavaScript (node) code.",
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"python3", "node"}, Cwd: []string{"$SANDBOX"}}},
		Limits:       abi.Limits{TimeoutMs: 330000, MemoryMiB: 256, MaxResultBytes: 67108864},
	})
	sdk.AddTool(sdk.Tool{Name: Name, Title: "Run Python or JavaScript code", Description: "Execute code in Python or JavaScript runtime.",
		InputSchema: InputSchema, OutputSchema: OutputSchema,
		// Code may delete files and reach the network.
		Annotations: sdk.Behavior{Destructive: true, OpenWorld: true}.Annotations(), TaskSupport: "optional"}, Run)
}

func main() {}

// language normalizes a language name ("" if unsupported).
func language(l *string) string {
	if l == nil {
		return "python"
	}
	switch strings.ToLower(strings.TrimSpace(*l)) {
	case "python", "py", "python3":
		return "python"
	case "javascript", "js", "node", "nodejs":
		return "javascript"
	}
	return ""
}

// Run executes the code.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	if a.Code == nil {
		return sdk.ErrorResult("code is required"), nil
	}
	lang := language(a.Language)
	if lang == "" {
		return sdk.ErrorResult("Unsupported language '" + *a.Language + "'. Supported languages: python, javascript"), nil
	}
	timeout := defaultTimeout
	if a.Timeout != nil && *a.Timeout > 0 {
		timeout = min(*a.Timeout, maxTimeout)
	}
	req := process.SpawnRequest{
		Stdin:          *a.Code,
		Timeout:        time.Duration(timeout) * time.Second,
		MaxOutputBytes: maxOutput,
		Progress:       true, // output lines as progress, when the client asks for it
		Env:            map[string]string{"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"},
	}
	if lang == "python" {
		req.Argv = []string{"python3", "-"}
	} else {
		req.Argv = []string{"node", "-e", nodeRunner}
		req.Env = nil
	}
	res, err := process.Spawn(req)
	if err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	if res.StdoutTruncated {
		res.Stdout += "\n... [stdout truncated at 8 MiB]"
	}
	if res.StderrTruncated {
		res.Stderr += "\n... [stderr truncated at 8 MiB]"
	}
	status := "ok"
	var exit any = res.ExitCode
	switch {
	case res.TimedOut:
		status, exit = "timeout", nil
		res.Stderr += "Execution timed out after " + strconv.Itoa(timeout) + " seconds\n"
	case res.Killed == "process_limit":
		status = "error"
		res.Stderr += "Execution stopped: the code started too many processes\n"
	case res.ExitCode != 0:
		status = "error"
	}
	var tb any
	if status == "error" {
		if lines := traceback(res.Stderr, lang); len(lines) > 0 {
			tb = lines
		}
	}
	return sdk.JSONResult(map[string]any{
		"status": status, "stdout": res.Stdout, "stderr": res.Stderr, "exit_code": exit, "traceback": tb,
	}, false), nil
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// jsError is the first line of a JavaScript error ("TypeError: ...").
var jsError = regexp.MustCompile(`(?m)^(Uncaught |[A-Za-z_$][\w$]*: )`)

// traceback returns the error lines of stderr, ANSI sequences removed:
// from Python's "Traceback (most recent call last):" or JavaScript's
// "<Name>Error: ..." line on when present, else every non-empty line.
func traceback(stderr, lang string) []string {
	s := ansi.ReplaceAllString(stderr, "")
	if i := strings.Index(s, "Traceback (most recent call last):"); i >= 0 && lang == "python" {
		s = s[i:]
	} else if loc := jsError.FindStringIndex(s); loc != nil && lang == "javascript" {
		s = s[loc[0]:]
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
