package aoi

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Tool is what discovery describes: a tool and its commands.
type Tool struct {
	Meta
	Commands []Command
}

// Command is one command of a tool, as capabilities lists it and schema
// describes its events.
type Command struct {
	Name        string // its words: "plugin inspect"
	Title       string
	Description string

	ReadOnly, Destructive, Bounded, SupportsCursor, RequiresConfirm, SupportsDryRun, SupportsIdempotencyKey bool

	Flags    []Arg
	Operands []Arg
	// Events are the command's domain events; the standard's meta,
	// summary, error and warning are always allowed.
	Events []Event
}

// Arg is a flag or an operand.
type Arg struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // string, integer, boolean, array
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Enum        []any  `json:"enum,omitempty"`
	Default     any    `json:"default,omitempty"`
	Repeatable  bool   `json:"repeatable,omitempty"`
}

// Event is a domain event type and the JSON Schema of its members (a
// property name to its schema; Required lists those always present).
type Event struct {
	Type        string
	Description string
	Required    []string
	Properties  map[string]any
}

// standard are the standard events' schemas, members besides "type".
var standard = []Event{
	{Type: TypeMeta, Required: []string{"tool", "tool_version", "aoi_version", "schema_name", "schema_version", "command"},
		Properties: map[string]any{"tool": str, "tool_version": str, "aoi_version": str, "schema_name": str, "schema_version": str, "command": str}},
	{Type: TypeSummary, Required: []string{"ok", "count", "truncated"},
		Properties: map[string]any{"ok": boolean, "count": integer, "truncated": boolean, "next_cursor": map[string]any{"type": []string{"string", "null"}}}},
	{Type: TypeError, Required: []string{"scope", "category", "code", "message", "retryable"},
		Properties: map[string]any{"scope": map[string]any{"enum": []string{"process", "item"}},
			"category": map[string]any{"enum": []string{CategoryUsage, CategoryNotFound, CategoryValidation, CategoryAuthz, CategoryConflict, CategoryUnavailable, CategoryInternal}},
			"code":     str, "message": str, "hint": str, "retryable": boolean}},
	{Type: TypeWarning, Required: []string{"code", "message"}, Properties: map[string]any{"code": str, "message": str}},
	{Type: TypeCheck, Required: []string{"name", "ok"}, Properties: map[string]any{"name": str, "ok": boolean, "detail": str}},
}

// Property schemas for Event.Properties.
var (
	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "integer"}
	boolean = map[string]any{"type": "boolean"}
)

// Schemas of common members, for commands' Event.Properties.
var (
	String  any = str
	Integer any = integer
	Boolean any = boolean
	Object  any = map[string]any{"type": "object"}
	Array   any = map[string]any{"type": "array"}
	Strings any = map[string]any{"type": "array", "items": str}
)

// Find returns the command named name.
func (t *Tool) Find(name string) (*Command, bool) {
	for i := range t.Commands {
		if t.Commands[i].Name == name {
			return &t.Commands[i], true
		}
	}
	return nil, false
}

// EventTypes are the types c's stream may hold.
func (c *Command) EventTypes() []string {
	var out []string
	for _, e := range standard {
		out = append(out, e.Type)
	}
	for _, e := range c.Events {
		out = append(out, e.Type)
	}
	return out
}

// Capabilities writes t's capabilities document: one JSON object.
func (t *Tool) Capabilities(w io.Writer) error {
	type cmd struct {
		Name                   string   `json:"name"`
		Title                  string   `json:"title,omitempty"`
		Description            string   `json:"description,omitempty"`
		ReadOnly               bool     `json:"read_only"`
		Destructive            bool     `json:"destructive"`
		Bounded                bool     `json:"bounded"`
		SupportsCursor         bool     `json:"supports_cursor"`
		RequiresConfirm        bool     `json:"requires_confirm"`
		SupportsDryRun         bool     `json:"supports_dry_run"`
		SupportsIdempotencyKey bool     `json:"supports_idempotency_key"`
		EventTypes             []string `json:"event_types"`
		Flags                  []Arg    `json:"flags"`
		Operands               []Arg    `json:"operands"`
	}
	doc := struct {
		Tool        string   `json:"tool"`
		ToolVersion string   `json:"tool_version"`
		AOIVersions []string `json:"aoi_versions"`
		Schemas     []any    `json:"schemas"`
		Commands    []cmd    `json:"commands"`
	}{Tool: t.Tool, ToolVersion: t.ToolVersion, AOIVersions: []string{Version},
		Schemas: []any{map[string]any{"name": t.SchemaName, "versions": []string{t.SchemaVersion}, "default": t.SchemaVersion}}}
	for _, c := range t.Commands {
		doc.Commands = append(doc.Commands, cmd{Name: c.Name, Title: c.Title, Description: c.Description,
			ReadOnly: c.ReadOnly, Destructive: c.Destructive, Bounded: c.Bounded, SupportsCursor: c.SupportsCursor,
			RequiresConfirm: c.RequiresConfirm, SupportsDryRun: c.SupportsDryRun, SupportsIdempotencyKey: c.SupportsIdempotencyKey,
			EventTypes: c.EventTypes(), Flags: nonNil(c.Flags), Operands: nonNil(c.Operands)})
	}
	return json.NewEncoder(w).Encode(doc)
}

func nonNil(a []Arg) []Arg {
	if a == nil {
		return []Arg{}
	}
	return a
}

// Schema is the JSON Schema (draft 2020-12) of c's events: the type's
// enum, and for each type the members it requires and their schemas.
func (t *Tool) Schema(c *Command) map[string]any {
	types := c.EventTypes()
	var branches []any
	for _, e := range slices.Concat(standard, c.Events) {
		then := map[string]any{"properties": e.Properties}
		if len(e.Required) > 0 {
			then["required"] = e.Required
		}
		branches = append(branches, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": e.Type}}, "required": []string{"type"}},
			"then": then,
		})
	}
	desc := c.Description
	return map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "urn:" + t.Tool + ":events:" + strings.ReplaceAll(c.Name, " ", "-"),
		"title":       t.Tool + " " + c.Name + " event",
		"description": desc,
		"command":     c.Name,
		"type":        "object",
		"required":    []string{"type"},
		"properties":  map[string]any{"type": map[string]any{"enum": types}},
		"allOf":       branches,
	}
}

// Discover answers `capabilities --output json` and `schema --output json
// --command NAME` (args are those after the word capabilities or schema).
// It returns the exit code; errors are one line on errOut (discovery
// writes one JSON object on stdout or nothing).
func (t *Tool) Discover(word string, args []string, out, errOut io.Writer) int {
	output, command := "json", ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "output" && name != "command") || (word == "capabilities" && name == "command") {
			fmt.Fprintf(errOut, "%s: unexpected argument %q\n", word, a)
			return ExitUsage
		}
		if !hasVal {
			if i+1 >= len(args) {
				fmt.Fprintf(errOut, "%s: --%s needs a value\n", word, name)
				return ExitUsage
			}
			i++
			val = args[i]
		}
		if name == "output" {
			output = val
		} else {
			command = val
		}
	}
	if output != "json" {
		fmt.Fprintf(errOut, "%s: --output %q: discovery writes json only\n", word, output)
		return ExitUsage
	}
	if word == "capabilities" {
		if err := t.Capabilities(out); err != nil {
			return ExitFailure
		}
		return ExitOK
	}
	if command == "" {
		fmt.Fprintf(errOut, "schema: --command NAME is required (one of: %s)\n", strings.Join(t.names(), ", "))
		return ExitUsage
	}
	c, ok := t.Find(command)
	if !ok {
		fmt.Fprintf(errOut, "schema: no command %q (one of: %s)\n", command, strings.Join(t.names(), ", "))
		return ExitUsage
	}
	if err := json.NewEncoder(out).Encode(t.Schema(c)); err != nil {
		return ExitFailure
	}
	return ExitOK
}

func (t *Tool) names() []string {
	var n []string
	for _, c := range t.Commands {
		n = append(n, c.Name)
	}
	return n
}

// Output returns the value of the last --output (--output V, --output=V,
// -output ...) among args before "--", and whether there is one.
func Output(args []string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, v, hasVal := strings.Cut(a, "=")
		if name != "--output" && name != "-output" {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				break
			}
			i++
			v = args[i]
		}
		val, found = v, true
	}
	return val, found
}
