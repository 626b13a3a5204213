package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/aoi"
)

// aiod's own commands in Machine Mode (spec/machine-mode.md §7): the
// commands below take --output jsonl, and `aiod capabilities` and `aiod
// schema` describe them from this table.

var str, integer, boolean, object, strs = aoi.String, aoi.Integer, aoi.Boolean, aoi.Object, aoi.Strings

var machineTool = aoi.Tool{
	Meta: aoi.Meta{Tool: "aiod", ToolVersion: host.Version, SchemaName: "aiod.cli.events", SchemaVersion: "1.0.0"},
	Commands: []aoi.Command{
		{Name: "plugin inspect", Title: "Inspect a plugin",
			Description: "Read a plugin module (FILE.wasm) or package directory: ABI version, form, tools and their schemas, capabilities, limits, imports, exports, size and digest. Each problem that would keep a host from loading it is a warning.",
			ReadOnly:    true,
			Operands:    []aoi.Arg{{Name: "path", Type: "string", Required: true, Description: "a module file (*.wasm) or a plugin package directory"}},
			Events: []aoi.Event{{Type: "module", Description: "what the module and its manifest say",
				Required:   []string{"path", "module", "size", "sha256", "form", "imports", "exports"},
				Properties: map[string]any{"path": str, "module": str, "size": integer, "sha256": str, "form": str, "manifest": object, "imports": aoi.Array, "exports": aoi.Array, "problems": strs}}}},
		{Name: "plugin verify", Title: "Verify a plugin package against a policy",
			Description: "What the operator policy grants and refuses the package, family by family, and why; ok is false when the host would refuse the package.",
			ReadOnly:    true,
			Operands:    []aoi.Arg{{Name: "package", Type: "string", Required: true, Description: "a plugin package directory"}},
			Flags: []aoi.Arg{{Name: "policy", Type: "string", Description: "operator policy file (default: none, deny by default)"},
				{Name: "workspace", Type: "string", Description: "the workspace $SANDBOX and $WORKSPACE resolve to"}},
			Events: []aoi.Event{{Type: "verdict", Description: "the whole verdict",
				Required:   []string{"plugin", "loads", "families", "refused", "warnings", "limits"},
				Properties: map[string]any{"plugin": str, "loads": boolean, "families": aoi.Array, "refused": aoi.Array, "warnings": aoi.Array, "limits": object, "report": object}}}},
		{Name: "plugin test", Title: "Call a plugin's example calls",
			Description: "Call each tool of examples.json (or --args) on every engine and report each answer; ok is false when an answer differs from its expectation.",
			Operands:    []aoi.Arg{{Name: "dir", Type: "string", Required: true, Description: "a plugin project or package directory"}},
			Flags: []aoi.Arg{{Name: "args", Type: "string", Description: "calls to make (default: DIR/examples.json)"},
				{Name: "engine", Type: "string", Description: "run on this engine only", Enum: enginesAny()},
				{Name: "policy", Type: "string", Description: "grant what this policy grants (default: what the manifest asks for)"},
				{Name: "cache-dir", Type: "string", Description: "compile through this compilation cache"}},
			Events: []aoi.Event{{Type: "answer", Description: "one call's answer on one engine",
				Required:   []string{"engine", "tool", "arguments", "result", "isError", "duration_ns"},
				Properties: map[string]any{"engine": str, "tool": str, "arguments": map[string]any{}, "result": map[string]any{}, "text": str, "isError": boolean, "duration_ns": integer, "failed": str}}}},
		{Name: "doctor", Title: "What this machine has for each plane",
			Description: "Probe the shell, interpreters, browser, isolation and caches; with lockdown, also what a locked-down start would be refused for. One check event per probe, one plane event per plane.",
			ReadOnly:    true,
			Flags: []aoi.Arg{{Name: "lockdown", Type: "boolean", Description: "also check what aiod start --lockdown needs"},
				{Name: "cache-dir", Type: "string", Description: "compiled-module cache directory to check"},
				{Name: "workspace", Type: "string", Description: "workspace directory to check"},
				{Name: "data-dir", Type: "string", Description: "lockdown: the data directory aiod start is given"},
				{Name: "audit-log", Type: "string", Description: "lockdown: the audit log aiod start is given"}},
			Events: []aoi.Event{{Type: "plane", Description: "one plane's status",
				Required:   []string{"name", "status", "missing", "warnings"},
				Properties: map[string]any{"name": str, "status": str, "missing": strs, "warnings": strs}}}},
		{Name: "upstream review", Title: "Review the upstream MCP servers' tools against their pins",
			Description: "List each upstream server's tools and how they differ from the pin file (new, changed with the fields that changed, removed); accept pins them as they are now. ok is false when changes are pending and not accepted.",
			Flags: []aoi.Arg{{Name: "accept", Type: "boolean", Description: "pin every tool as the servers list it now"},
				{Name: "mcp-servers", Type: "string", Description: `the upstream MCP servers, {"<name>": {"url": ..., "prefix": ...}}`},
				{Name: "pin-upstreams", Type: "string", Description: "the pin file"},
				{Name: "policy", Type: "string", Description: "the policy file, whose upstreams are reviewed too"},
				{Name: "data-dir", Type: "string", Description: "the data directory (command servers run in their directories under it)"},
				{Name: "upstream-list-timeout", Type: "string", Description: "longest to wait for one server's tools/list, a duration such as 10s"}},
			Events: []aoi.Event{
				{Type: "server", Description: "one upstream server",
					Required:   []string{"name", "url", "reachable"},
					Properties: map[string]any{"name": str, "url": str, "reachable": boolean, "tools": integer, "pending": integer}},
				{Type: "change", Description: "one tool that differs from its pin",
					Required:   []string{"server", "tool", "kind", "fields"},
					Properties: map[string]any{"server": str, "tool": str, "kind": map[string]any{"enum": []string{"new", "changed", "removed"}}, "fields": aoi.Array}}}},
		{Name: "key new", Title: "A fresh API key",
			Description: "A fresh random API key and the line to paste into a tenant's keys in the policy; the key is shown only now and never stored.",
			ReadOnly:    true,
			Events: []aoi.Event{{Type: "key", Description: "the key and its policy line",
				Required: []string{"key", "policy"}, Properties: map[string]any{"key": str, "policy": str}}}},
	},
}

func enginesAny() []any {
	var out []any
	for _, e := range host.Engines() {
		out = append(out, e)
	}
	return out
}

// jsonl reports whether args ask for Machine Mode (--output jsonl).
func jsonl(args []string) bool {
	v, _ := aoi.Output(args)
	return v == "jsonl"
}

// outputFlag adds --output to a command's flags; checkOutput checks its
// value once parsed.
func outputFlag(fs *flag.FlagSet) *string {
	return fs.String("output", "text", "text, or jsonl: Machine Mode (AOI-CLI v0.2), one JSON event per line on stdout (spec/machine-mode.md)")
}

func checkOutput(v string) error {
	if v != "text" && v != "jsonl" {
		return usageError{fmt.Errorf("--output %q: want text or jsonl", v)}
	}
	return nil
}

// startStream begins the Machine Mode stream of command on stdout.
func startStream(stdout io.Writer, command string) *aoi.Stream {
	return aoi.Start(stdout, machineTool.Meta, command)
}

// abort ends s with err: a usage error is category usage, a missing
// file not_found, anything else def with code.
func abort(s *aoi.Stream, err error, def, code string) int {
	var ue usageError
	var re reportedError
	switch {
	case errors.As(err, &ue), errors.As(err, &re):
		return s.Abort(err, aoi.CategoryUsage, "INVALID_ARGUMENTS")
	case errors.Is(err, fs.ErrNotExist):
		return s.Abort(err, aoi.CategoryNotFound, "NOT_FOUND")
	}
	return s.Abort(err, def, code)
}

// discover is `aiod capabilities|schema --output json ...`.
func discover(word string, args []string, stdout, stderr io.Writer) int {
	return machineTool.Discover(word, args, stdout, stderr)
}
