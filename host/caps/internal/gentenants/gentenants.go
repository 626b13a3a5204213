// Package gentenants generates the JSON Schema (draft 2020-12) of the
// policy's "tenants" object, spec/tenants.schema.json, from the patterns
// and rules of host/caps (tenants.go). host/caps tests compare the
// committed file with Generate, and check that the schema and
// caps.ParsePolicy accept and refuse the same documents.
package gentenants

import (
	"bytes"
	"encoding/json"

	"github.com/aiodhq/aiod/host/caps"
)

// Generate returns the schema, indented, with a final newline.
func Generate() ([]byte, error) {
	count := func(desc string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 0, "description": desc}
	}
	tenant := map[string]any{
		"type":                 "object",
		"description":          "One tenant: who it is (its keys), what it may use and within which quotas. Everything is denied unless named.",
		"additionalProperties": false,
		"required":             []string{"keys"},
		"properties": map[string]any{
			"keys": map[string]any{"type": "array", "description": "SHA-256 digests of the tenant's API keys, \"sha256:<64 lowercase hex>\" (aiod key new prints one). A digest belongs to exactly one tenant (not expressible here; caps.ParsePolicy checks it).",
				"items": map[string]any{"type": "string", "pattern": caps.KeyHashPattern}, "uniqueItems": true},
			"tools": map[string]any{"type": "array", "description": "Globs ('*' matches any run of characters) over the names of tools and prompts and the URIs of resources and resource templates the tenant may see and use. Absent or empty: none.",
				"items": map[string]any{"type": "string", "pattern": caps.ToolGlobPattern}},
			"quotas": map[string]any{"type": "object", "additionalProperties": false, "description": "Per-tenant limits; 0 or absent: no limit of this kind.",
				"properties": map[string]any{
					"concurrent_calls": count("Most MCP requests of the tenant in flight at once (HTTP 429 beyond)."),
					"calls_per_minute": count("Sustained MCP requests per minute: a token bucket holding ten seconds' worth, at least one (HTTP 429 with Retry-After beyond)."),
					"instances":        count("Most plugin instances (idle or in a call) the tenant holds across all its plugins."),
					"sessions":         count("Most legacy MCP sessions the tenant holds at once."),
				}},
			"upstreams": map[string]any{"type": "array", "description": "Upstream MCP servers (registered names) whose tools the tenant may see and call; \"*\" for all. Absent or empty: none.",
				"items": map[string]any{"type": "string", "pattern": `^(\*|[a-z0-9][a-z0-9_-]{0,63})$`}},
			"browser":   map[string]any{"type": "boolean", "default": false, "description": "Whether the tenant's plugins may use the browser (the cdp family)."},
			"workspace": map[string]any{"type": "string", "pattern": `^/[^\x00]*$`, "description": "The tenant's /workspace directory, absolute; absent: one under the host's data directory."},
			"code_tools": map[string]any{"type": "array", "description": "Globs ('*' matches any run of characters) over the tools a program run by sandbox_execute_code may call besides those annotated read-only and closed-world (spec/code-tools.md), whatever --code-tools says. Absent: the host's --code-tools; empty: none besides those.",
				"items": map[string]any{"type": "string", "pattern": caps.ToolGlobPattern}},
			"tool_search": map[string]any{"type": "boolean", "description": "Tool search for this tenant (spec/protocol.md, \"Tool search\"): true lists only the search and describe tools and the pinned tools, false the whole catalogue, whatever --tool-search says; absent: the host's --tool-search."},
			"hooks":       map[string]any{"$ref": "#/$defs/Hooks"},
		},
	}
	hook := map[string]any{
		"type":                 "object",
		"description":          "Around the calls of the tools its globs match: an operator command (event and command, spec/hooks.md §2) or a guard plugin switched on by name (plugin, spec/hooks.md §1).",
		"additionalProperties": false,
		"oneOf": []any{
			map[string]any{"required": []string{"event", "command"}, "properties": map[string]any{"plugin": false, "fail_open": false, "config": false}},
			map[string]any{"required": []string{"plugin"}, "properties": map[string]any{"event": false, "command": false, "timeout_ms": false}},
		},
		"properties": map[string]any{
			"event": map[string]any{"enum": []string{caps.HookBeforeTool, caps.HookAfterTool},
				"description": "before-tool: exit 0 lets the call run, exit 2 blocks it (stderr, else stdout, is the reason), anything else blocks it too. after-tool: what it prints on exit 0 is added to the result, marked as the hook's."},
			"command": map[string]any{"type": "array", "minItems": 1, "maxItems": 64, "description": "The program (an absolute, clean path) and its arguments, run without a shell in the process sandbox.",
				"prefixItems": []any{map[string]any{"type": "string", "pattern": `^/[^\x00]*$`}}, "items": map[string]any{"type": "string", "pattern": `^[^\x00]*$`}},
			"tools": map[string]any{"type": "array", "description": "Globs ('*' matches any run of characters) over the tool names the hook is for. Absent or empty: every tool.",
				"items": map[string]any{"type": "string", "pattern": caps.ToolGlobPattern}},
			"timeout_ms": map[string]any{"type": "integer", "minimum": 0, "maximum": caps.MaxHookTimeout.Milliseconds(), "description": "The hook's deadline; absent or 0: 30000."},
			"plugin":     map[string]any{"type": "string", "pattern": caps.TenantNamePattern, "description": "A guard plugin (its manifest declares hooks), run before and after the calls as its manifest says, within its own limits."},
			"fail_open":  map[string]any{"type": "boolean", "default": false, "description": "Guard plugins: let the call go on when the guard fails (traps, times out, answers nonsense, is not loaded). Default: the call fails closed."},
			"config": map[string]any{"type": "object", "maxProperties": 64, "additionalProperties": map[string]any{"type": "string"},
				"description": "Guard plugins: settings given to the guard with every event."},
		},
	}
	hooks := map[string]any{"type": "array", "maxItems": caps.MaxHooks, "items": map[string]any{"$ref": "#/$defs/Hook"},
		"description": "Hooks run in order around the tenant's tool calls, after the policy's top-level hooks (spec/hooks.md)."}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://aiod.dev/spec/tenants.schema.json",
		"title":       "aiod policy tenants, version 1",
		"description": "The \"tenants\" object of the operator's policy (spec/tenants.md): tenant name -> tenant. The rest of the policy is described in spec/policy.md.",
		"type":        "object",
		"properties": map[string]any{
			"tenants": map[string]any{
				"type":                 "object",
				"description":          "Tenants by name. The name \"" + caps.ReservedTenant + "\" is reserved for the single-tenant form.",
				"propertyNames":        map[string]any{"pattern": caps.TenantNamePattern, "not": map[string]any{"const": caps.ReservedTenant}},
				"additionalProperties": map[string]any{"$ref": "#/$defs/Tenant"},
			},
		},
		"$defs": map[string]any{"Tenant": tenant, "Hook": hook, "Hooks": hooks},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
