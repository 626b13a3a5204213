package abi

import "encoding/json"

// The plugin manifest (spec/manifest/v1): what a plugin provides and what
// it asks for. These are the data types only; the host validates a
// manifest (host/caps.ParseManifest) and computes its grant from the
// operator's policy. Adding a family adds its scope type here, a field in
// Capabilities and a case in Has.

// ManifestVersion is the version of the manifest format (spec/manifest/v1).
const ManifestVersion = 1

// Family names a group of host functions. Each family is its own wasm import
// module "aiod:<family>". log and progress are part of "aiod:core" and are
// always linked; every other family is linked only when granted.
type Family string

// The gated host function families, named as in a manifest's
// capabilities.
const (
	FamilyFiles    Family = "files"
	FamilyProcess  Family = "process"
	FamilyState    Family = "state"
	FamilyCDP      Family = "cdp"
	FamilyUpstream Family = "upstream"
	// FamilyHTTP is outbound HTTP. Its functions are Extism's
	// (extism:host/env http_request, http_status_code, http_headers),
	// linked for plugins of form "extism" (spec/abi/extism.md); there is
	// no aiod:http module yet.
	FamilyHTTP Family = "http"
)

// Families lists every gated family, in a stable order.
var Families = []Family{FamilyFiles, FamilyProcess, FamilyState, FamilyCDP, FamilyUpstream, FamilyHTTP}

// ImportModule is the wasm import module name of a family.
func (f Family) ImportModule() string { return "aiod:" + string(f) }

// The forms of a plugin module (Manifest.Form).
const (
	FormReactor = "reactor"
	FormCommand = "command"
	// FormExtism is an unchanged Extism plugin (spec/abi/extism.md): a
	// module exporting hyper-mcp's list_tools/call_tool or the older
	// describe/call, run on the host's own Extism host ABI.
	FormExtism = "extism"
)

// Manifest describes a plugin package: what it provides, what it needs.
type Manifest struct {
	// Name of the plugin: lowercase letters, digits, '-' and '_'.
	Name string `json:"name"`
	// Version of the plugin, free text (semver recommended).
	Version string `json:"version"`
	// ABI is the plugin ABI version the module implements; must be 1.
	ABI int `json:"abi"`
	// Form is "reactor" (default: a pooled module exporting aiod_call),
	// "command" (a WASI command run once per call, JSON on stdin/stdout)
	// or "extism" (an Extism plugin, spec/abi/extism.md).
	Form string `json:"form,omitempty"`
	// Module is the wasm file name inside the plugin directory; default
	// "plugin.wasm".
	Module string `json:"module,omitempty"`
	// SHA256 optionally pins the module's digest (hex).
	SHA256 string `json:"sha256,omitempty"`
	// Description of the plugin for humans.
	Description string `json:"description,omitempty"`
	// Tools the plugin provides, in the order they are listed.
	Tools []Tool `json:"tools"`
	// Prompts, Resources and ResourceTemplates the plugin provides
	// (below), in the order they are listed.
	Prompts           []Prompt           `json:"prompts,omitempty"`
	Resources         []Resource         `json:"resources,omitempty"`
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates,omitempty"`
	// Capabilities requested by the plugin.
	Capabilities Capabilities `json:"capabilities"`
	// Limits the plugin asks for; the operator caps them.
	Limits Limits `json:"limits"`
	// Config is what an Extism plugin reads with config_get (form
	// "extism" only).
	Config map[string]string `json:"config,omitempty"`
	// Hooks make the plugin a guard: the tools whose calls it may see
	// before and after they run (ABI v1.1, spec/hooks.md §1). The operator
	// switches a guard on in the policy.
	Hooks *Hooks `json:"hooks,omitempty"`
	// Configured (ABI v1.1) says the plugin's tools come from the
	// operator's configuration: the host loads it only when it has a
	// configuration for it, runs OpConfigure with it at every load and
	// reload, and publishes the tools that returns (Tools may be empty).
	Configured bool `json:"configured,omitempty"`
}

// Configured is what OpConfigure returns: the tools the configuration
// makes, what of it was refused and why, and the state the plugin's calls
// read back with aiod:core.configuration.
type Configured struct {
	Tools   []Tool          `json:"tools"`
	Refused []Refusal       `json:"refused,omitempty"`
	State   json.RawMessage `json:"state,omitempty"`
}

// Refusal is one part of a configuration a plugin refused, and why.
type Refusal struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ConfigurationResponse is the response of aiod:core.configuration
// (ABI v1.1): the operator's configuration the plugin was configured with,
// and the state its OpConfigure returned (null when none).
type ConfigurationResponse struct {
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// Tool is an MCP tool declaration.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	// Execution says how the tool may be run (MCP's Tool.execution).
	Execution *ToolExecution `json:"execution,omitempty"`
}

// ToolExecution is MCP's Tool.execution: whether a call may run as a task
// of the tasks extension ("forbidden", the default when absent;
// "optional": the host decides; "required": only as a task).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}

// ToolAnnotations are MCP's behaviour hints.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Capabilities requested by a plugin (in a manifest) or granted to it (in a
// policy). A nil family means "not requested" / "not granted".
type Capabilities struct {
	Files    *FilesScope    `json:"files,omitempty"`
	Process  *ProcessScope  `json:"process,omitempty"`
	State    *StateScope    `json:"state,omitempty"`
	CDP      *CDPScope      `json:"cdp,omitempty"`
	Upstream *UpstreamScope `json:"upstream,omitempty"`
	HTTP     *HTTPScope     `json:"http,omitempty"`
}

// Has reports whether family f is present.
func (c Capabilities) Has(f Family) bool {
	switch f {
	case FamilyFiles:
		return c.Files != nil
	case FamilyProcess:
		return c.Process != nil
	case FamilyState:
		return c.State != nil
	case FamilyCDP:
		return c.CDP != nil
	case FamilyUpstream:
		return c.Upstream != nil
	case FamilyHTTP:
		return c.HTTP != nil
	}
	return false
}

// Mode of a path grant.
type Mode string

// Path modes.
const (
	ReadOnly  Mode = "ro"
	ReadWrite Mode = "rw"
)

// PathScope is one directory tree. Path is absolute or one of the variables
// $SANDBOX (the default roots, or the workspace when one is set), $HOME,
// $TMP and $WORKSPACE, optionally followed by /sub/dirs.
type PathScope struct {
	Path string `json:"path"`
	Mode Mode   `json:"mode"`
}

// FilesScope scopes the files family.
type FilesScope struct {
	Paths []PathScope `json:"paths"`
}

// ProcessScope scopes the process family.
type ProcessScope struct {
	// Commands are program names (looked up on PATH) or absolute paths the
	// plugin may run; "*" means any.
	Commands []string `json:"commands"`
	// Cwd lists directory trees a process may start in (same syntax as
	// PathScope.Path).
	Cwd []string `json:"cwd,omitempty"`
	// Shell allows persistent shell sessions owned by the host.
	Shell bool `json:"shell,omitempty"`
	// Tools lets the programs the plugin spawns call the calling tenant's
	// tools over a channel private to each spawn (ProcessSpawnRequest.Tools).
	Tools bool `json:"tools,omitempty"`
}

// StateScope scopes the state family.
type StateScope struct {
	// MaxBytes bounds the total size of keys and values per owner.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// CDPScope scopes the Chrome DevTools Protocol family.
type CDPScope struct {
	// Methods are the CDP methods the plugin may call: exact names
	// ("Page.navigate") or patterns where '*' matches any run of
	// characters ("Page.*", "Input.dispatch*"). Deny by default: a method
	// no pattern matches is denied.
	Methods []string `json:"methods"`
	// NewTargets allows opening and closing targets (tabs).
	NewTargets bool `json:"new_targets,omitempty"`
}

// UpstreamScope scopes forwarding to upstream MCP servers.
type UpstreamScope struct {
	// Servers are the names of upstream servers (as registered with
	// --mcp-servers) the plugin may list and call.
	Servers []string `json:"servers"`
}

// HTTPScope scopes outbound HTTP.
type HTTPScope struct {
	// Hosts are the host names a request (and every redirect it follows)
	// may go to: exact names or patterns where '*' matches any run of
	// characters ("api.github.com", "*.example.com"). Deny by default.
	Hosts []string `json:"hosts"`
}

// Limits a plugin asks for. Zero means the host default.
type Limits struct {
	MemoryMiB      int   `json:"memory_mib,omitempty"`
	TimeoutMs      int64 `json:"timeout_ms,omitempty"`
	MaxResultBytes int64 `json:"max_result_bytes,omitempty"`
	MaxInstances   int   `json:"max_instances,omitempty"`
	// Fuel bounds the instructions one call may execute, on engines that
	// meter fuel (wasmtime); 0 means unmetered.
	Fuel int64 `json:"fuel,omitempty"`
}

// Prompt is an MCP prompt declaration.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Resource is an MCP resource declaration (a fixed URI).
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// ResourceTemplate is an MCP resource template (RFC 6570 URI template;
// aiod matches simple {var} expressions, each standing for one path
// segment or more generally a run of characters without '/').
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}
