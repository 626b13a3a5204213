// Command code is the built-in plugin sandbox_execute_code: Python code
// run by python3 and JavaScript by node, each a fresh process spawned
// through the aiod:process family with a wall-clock timeout.
// spec/sandbox-tools.md describes the tool.
package main

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// toolOutput is where the output of a program that called a tool is
	// cut (seed 003): what it read through tools stays out of the model's
	// context, and so must a flood of it printed back.
	toolOutput = 24000 // characters
)

// InputSchema is aiod's schema, verbatim.
const InputSchema = `{"properties":{"code":{"description":"Code to execute","type":"string"},"language":{"description":"Programming language ('python', 'javascript')","type":"string"},"timeout":{"description":"Execution timeout in seconds","type":"integer"}},"required":["code"],"type":"object"}`

// OutputSchema is the schema of the result object.
const OutputSchema = `{"additionalProperties":false,"properties":{` +
	`"exit_code":{"type":["integer","null"]},"status":{"enum":["ok","error","timeout"],"type":"string"},` +
	`"stderr":{"type":"string"},"stdout":{"type":"string"},` +
	`"traceback":{"anyOf":[{"items":{"type":"string"},"type":"array"},{"type":"null"}]}` +
	`},"required":["exit_code","status","stderr","stdout","traceback"],"type":"object"}`

// The tools a program may call (spec/code-tools.md): with the process
// scope's tools grant, each program gets a tool channel (fd 3 for its
// requests, fd 4 for the answers), and the runners below put tools,
// call and ToolError in its scope. AIOD_TOOLS=1 says the channel is
// there; without it a call raises ToolError at once.

// pythonRunner runs the code (read from stdin) as __main__ with tools in
// scope; a failure prints the traceback without the runner's frame, the
// code's lines shown.
const pythonRunner = `def _aiod_main():
    import builtins, json, linecache, os, sys, threading, traceback

    class ToolError(Exception):
        """A tool call that did not succeed; kind says why: tool, refused, unknown, limit, invalid, internal, unavailable."""
        def __init__(self, message, kind="tool"):
            super().__init__(message)
            self.kind = kind

    ToolError.__module__, ToolError.__qualname__ = "builtins", "ToolError"

    def show(e):
        # the traceback without the runner's frames
        te = traceback.TracebackException(type(e), e, e.__traceback__)
        seen = set()
        def strip(t):
            if t is None or id(t) in seen:
                return
            seen.add(id(t))
            t.stack = traceback.StackSummary.from_list([f for f in t.stack if f.filename != "<aiod>"])
            strip(t.__cause__)
            strip(t.__context__)
        strip(te)
        sys.stdout.flush()
        sys.stderr.write("".join(te.format()))
        sys.stderr.flush()

    channel = os.environ.pop("AIOD_TOOLS", "") == "1"
    lock = threading.Lock()
    out = os.fdopen(3, "wb") if channel else None
    inp = os.fdopen(4, "rb") if channel else None

    def call(name, args=None, **kwargs):
        if not isinstance(name, str):
            raise TypeError("call(name, args): name must be a string")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise TypeError("call(name, args): args must be a dict")
        args = {**args, **kwargs}
        if not channel:
            raise ToolError("programs cannot call tools here (the host gave this run no tool channel)", "unavailable")
        line = (json.dumps({"name": name, "arguments": args}) + "\n").encode()
        with lock:
            try:
                out.write(line)
                out.flush()
                ans = inp.readline()
            except OSError:
                ans = b""
        if not ans:
            raise ToolError("the tool channel is closed", "internal")
        a = json.loads(ans)
        if a.get("error"):
            raise ToolError(a.get("text", ""), a["error"])
        return a.get("text", "")

    class Tools:
        """tools.<name>(**arguments) calls a tool and returns its text; tools.call(name, arguments) too."""
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            def tool(arguments=None, **kwargs):
                return call(name, arguments, **kwargs)
            tool.__name__ = name
            return tool
        def call(self, name, arguments=None, **kwargs):
            return call(name, arguments, **kwargs)

    src = sys.stdin.read()
    sys.argv = ["-"]
    g = sys.modules["__main__"].__dict__
    g.pop("_aiod_main", None)
    g.update(tools=Tools(), call=call, ToolError=ToolError)
    linecache.cache["<stdin>"] = (len(src), None, src.splitlines(True), "<stdin>")
    try:
        code = compile(src, "<stdin>", "exec")
    except SyntaxError as e:
        show(e)
        sys.exit(1)
    try:
        exec(code, g)
    except SystemExit:
        raise
    except BaseException as e:
        show(e)
        sys.exit(1)

_aiod_main()
`

// nodeRunner runs the code (read from stdin) as a script and prints the
// value of its last expression when it is not undefined, as a REPL or a
// notebook would; code using top-level await runs in an async function.
// tools.<name>(args) and call(name, args) return a tool's text at once
// (they block), and throw ToolError when it fails.
const nodeRunner = `// The runner's own names stay inside a function: a -e script's top-level
// declarations would be global, and clash with the code's.
(() => {
const vm = require('vm'), util = require('util'), fs = require('fs');
const code = fs.readFileSync(0, 'utf8');
const channel = process.env.AIOD_TOOLS === '1';
delete process.env.AIOD_TOOLS;
class ToolError extends Error {
  constructor(message, kind = 'tool') { super(message); this.name = 'ToolError'; this.kind = kind; }
}
let pending = Buffer.alloc(0);
const readLine = () => {
  const buf = Buffer.alloc(65536);
  for (;;) {
    const i = pending.indexOf(10);
    if (i >= 0) { const l = pending.subarray(0, i).toString('utf8'); pending = pending.subarray(i + 1); return l; }
    let n;
    try { n = fs.readSync(4, buf, 0, buf.length, null); } catch (e) { if (e.code === 'EAGAIN') continue; return null; }
    if (n === 0) return null;
    pending = Buffer.concat([pending, buf.subarray(0, n)]);
  }
};
function call(name, args) {
  if (typeof name !== 'string') throw new TypeError('call(name, args): name must be a string');
  if (args === undefined || args === null) args = {};
  if (typeof args !== 'object' || Array.isArray(args)) throw new TypeError('call(name, args): args must be an object');
  if (!channel) throw new ToolError('programs cannot call tools here (the host gave this run no tool channel)', 'unavailable');
  const line = Buffer.from(JSON.stringify({name, arguments: args}) + '\n');
  let ans = null;
  try {
    for (let off = 0; off < line.length; ) off += fs.writeSync(3, line, off);
    ans = readLine();
  } catch (e) { ans = null; }
  if (ans === null) throw new ToolError('the tool channel is closed', 'internal');
  const a = JSON.parse(ans);
  if (a.error) throw new ToolError(a.text, a.error);
  return a.text;
}
const tools = new Proxy({}, {get(_, p) {
  if (typeof p !== 'string' || p === 'then' || p === 'toJSON' || p === 'constructor' || p.startsWith('__')) return undefined;
  if (p === 'call') return call;
  return (args) => call(p, args);
}});
Object.assign(globalThis, {require, module, exports, __filename: '[code]', __dirname: process.cwd(), tools, call, ToolError});
// An error's stack without the runner's own frames.
const fail = (e) => {
  let s = e instanceof Error && e.stack ? String(e.stack) : 'Uncaught ' + util.inspect(e);
  s = s.replace(/^\[eval\]:\d+\n[\s\S]*?\n\n/, ''); // where in the runner it was thrown
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
})();
`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: run Python (python3) or JavaScript (node) code.",
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"python3", "node"}, Cwd: []string{"$SANDBOX"}, Tools: true}},
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
		Env:            map[string]string{"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "AIOD_TOOLS": "1"},
		Tools:          true,
	}
	if lang == "python" {
		// the runner's frames are "<aiod>"'s, left out of tracebacks
		req.Argv = []string{"python3", "-c", "import sys; exec(compile(sys.argv.pop(1), '<aiod>', 'exec'))", pythonRunner}
	} else {
		req.Argv = []string{"node", "-e", nodeRunner}
		req.Env = map[string]string{"AIOD_TOOLS": "1"}
	}
	res, err := process.Spawn(req)
	if errors.Is(err, process.ErrDenied) || errors.Is(err, process.ErrUnavailable) {
		// no tools grant (an operator's policy for this plugin), or a
		// host that serves no tool calls: the program runs without them
		req.Tools = false
		delete(req.Env, "AIOD_TOOLS")
		res, err = process.Spawn(req)
	}
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
			if res.ToolCalls > 0 {
				lines = lastLines(lines, toolOutput)
			}
			tb = lines
		}
	}
	if res.ToolCalls > 0 {
		res.Stdout, res.Stderr = cut(res.Stdout, "stdout"), cut(res.Stderr, "stderr")
	}
	return sdk.JSONResult(map[string]any{
		"status": status, "stdout": res.Stdout, "stderr": res.Stderr, "exit_code": exit, "traceback": tb,
	}, false), nil
}

// cut keeps the first toolOutput characters of s, saying so when it
// cuts.
func cut(s, name string) string {
	n := 0
	for i := range s {
		if n == toolOutput {
			return s[:i] + "\n... [" + name + " cut at 24,000 characters]"
		}
		n++
	}
	return s
}

// lastLines keeps the last lines of a traceback that fit in max
// characters (the error itself is the last line), the first line when
// none fits.
func lastLines(lines []string, max int) []string {
	n, i := 0, len(lines)
	for i > 0 && n+utf8.RuneCountInString(lines[i-1]) <= max {
		n += utf8.RuneCountInString(lines[i-1])
		i--
	}
	if i == len(lines) {
		return []string{string([]rune(lines[len(lines)-1])[:max])}
	}
	return lines[i:]
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
