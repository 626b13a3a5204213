package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The tool's schemas (spec/machine-mode.md §3): the inputSchema from the
// command's flags and operands and what it supports; the outputSchema of
// the collected result, whose events are described by the command's own
// event schema.

// spec is one flag or operand as discovery describes it.
type spec struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Required    bool            `json:"required"`
	Enum        []any           `json:"enum"`
	Default     json.RawMessage `json:"default"`
	Repeatable  bool            `json:"repeatable"`
	Variadic    bool            `json:"variadic"`
	Items       *struct {
		Type string `json:"type"`
	} `json:"items"`
}

// argNameRE is a flag's or an operand's name.
var argNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// adapterFlags are the flags the adapter itself passes (spec/machine-mode.md
// §4): a command that declares one does not get it as a plain argument.
var adapterFlags = map[string]bool{"output": true, "cursor": true, "confirm": true, "yes": true, "dry-run": true, "idempotency-key": true}

// jsonType maps a discovery type onto a JSON Schema type.
func jsonType(t string) (string, bool) {
	switch strings.ToLower(t) {
	case "", "string", "str", "path", "text":
		return "string", true
	case "integer", "int":
		return "integer", true
	case "number", "float", "double":
		return "number", true
	case "boolean", "bool", "flag":
		return "boolean", true
	case "array", "list":
		return "array", true
	}
	return "", false
}

// parseSpecs reads flags or operands: an array of objects, or an object of
// name -> object.
func parseSpecs(raw json.RawMessage) ([]spec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []spec
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		return list, nil
	}
	var byName map[string]spec
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, err
	}
	// an object's order is not kept: flags have none that matters
	for n, s := range byName {
		s.Name = n
		list = append(list, s)
	}
	sortSpecs(list)
	return list, nil
}

func sortSpecs(l []spec) {
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j].Name < l[j-1].Name; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
}

// property is the JSON Schema of one argument.
func property(s spec, typ, items string) map[string]any {
	p := map[string]any{"type": typ}
	if s.Description != "" {
		p["description"] = s.Description
	}
	if len(s.Enum) > 0 {
		if typ == "array" {
			p["items"] = map[string]any{"type": items, "enum": s.Enum}
		} else {
			p["enum"] = s.Enum
		}
	}
	if len(s.Default) > 0 && json.Valid(s.Default) {
		p["default"] = json.RawMessage(s.Default)
	}
	if typ == "array" && p["items"] == nil {
		p["items"] = map[string]any{"type": items}
	}
	return p
}

// inputSchema makes the tool's inputSchema and fills b's flags, operands
// and added arguments.
func inputSchema(b *Binding, c Command, flagsRaw, opsRaw json.RawMessage) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	add := func(prop, what string, p map[string]any, req bool) error {
		if _, dup := props[prop]; dup {
			return fmt.Errorf("%s: argument %s is named twice", what, prop)
		}
		props[prop] = p
		if req {
			required = append(required, prop)
		}
		return nil
	}
	flags, err := parseSpecs(flagsRaw)
	if err != nil {
		return nil, fmt.Errorf("flags: %v", err)
	}
	for _, f := range flags {
		if !argNameRE.MatchString(f.Name) {
			return nil, fmt.Errorf("flag %q is not a flag name", f.Name)
		}
		if adapterFlags[f.Name] {
			continue // the adapter passes it itself
		}
		typ, ok := jsonType(f.Type)
		if !ok {
			return nil, fmt.Errorf("flag %s: type %q is not string, integer, number, boolean or array", f.Name, f.Type)
		}
		items := ""
		if typ != "array" && f.Repeatable {
			items, typ = typ, "array"
		} else if typ == "array" {
			items = "string"
			if f.Items != nil {
				if items, ok = jsonType(f.Items.Type); !ok || items == "array" {
					return nil, fmt.Errorf("flag %s: items type %q", f.Name, f.Items.Type)
				}
			}
		}
		prop := strings.ReplaceAll(f.Name, "-", "_")
		if err := add(prop, "flag "+f.Name, property(f, typ, items), f.Required); err != nil {
			return nil, err
		}
		b.Flags = append(b.Flags, Flag{Prop: prop, Name: f.Name, Type: typ, Items: items})
	}
	ops, err := parseSpecs(opsRaw)
	if err != nil {
		return nil, fmt.Errorf("operands: %v", err)
	}
	for i, o := range ops {
		if !argNameRE.MatchString(o.Name) {
			return nil, fmt.Errorf("operand %q is not an operand name", o.Name)
		}
		typ, ok := jsonType(o.Type)
		if !ok || typ == "boolean" {
			return nil, fmt.Errorf("operand %s: type %q is not string, integer, number or array", o.Name, o.Type)
		}
		items := ""
		if o.Variadic || typ == "array" {
			if i != len(ops)-1 {
				return nil, fmt.Errorf("operand %s takes the rest, and is not the last", o.Name)
			}
			if typ == "array" {
				typ = "string"
				if o.Items != nil {
					if typ, ok = jsonType(o.Items.Type); !ok || typ == "array" || typ == "boolean" {
						return nil, fmt.Errorf("operand %s: items type %q", o.Name, o.Items.Type)
					}
				}
			}
			items, typ = typ, "array"
			o.Variadic = true
		}
		prop := strings.ReplaceAll(o.Name, "-", "_")
		if err := add(prop, "operand "+o.Name, property(o, typ, items), o.Required); err != nil {
			return nil, err
		}
		b.Operands = append(b.Operands, Operand{Prop: prop, Type: typ, Items: items, Variadic: o.Variadic})
	}
	// what the command supports, as arguments the adapter turns into its
	// flags
	if c.Bounded && props["limit"] == nil {
		b.Limit = true
		if err := add("limit", "bounded", map[string]any{"type": "integer", "minimum": 1,
			"description": "The most events to return (--limit); the summary says when more exist."}, false); err != nil {
			return nil, err
		}
	}
	if b.Cursor {
		if err := add("cursor", "supports_cursor", map[string]any{"type": "string",
			"description": "The next_cursor of the previous call's summary (truncated: true): fetches the next page (--cursor)."}, false); err != nil {
			return nil, err
		}
	}
	if b.DryRun {
		if err := add("dry_run", "supports_dry_run", map[string]any{"type": "boolean",
			"description": "Say what would be done without doing it (--dry-run); no confirmation is asked."}, false); err != nil {
			return nil, err
		}
	}
	if b.IdempotencyKey {
		if err := add("idempotency_key", "supports_idempotency_key", map[string]any{"type": "string",
			"description": "A key naming this operation (--idempotency-key): a repeated call with the same key does not do it twice."}, false); err != nil {
			return nil, err
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// The parts of the outputSchema the adapter defines: the summary and the
// error that failed a call (the tool's aoi:error event, or one the adapter
// made, "source": "aiod").
var (
	summaryDef = json.RawMessage(`{"type":"object","description":"The command's terminal summary (aoi:summary) as it wrote it; null when the stream ended without one.",` +
		`"properties":{"type":{"type":"string"},"ok":{"type":"boolean"},"truncated":{"type":"boolean"},"next_cursor":{"type":["string","null"]}}}`)
	errorDef = json.RawMessage(`{"type":"object","description":"Why the call failed: the command's aoi:error event of process scope (or its last error when the summary says ok: false), or one aiod made (source: aiod) when the stream broke the standard, ran out of time or output, or did not run.",` +
		`"properties":{"type":{"type":"string"},"scope":{"type":"string"},"category":{"type":"string"},"code":{"type":"string"},"message":{"type":"string"},` +
		`"retryable":{"type":"boolean"},"hint":{"type":"string"},"source":{"type":"string","enum":["aiod"]}}}`)
)

// outputSchema is the schema of the collected result of one command: its
// events (each one of the command's events, as its schema describes them),
// its summary and the error that failed it.
func outputSchema(tool, command string, schemaDoc []byte) (map[string]any, error) {
	var ev map[string]any
	if err := json.Unmarshal(schemaDoc, &ev); err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	delete(ev, "$schema")
	delete(ev, "$id")
	// its own references now point into $defs/event
	rebase(ev)
	return map[string]any{
		"type":        "object",
		"description": fmt.Sprintf("What `%s %s` wrote in Machine Mode: its events and its summary.", tool, command),
		"properties": map[string]any{
			"events": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/event"},
				"description": "The events of the stream in order (domain events, warnings, errors, checks, plans): not the meta event, the summary, progress or heartbeats."},
			"summary": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/summary"}, map[string]any{"type": "null"}}},
			"error":   map[string]any{"$ref": "#/$defs/error"},
		},
		"required":             []any{"events", "summary"},
		"additionalProperties": false,
		"$defs":                map[string]any{"event": ev, "summary": summaryDef, "error": errorDef},
	}, nil
}

// rebase rewrites the document-local references of the event schema
// ("#..."), which now sits at #/$defs/event.
func rebase(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "$ref" || k == "$dynamicRef") && strings.HasPrefix(s, "#") {
				if s == "#" || strings.HasPrefix(s, "#/") {
					x[k] = "#/$defs/event" + strings.TrimPrefix(s, "#")
				}
				continue
			}
			rebase(e)
		}
	case []any:
		for _, e := range x {
			rebase(e)
		}
	}
}
