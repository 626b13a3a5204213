// Package genschema generates the JSON Schema (draft 2020-12) of the plugin
// manifest, spec/manifest/v1/schema.json, from the Go types of package sdk/abi.
//
// Property names, JSON types and nesting come from the types by reflection.
// What reflection cannot see — descriptions, which fields are required, and
// the constraints caps.ValidateManifest enforces (patterns, enums, ranges)
// — comes from the table in this file, keyed by "Type.jsonName". Generate
// fails when a field has no entry or an entry names no field, so the table
// cannot drift from the types. host/caps tests compare the committed file
// with Generate and the constraints with the ones in caps.
//
// The schema allows null for every optional property: encoding/json treats
// null like an absent field, and the host writes "tools": null for a plugin
// without tools.
package genschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/aiodhq/aiod/sdk/abi"
)

// Patterns shared with caps (host/caps tests check them against caps).
const (
	NamePattern     = `^[a-z0-9][a-z0-9_-]{0,63}$`
	ToolNamePattern = `^[A-Za-z0-9_.-]{1,128}$`
	SHA256Pattern   = `^([0-9a-f]{64})?$`
	// ScopePathPattern: absolute, or a variable alone or followed by '/';
	// no NUL anywhere.
	ScopePathPattern = `^(/|\$(SANDBOX|HOME|TMP|WORKSPACE)(/|$))[^\x00]*$`
	ModulePattern    = `^[^/\\]*$`
	URIPattern       = `^[^ \x00\n]+$`
	CommandPattern   = `^[^\x00\n]+$`
)

// object is a JSON object that keeps its keys in order.
type object []kv

type kv struct {
	k string
	v any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.k)
		if err != nil {
			return nil, err
		}
		v, err := marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal encodes v without HTML escaping ('<', '>' and '&' stay as they are).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func (o object) get(k string) (any, bool) {
	for _, e := range o {
		if e.k == k {
			return e.v, true
		}
	}
	return nil, false
}

// set replaces k's value, or appends k.
func (o object) set(k string, v any) object {
	for i, e := range o {
		if e.k == k {
			o[i].v = v
			return o
		}
	}
	return append(o, kv{k, v})
}

// field is what reflection cannot tell about one property.
type field struct {
	desc     string
	required bool   // must be present and not null
	schema   object // keywords added to (or replacing) the inferred ones
	replace  bool   // schema replaces the inferred schema
}

func ref(def string) object { return object{{"$ref", "#/$defs/" + def}} }

// defs describes each struct type (the manifest itself is the root).
var defs = map[string]string{
	"Manifest":         "An aiod plugin manifest (manifest.json in the plugin's directory), format version 1. See spec/manifest/v1/README.md.",
	"Tool":             "An MCP tool the plugin implements.",
	"ToolAnnotations":  "MCP behaviour hints; clients may show them, the host does not enforce them.",
	"ToolExecution":    "How the tool may be run (MCP's Tool.execution).",
	"Prompt":           "An MCP prompt the plugin implements (prompts/get).",
	"PromptArgument":   "One argument of a prompt.",
	"Resource":         "An MCP resource with a fixed URI (resources/read).",
	"ResourceTemplate": "An MCP resource template: URIs matching it are read through the plugin.",
	"Capabilities":     "Host function families the plugin requests, each with its scope. The plugin is granted the intersection of this and what the operator's policy allows; a family left out is never granted.",
	"FilesScope":       "The files family (aiod:files, spec/abi/v1/files.md): directory trees to read or write.",
	"PathScope":        "One directory tree and its mode.",
	"ProcessScope":     "The process family (aiod:process, spec/abi/v1/process.md): programs to run and where.",
	"StateScope":       "The state family (aiod:state, spec/abi/v1/state.md): a key-value store kept by the host.",
	"CDPScope":         "The cdp family (aiod:cdp, spec/abi/v1/cdp.md): Chrome DevTools Protocol methods to send to the host's browser.",
	"UpstreamScope":    "The upstream family (aiod:upstream, spec/abi/v1/upstream.md): upstream MCP servers to list and call.",
	"HTTPScope":        "The http family (Extism's http_request for form \"extism\", spec/abi/extism.md): host names requests may go to.",
	"Hooks":            "A guard plugin's hooks (ABI v1.1, spec/hooks.md §1): globs ('*' matches any run of characters) over the tool names whose calls it sees before they run and after. At least one glob; a reactor only. The operator's policy switches a guard on.",
	"Limits":           "Per-call limits the plugin asks for. 0 (or absent) means the operator's default; the operator's caps always apply (spec/policy.md).",
}

// fields holds every property of every type, keyed by "Type.jsonName".
var fields = map[string]field{
	"Manifest.name": {desc: "Name of the plugin: 1 to 64 characters, lowercase letters, digits, '-' and '_', starting with a letter or digit. The operator's policy refers to the plugin by this name; two plugins with one name are not both loaded.",
		required: true, schema: object{{"pattern", NamePattern}}},
	"Manifest.version": {desc: "Version of the plugin, free text (semantic versioning recommended)."},
	"Manifest.abi": {desc: "The plugin ABI version the module implements (spec/abi/v1.md). Must be 1.",
		required: true, schema: object{{"const", abi.Version}}},
	"Manifest.form": {desc: "How the module runs: \"reactor\" (a module exporting aiod_call, kept warm in a pool; the default), \"command\" (a WASI command run once per call, JSON on stdin and stdout) or \"extism\" (an unchanged Extism plugin, spec/abi/extism.md). Empty means \"reactor\".",
		schema: object{{"enum", []any{"reactor", "command", "extism", ""}}, {"default", "reactor"}}},
	"Manifest.module": {desc: "File name of the wasm module in the plugin's directory: no '/' or '\\', not \".\" or \"..\". Empty means \"plugin.wasm\".",
		schema: object{{"pattern", ModulePattern}, {"not", object{{"enum", []any{".", ".."}}}}, {"default", "plugin.wasm"}}},
	"Manifest.sha256": {desc: "SHA-256 digest of the module, 64 lowercase hex digits. When set, the host refuses a module with another digest. Empty means not pinned.",
		schema: object{{"pattern", SHA256Pattern}}},
	"Manifest.description":       {desc: "What the plugin does, for people."},
	"Manifest.tools":             {desc: "Tools the plugin provides, in this order in tools/list. Names are unique within the plugin; a name another plugin loaded first already uses is refused."},
	"Manifest.prompts":           {desc: "Prompts the plugin provides. Names are unique within the plugin."},
	"Manifest.resources":         {desc: "Resources with fixed URIs the plugin provides. URIs are unique within the plugin."},
	"Manifest.resourceTemplates": {desc: "Resource templates the plugin provides."},
	"Manifest.capabilities":      {desc: "Host function families the plugin requests. Absent: none (the always-linked aiod:core only)."},
	"Manifest.limits":            {desc: "Per-call limits the plugin asks for. Absent: the operator's defaults."},
	"Manifest.config":            {desc: "Form \"extism\" only: the values the plugin reads with Extism's config_get, by key."},
	"Manifest.hooks":             {desc: "Makes the plugin a guard (spec/hooks.md §1): the tools whose calls it sees. Absent: not a guard."},
	"Hooks.before": {desc: "Globs over the tool names the guard sees before a call (op 5).",
		schema: object{{"items", object{{"type", "string"}, {"pattern", `^[^\x00\n]{1,256}$`}}}}},
	"Hooks.after": {desc: "Globs over the tool names the guard sees after a call (op 6).",
		schema: object{{"items", object{{"type", "string"}, {"pattern", `^[^\x00\n]{1,256}$`}}}}},
	"Manifest.configured": {desc: "ABI v1.1: the plugin's tools come from the operator's configuration (spec/abi/v1.md §2.6). The host loads it only when it holds a configuration for it, runs its configure operation at every load and reload, and publishes the tools that returns; tools may then be empty. Reactor form only."},

	"Tool.name": {desc: "Tool name as clients see it: 1 to 128 letters, digits, '_', '-' and '.'.",
		required: true, schema: object{{"pattern", ToolNamePattern}}},
	"Tool.title":        {desc: "Human-readable title."},
	"Tool.description":  {desc: "What the tool does, for the model and for people."},
	"Tool.inputSchema":  {desc: "JSON Schema of the tool's arguments; an object schema (\"type\": \"object\").", required: true, schema: ref("objectSchema"), replace: true},
	"Tool.outputSchema": {desc: "JSON Schema of the tool's structuredContent, if it returns one; an object schema (\"type\": \"object\").", schema: ref("objectSchema"), replace: true},
	"Tool.annotations":  {desc: "Behaviour hints for clients."},
	"Tool.execution":    {desc: "How the tool may be run. Absent: as a plain call only."},

	"ToolExecution.taskSupport": {desc: "Whether a call may run as a task of the MCP tasks extension: \"optional\" (the host decides), \"required\", or \"forbidden\" (the default; any other value counts as forbidden)."},

	"ToolAnnotations.title":           {desc: "Human-readable title."},
	"ToolAnnotations.readOnlyHint":    {desc: "The tool does not change its environment."},
	"ToolAnnotations.destructiveHint": {desc: "The tool may destroy or overwrite (meaningful when it is not read-only)."},
	"ToolAnnotations.idempotentHint":  {desc: "Calling the tool again with the same arguments has no further effect."},
	"ToolAnnotations.openWorldHint":   {desc: "The tool reaches an open world of external entities (the web, say)."},

	"Prompt.name": {desc: "Prompt name: 1 to 128 letters, digits, '_', '-' and '.'.",
		required: true, schema: object{{"pattern", ToolNamePattern}}},
	"Prompt.title":       {desc: "Human-readable title."},
	"Prompt.description": {desc: "What the prompt is for."},
	"Prompt.arguments":   {desc: "Arguments the prompt takes."},

	"PromptArgument.name":        {desc: "Argument name, not empty.", required: true, schema: object{{"minLength", 1}}},
	"PromptArgument.title":       {desc: "Human-readable title."},
	"PromptArgument.description": {desc: "What the argument means."},
	"PromptArgument.required":    {desc: "The client must supply the argument."},

	"Resource.uri": {desc: "The resource's URI: not empty, no spaces, newlines or NUL. Unique within the plugin.",
		required: true, schema: object{{"pattern", URIPattern}}},
	"Resource.name":        {desc: "Name of the resource, not empty.", required: true, schema: object{{"minLength", 1}}},
	"Resource.title":       {desc: "Human-readable title."},
	"Resource.description": {desc: "What the resource holds."},
	"Resource.mimeType":    {desc: "MIME type of the content."},
	"Resource.size":        {desc: "Size in bytes, if known."},

	"ResourceTemplate.uriTemplate": {desc: "RFC 6570 URI template with at least one {variable}, braces balanced. aiod matches simple {var} expressions, each standing for a run of characters without '/'.",
		required: true, schema: object{{"pattern", `\{`}}},
	"ResourceTemplate.name":        {desc: "Name of the template, not empty.", required: true, schema: object{{"minLength", 1}}},
	"ResourceTemplate.title":       {desc: "Human-readable title."},
	"ResourceTemplate.description": {desc: "What the resources are."},
	"ResourceTemplate.mimeType":    {desc: "MIME type of the content."},

	"Capabilities.files":    {desc: "Read and write files in directory trees."},
	"Capabilities.process":  {desc: "Run programs and keep shell sessions."},
	"Capabilities.state":    {desc: "A key-value store per client, kept between calls."},
	"Capabilities.cdp":      {desc: "Reserved."},
	"Capabilities.upstream": {desc: "Reserved."},
	"Capabilities.http":     {desc: "Send HTTP requests (Extism plugins' http_request)."},

	"FilesScope.paths": {desc: "Directory trees the plugin asks for. Absent or empty: none (the family is not granted)."},
	"PathScope.path":   {desc: "The tree's root.", required: true, schema: ref("scopePath"), replace: true},
	"PathScope.mode": {desc: "\"ro\": read only; \"rw\": read and write.",
		required: true, schema: object{{"enum", []any{string(abi.ReadOnly), string(abi.ReadWrite)}}}},

	"ProcessScope.commands": {desc: "Programs the plugin may run: bare names (looked up on the host's PATH) or absolute paths; \"*\" means any program. At least one.",
		required: true, schema: object{{"minItems", 1}, {"items", object{{"type", "string"}, {"pattern", CommandPattern}}}}},
	"ProcessScope.cwd": {desc: "Directory trees a process may start in. Absent or empty: $SANDBOX.",
		schema: object{{"items", ref("scopePath")}}},
	"ProcessScope.shell": {desc: "Persistent shell sessions kept by the host (shell_exec)."},
	"ProcessScope.tools": {desc: "Spawned programs may call the calling tenant's tools over a channel private to each spawn (spec/code-tools.md)."},

	"StateScope.max_bytes": {desc: "Most bytes (keys plus values) stored per client. The grant takes the smaller of this and the policy's; 1 MiB when neither sets it.",
		schema: object{{"minimum", 0}}},

	"CDPScope.methods": {desc: "CDP methods the plugin may send: exact names (\"Page.navigate\"), patterns where * matches any run of characters (\"Page.*\", \"Input.dispatch*\"), or \"*\". Deny by default; the grant keeps the narrower of each requested and allowed pattern.",
		required: true, schema: object{{"items", object{{"type", "string"}, {"pattern", `^(\*|[A-Za-z][A-Za-z0-9]*\.[A-Za-z0-9*]+)$`}}}}},
	"CDPScope.new_targets": {desc: "May open and close targets (tabs)."},
	"UpstreamScope.servers": {desc: "Names of upstream servers (as registered with --mcp-servers) the plugin may list and call; \"*\" means any.",
		required: true, schema: object{{"items", object{{"type", "string"}, {"minLength", 1}}}}},

	"HTTPScope.hosts": {desc: "Host names requests, and every redirect they follow, may go to: exact names or patterns where * matches any run of characters (\"*.example.com\"). Deny by default; the grant keeps the narrower of each requested and allowed pattern.",
		required: true, schema: object{{"items", object{{"type", "string"}, {"pattern", `^[^\x00\n/:@ ]+$`}}}}},

	"Limits.memory_mib": {desc: "Linear memory per instance, in MiB, at most 4096. Default 256; the operator caps it (1024 by default).",
		schema: object{{"minimum", 0}, {"maximum", 4096}}},
	"Limits.timeout_ms": {desc: "Wall-clock deadline of one call, in milliseconds. Default 30000; the operator caps it (600000 by default).",
		schema: object{{"minimum", 0}}},
	"Limits.max_result_bytes": {desc: "Largest result of one call, in bytes. Default 16777216 (16 MiB); the operator caps it (64 MiB by default).",
		schema: object{{"minimum", 0}}},
	"Limits.fuel": {desc: "Instructions one call may execute, on engines that meter fuel (wasmtime); wazero does not meter and applies only the deadline. 0 or absent: the operator's default_fuel (unmetered unless set); the operator's max_fuel caps it.",
		schema: object{{"minimum", 0}}},
	"Limits.max_instances": {desc: "Instances per client, so calls running at once. Default and cap 16, or the operator's max_instances.",
		schema: object{{"minimum", 0}}},
}

// extraDefs are definitions that are not Go types.
var extraDefs = []kv{
	{"scopePath", object{
		{"description", "A directory tree: an absolute path, or $SANDBOX, $HOME, $TMP or $WORKSPACE alone or followed by /sub/dirs. $SANDBOX is the workspace when the host has one, else the temporary directory and the home directory; $WORKSPACE is nothing without a workspace. No NUL."},
		{"type", "string"},
		{"pattern", ScopePathPattern},
		{"examples", []any{"$SANDBOX", "$HOME/.cache/myplugin", "$WORKSPACE/src", "/srv/data"}},
	}},
	{"objectSchema", object{
		{"description", "A JSON Schema for an object: a JSON object whose \"type\" is \"object\"."},
		{"type", "object"},
		{"required", []string{"type"}},
		{"properties", object{{"type", object{{"const", "object"}}}}},
	}},
}

// surfaces are the lists of which a manifest must have at least one
// non-empty.
var surfaces = []string{"tools", "prompts", "resources", "resourceTemplates"}

var rawMessage = reflect.TypeFor[json.RawMessage]()

type generator struct {
	queue []reflect.Type
	seen  map[reflect.Type]bool
	used  map[string]bool
}

// Schema returns the manifest schema as an ordered JSON object.
func Schema() (object, error) {
	g := &generator{seen: map[reflect.Type]bool{}, used: map[string]bool{}}
	root, err := g.structSchema(reflect.TypeFor[abi.Manifest]())
	if err != nil {
		return nil, err
	}
	var anyOf []any
	for _, s := range surfaces {
		anyOf = append(anyOf, object{
			{"required", []string{s}},
			{"properties", object{{s, object{{"type", "array"}, {"minItems", 1}}}}},
		})
	}
	root = append(object{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"title", fmt.Sprintf("aiod plugin manifest, version %d", abi.ManifestVersion)},
	}, root...)
	// a configured plugin (ABI v1.1) may declare nothing: its tools come
	// from its configuration; it is a reactor
	anyOf = append(anyOf, object{
		{"required", []string{"configured"}},
		{"properties", object{{"configured", object{{"const", true}}}}},
	})
	root = root.set("anyOf", anyOf)
	root = root.set("if", object{{"required", []string{"configured"}}, {"properties", object{{"configured", object{{"const", true}}}}}})
	root = root.set("then", object{{"properties", object{{"form", object{{"enum", []any{"reactor", "", nil}}}}}}})
	var ds object
	for len(g.queue) > 0 {
		t := g.queue[0]
		g.queue = g.queue[1:]
		s, err := g.structSchema(t)
		if err != nil {
			return nil, err
		}
		ds = append(ds, kv{t.Name(), s})
	}
	ds = append(ds, extraDefs...)
	root = root.set("$defs", ds)
	var unused []string
	for k := range fields {
		if !g.used[k] {
			unused = append(unused, k)
		}
	}
	for k := range defs {
		if !g.used[k] {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		return nil, fmt.Errorf("genschema: table entries name no field or type of abi.Manifest: %s", strings.Join(unused, ", "))
	}
	return root, nil
}

// Generate returns schema.json: the schema indented by two spaces, arrays
// of scalars on one line, with a final newline.
func Generate() ([]byte, error) {
	s, err := Schema()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := pretty(&b, s, ""); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func pretty(b *bytes.Buffer, v any, indent string) error {
	inner := indent + "  "
	switch x := v.(type) {
	case object:
		if len(x) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{\n")
		for i, e := range x {
			k, err := marshal(e.k)
			if err != nil {
				return err
			}
			b.WriteString(inner)
			b.Write(k)
			b.WriteString(": ")
			if err := pretty(b, e.v, inner); err != nil {
				return err
			}
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []string:
		return pretty(b, toAny(x), indent)
	case []any:
		scalars := true
		for _, e := range x {
			switch e.(type) {
			case object, []any, []string:
				scalars = false
			}
		}
		if scalars {
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteString(", ")
				}
				if err := pretty(b, e, inner); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			return nil
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(inner)
			if err := pretty(b, e, inner); err != nil {
				return err
			}
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		j, err := marshal(x)
		if err != nil {
			return err
		}
		b.Write(j)
	}
	return nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

// jsonName is the property name of a struct field ("" if it has none).
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

func (g *generator) structSchema(t reflect.Type) (object, error) {
	desc, ok := defs[t.Name()]
	if !ok {
		return nil, fmt.Errorf("genschema: no description for type %s", t.Name())
	}
	g.used[t.Name()] = true
	var props object
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, fmt.Errorf("genschema: %s: embedded fields are not supported", t.Name())
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		key := t.Name() + "." + name
		fd, ok := fields[key]
		if !ok {
			return nil, fmt.Errorf("genschema: no table entry for %s (field %s)", key, f.Name)
		}
		g.used[key] = true
		var s object
		if fd.replace {
			s = slices.Clone(fd.schema)
		} else {
			inferred, err := g.typeSchema(f.Type, key)
			if err != nil {
				return nil, err
			}
			s = inferred
			for _, e := range fd.schema {
				s = s.set(e.k, e.v)
			}
		}
		if fd.required {
			required = append(required, name)
		} else {
			s = nullable(s)
		}
		props = append(props, kv{name, append(object{{"description", fd.desc}}, s...)})
	}
	out := object{{"description", desc}, {"type", "object"}}
	if len(required) > 0 {
		out = append(out, kv{"required", required})
	}
	return append(out, kv{"properties", props}, kv{"additionalProperties", false}), nil
}

func (g *generator) typeSchema(t reflect.Type, key string) (object, error) {
	if t == rawMessage {
		return nil, fmt.Errorf("genschema: %s is raw JSON: give its schema in the table (replace)", key)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typeSchema(t.Elem(), key)
	case reflect.String:
		return object{{"type", "string"}}, nil
	case reflect.Bool:
		return object{{"type", "boolean"}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return object{{"type", "integer"}}, nil
	case reflect.Slice:
		items, err := g.typeSchema(t.Elem(), key)
		if err != nil {
			return nil, err
		}
		return object{{"type", "array"}, {"items", items}}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		vals, err := g.typeSchema(t.Elem(), key)
		if err != nil {
			return nil, err
		}
		return object{{"type", "object"}, {"additionalProperties", vals}}, nil
	case reflect.Struct:
		if !g.seen[t] {
			g.seen[t] = true
			g.queue = append(g.queue, t)
		}
		return ref(t.Name()), nil
	}
	return nil, fmt.Errorf("genschema: %s: unsupported type %s", key, t)
}

// nullable lets s also be null (an optional field: null means absent).
func nullable(s object) object {
	if r, ok := s.get("$ref"); ok {
		var rest object
		for _, e := range s {
			if e.k != "$ref" {
				rest = append(rest, e)
			}
		}
		return append(object{{"anyOf", []any{object{{"$ref", r}}, object{{"type", "null"}}}}}, rest...)
	}
	if t, ok := s.get("type"); ok {
		s = s.set("type", []any{t, "null"})
	}
	if e, ok := s.get("enum"); ok {
		s = s.set("enum", append(slices.Clone(e.([]any)), nil))
	}
	return s
}
