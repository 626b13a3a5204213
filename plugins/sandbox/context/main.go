// Command context is the built-in plugin sandbox_get_context: the
// sandbox's version and home directory. The home directory (and user
// and shell) come from the environment the host gives programs, read
// with printenv through the aiod:process family; so does the version:
// AIOD_VERSION, the daemon's semantic version (host.Version, e.g. "0.2.0",
// the one `aiod version` prints), else (a host that does not set it) the
// version this module was built as. spec/sandbox-tools.md describes the
// tool.
package main

import (
	"encoding/json"
	"runtime/debug"
	"strings"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/process"
)

// Name is the tool's (and the plugin's) name.
const Name = "sandbox_get_context"

// InputSchema is the tool's input schema: no arguments.
const InputSchema = `{"properties":{},"type":"object"}`

// OutputSchema covers the answer ({home_dir, info}) and its failure
// ({error, success:false}).
const OutputSchema = `{"additionalProperties":false,"anyOf":[{"required":["home_dir","info"]},{"required":["error","success"]}],` +
	`"properties":{"error":{"type":"string"},"home_dir":{"type":"string"},"info":{"type":"string"},"success":{"const":false}},"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: sandbox version and home directory.",
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"printenv"}, Cwd: []string{"$SANDBOX"}}},
	})
	sdk.AddRawTool(sdk.Tool{
		Name:         Name,
		Title:        "Sandbox information",
		Description:  "Get sandbox environment information: the aio system's version and the home directory.",
		InputSchema:  InputSchema,
		OutputSchema: OutputSchema,
		Annotations:  sdk.Behavior{ReadOnly: true}.Annotations(),
	}, Run)
}

func main() {}

// Version is the version of the build: the main module's version as the
// Go toolchain stamped it (a tag or a pseudo-version with the commit).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Run answers {"home_dir", "info"}.
func Run(_ *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
	res, err := process.Run("printenv")
	if err != nil {
		return sdk.JSONResult(map[string]any{"success": false, "error": err.Error()}, true), nil
	}
	env := map[string]string{}
	for _, l := range strings.Split(res.Stdout, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	home := env["HOME"]
	version := env["AIOD_VERSION"] // the daemon's, when the host passes it
	if version == "" {
		version = Version()
	}
	var info strings.Builder
	info.WriteString("AIO sandbox (aiod) version: " + version + "\n")
	info.WriteString("Home directory: " + home + "\n")
	if u := env["USER"]; u != "" {
		info.WriteString("User: " + u + "\n")
	}
	if s := env["SHELL"]; s != "" {
		info.WriteString("Shell: " + s + "\n")
	}
	return sdk.JSONResult(map[string]any{"home_dir": home, "info": strings.TrimSuffix(info.String(), "\n")}, false), nil
}
