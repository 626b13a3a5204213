// Command machine is the built-in plugin machine_tools: the adapter of
// seed 002 that publishes Machine Mode command-line tools (AOI-CLI v0.2)
// as MCP tools. The operator registers the tools (--machine-tools,
// AIO_MACHINE_TOOLS, the policy's machine_tools); at every load and reload
// the plugin runs each tool's discovery (capabilities, schema) and makes
// one MCP tool per command (configure.go, discover.go, schema.go); a call
// runs the command in machine mode in the host's process sandbox, reads
// its JSONL stream as it comes (collect.go) and translates the stream
// into the MCP result (call.go). spec/machine-mode.md is the contract.
//
// It is a configured plugin (ABI v1.1): its tools come from its
// configuration, which the host builds from the registrations (the named
// environment variables resolved, the pins checked).
package main

import (
	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Name is the plugin's name.
const Name = "machine_tools"

func init() {
	sdk.Plugin(sdk.Info{
		Name:        Name,
		Version:     "1.0.0",
		Description: "aiod built-in: Machine Mode command-line tools (AOI-CLI v0.2) as MCP tools (seed 002's adapter).",
		Configured:  true,
		// The host narrows "*" to the registered programs (its built-in
		// policy for this plugin names them); no shell.
		Capabilities: abi.Capabilities{Process: &abi.ProcessScope{Commands: []string{"*"}, Cwd: []string{"$SANDBOX"}}},
		Limits:       abi.Limits{TimeoutMs: 600000, MemoryMiB: 512, MaxResultBytes: 67108864},
	})
	sdk.OnConfigure(configure)
	sdk.HandleConfigured(call)
}

func main() {}
