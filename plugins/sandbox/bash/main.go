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
	"unicode/utf8"

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
	`"cwd":{"description":"Optional working directory (absolute path). When provided, the hidden shell session is synchronized to this directory before the command runs. The response includes the actual cwd after execution, which agents should pass back on subsequent calls to keep state in sync.","type":"string"},` +
	`"new_session":{"description":"If True, runs the command in a new session instead of the default one","type":"boolean"},` +
	`"preserve_symlinks":{"description":"If True, preserve symlinks in working directory path: the cwd reported is the one given, not its physical path, while the command stays there","type":"boolean"},` +
	`"timeout":{"description":"Optional timeout in seconds for command execution (default: 30)","type":"integer"},` +
	`"truncate":{"description":"Truncate output when it exceeds 30000 characters (default: true). Set to false to return the full output","type":"boolean"}` +
	`},"required":["cmd"],"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: shell commands in a persistent bash session.",
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"bash"}, Cwd: []string{"$SANDBOX"}, Shell: true}},
		Limits:       abi.Limits{TimeoutMs: 600000, MemoryMiB: 512, MaxResultBytes: 67108864},
	})
	sdk.AddTool(sdk.Tool{Name: Name, Description: Description, InputSchema: InputSchema, TaskSupport: "optional"}, Run)
}

func main() {}

// Run executes the command.
func Run(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
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
		MaxOutputBytes: fullOutputCap,
	}
	if truncate {
		// Enough bytes for truncateChars characters and to tell that
		// there were more.
		req.MaxOutputBytes = truncateChars*utf8.UTFMax + 1
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
	out := res.Output
	if truncate {
		if cut, ok := cutChars(out, truncateChars); ok || res.Truncated {
			out = cut + TruncatedNotice
		}
	} else if res.Truncated {
		out += "\n... [output truncated at 16 MiB]"
	}
	var exit any
	if res.ExitCode != nil {
		exit = *res.ExitCode
	}
	return sdk.JSONResult(map[string]any{
		"status": res.Status, "output": out, "exit_code": exit, "cwd": res.Cwd,
	}, false), nil
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
