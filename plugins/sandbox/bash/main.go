// Command bash is the built-in plugin sandbox_execute_bash: a shell
// command in the host's persistent bash session (aiod:process
// shell_exec), shared by the calls of one client unless new_session is
// set. The host owns the session: it serializes concurrent calls, keeps
// `cd`, `export`, variables and functions from one command to the next,
// and runs each command in a subshell so that `exit` or `exec` end the
// command, never the session. spec/sandbox-tools.md describes the tool.
package main

import (
	"path"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/process"
)

// Args are the tool's arguments.
type Args struct {
	Cmd              *string `json:"cmd"`
	Cwd              *string `json:"cwd"`
	NewSession       bool    `json:"new_session"`
	Timeout          *int    `json:"timeout"`
	PreserveSymlinks bool    `json:"preserve_symlinks"`
	Truncate         *bool   `json:"truncate"`
	Cursor           *string `json:"cursor"`
}

// Name is the tool's (and the plugin's) name.
const Name = "sandbox_execute_bash"

// Defaults and limits.
const (
	defaultTimeout = 30       // seconds
	truncateChars  = 30_000   // output cut unless truncate is false
	fullOutputCap  = 16 << 20 // the most the host returns (truncate: false)
)

// TruncatedNotice follows output cut at truncateChars.
const TruncatedNotice = "\n... [output truncated to the first 30000 characters; call again with truncate: false for the full output]"

// Description is the tool's description.
const Description = "Execute a shell command. Sessions are managed automatically.\n\n" +
	"Commands run in one shared bash session unless new_session is set: `cd`, `export` and variables persist between calls. " +
	"The result reports the status, the combined output, the exit code and the session's cwd after the command; " +
	"pass that cwd back on the next call to keep the agent's working directory in step with the shell's."

// InputSchema is the tool's input schema, keys sorted as aiod emits them.
const InputSchema = `{"properties":{` +
	`"cmd":{"description":"Shell command to execute","type":"string"},` +
	`"cursor":{"description":"The next_cursor of a truncated result: returns the next part of that command's output (the other arguments are ignored, cmd may be empty)","type":"string"},` +
	`"cwd":{"description":"Optional working directory (absolute path). When provided, the hidden shell session is synchronized to this directory before the command runs. The response includes the actual cwd after execution, which agents should pass back on subsequent calls to keep state in sync.","type":"string"},` +
	`"new_session":{"description":"If True, runs the command in a new session instead of the default one","type":"boolean"},` +
	`"preserve_symlinks":{"description":"If True, preserve symlinks in working directory path: the cwd reported is the one given, not its physical path, while the command stays there","type":"boolean"},` +
	`"timeout":{"description":"Optional timeout in seconds for command execution (default: 30)","type":"integer"},` +
	`"truncate":{"description":"Truncate output when it exceeds 30000 characters (default: true). Set to false to return the full output","type":"boolean"}` +
	`},"required":["cmd"],"type":"object"}`

// OutputSchema is the schema of the result object.
const OutputSchema = `{"additionalProperties":false,"properties":{` +
	`"cwd":{"type":"string"},"exit_code":{"type":["integer","null"]},"output":{"type":"string"},` +
	`"status":{"enum":["running","completed","no_change_timeout","hard_timeout","terminated"],"type":"string"},` +
	`"truncated":{"type":"boolean"},"next_cursor":{"type":"string"}` +
	`},"required":["cwd","exit_code","output","status"],"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:        Name,
		Version:     "1.0.0",
		Description: "aiod built-in: shell commands in a persistent bash session.",
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"bash"}, Cwd: []string{"$SANDBOX"}, Shell: true},
			State: &abi.StateScope{MaxBytes: stateBytes}}, // cursor.go
		Limits: abi.Limits{TimeoutMs: 600000, MemoryMiB: 512, MaxResultBytes: 67108864},
	})
	sdk.AddTool(sdk.Tool{Name: Name, Title: "Run a shell command", Description: Description,
		InputSchema: InputSchema, OutputSchema: OutputSchema,
		// A command may delete anything the sandbox can and reach the network.
		Annotations: sdk.Behavior{Destructive: true, OpenWorld: true}.Annotations(), TaskSupport: "optional"}, Run)
}

func main() {}

// Run executes the command.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	if a.Cursor != nil && *a.Cursor != "" {
		return nextPage(*a.Cursor), nil
	}
	if a.Cmd == nil || strings.TrimSpace(*a.Cmd) == "" {
		return sdk.ErrorResult("cmd is required"), nil
	}
	timeout := defaultTimeout
	if a.Timeout != nil && *a.Timeout > 0 {
		timeout = *a.Timeout
	}
	truncate := a.Truncate == nil || *a.Truncate
	req := process.ShellRequest{
		Cmd:            *a.Cmd,
		NewSession:     a.NewSession,
		Timeout:        time.Duration(timeout) * time.Second,
		MaxOutputBytes: fullOutputCap, // truncated, the rest is paged (cursor.go)
		Progress:       true,          // output lines as progress, when the client asks for it
	}
	if a.Cwd != nil {
		req.Cwd = *a.Cwd
	}
	// The host reports the session's physical directory. To preserve a
	// symlinked cwd, learn its physical form first (syncing the session
	// to it), then report the cwd as given if the command stayed there.
	logical, physical := "", ""
	if a.PreserveSymlinks && req.Cwd != "" && !a.NewSession {
		pre, err := process.ShellExec(process.ShellRequest{Cmd: "builtin pwd -P", Cwd: req.Cwd, Timeout: 10 * time.Second})
		if err != nil {
			return sdk.ErrorResult(err.Error()), nil
		}
		logical, physical = path.Clean(req.Cwd), pre.Cwd
		req.Cwd = ""
	}
	res, err := process.ShellExec(req)
	if err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	if physical != "" && res.Cwd == physical {
		res.Cwd = logical
	}
	if a.NewSession && res.Session != "" {
		// A new session serves this call only; the shared one is untouched.
		_, _ = process.ShellClose(res.Session)
	}
	var exit any
	if res.ExitCode != nil {
		exit = *res.ExitCode
	}
	out := map[string]any{"status": res.Status, "output": res.Output, "exit_code": exit, "cwd": res.Cwd}
	if truncate {
		if cut, ok := cutChars(res.Output, truncateChars); ok || res.Truncated {
			out["output"], out["truncated"] = cut+TruncatedNotice, true
			k := kept{Status: res.Status, ExitCode: res.ExitCode, Cwd: res.Cwd, Rest: res.Output[len(cut):]}
			if res.Truncated {
				k.Cut = capNotice
			}
			if c := keep(k, time.Now()); c != "" {
				out["next_cursor"] = c
			}
		}
	} else if res.Truncated {
		out["output"], out["truncated"] = res.Output+capNotice, true
	}
	return sdk.JSONResult(out, false), nil
}

// capNotice follows output cut at the host's 16 MiB.
const capNotice = "\n... [output truncated at 16 MiB]"

// nextPage answers {"cursor": c}: the next part of a truncated output.
func nextPage(c string) *sdk.Result {
	k, part, next, err := page(c, time.Now())
	if err != nil {
		return sdk.ErrorResult(err.Error())
	}
	var exit any
	if k.ExitCode != nil {
		exit = *k.ExitCode
	}
	out := map[string]any{"status": k.Status, "output": part, "exit_code": exit, "cwd": k.Cwd, "truncated": next != ""}
	if next != "" {
		out["next_cursor"] = next
	} else {
		out["output"] = part + k.Cut
	}
	return sdk.JSONResult(out, false)
}

// cutChars returns the first n characters of s and whether s was longer.
func cutChars(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j], true
		}
		i++
	}
	return s, false
}
