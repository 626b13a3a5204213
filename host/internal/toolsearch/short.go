package toolsearch

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// shortDef is a pinned tool's definition as tool search lists it by default
// (spec/protocol.md, "Tool search": the short form): its name, title,
// the first sentence of its description, its input schema with every
// description in it cut to its first sentence (at most propMax bytes), its
// annotations (less a title the tool's own title repeats and the hints that
// say their default) and its execution; no output schema,
// no icons, no _meta. aiod_tool_describe gives the whole definition. A
// definition that does not decode as a tool object is returned as it is.
func shortDef(def json.RawMessage) json.RawMessage {
	var d struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations json.RawMessage `json:"annotations"`
		Execution   json.RawMessage `json:"execution"`
	}
	if json.Unmarshal(def, &d) != nil || d.Name == "" {
		return def
	}
	var schema any
	if len(d.InputSchema) > 0 {
		dec := json.NewDecoder(bytes.NewReader(d.InputSchema))
		dec.UseNumber() // numbers (minimum, default, …) exactly as given
		if dec.Decode(&schema) != nil {
			return def
		}
		schema = shortSchema(schema)
	}
	var ann map[string]any
	if len(d.Annotations) > 0 && string(d.Annotations) != "null" {
		dec := json.NewDecoder(bytes.NewReader(d.Annotations))
		dec.UseNumber()
		if dec.Decode(&ann) != nil {
			return def
		}
		if t, _ := ann["title"].(string); t != "" {
			if d.Title == "" {
				d.Title = t
			}
			if t == d.Title {
				delete(ann, "title")
			}
		}
		for k, v := range hintDefaults {
			if b, ok := ann[k].(bool); ok && b == v {
				delete(ann, k)
			}
		}
	}
	out := struct {
		Name        string          `json:"name"`
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description,omitempty"`
		InputSchema any             `json:"inputSchema,omitempty"`
		Annotations map[string]any  `json:"annotations,omitempty"`
		Execution   json.RawMessage `json:"execution,omitempty"`
	}{d.Name, d.Title, firstSentence(d.Description), schema, ann, d.Execution}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(out) != nil {
		return def
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// hintDefaults are the tool annotations' hints as MCP defines them when
// absent: a short definition leaves out a hint that says its default.
var hintDefaults = map[string]bool{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}

// shortSchema cuts every "description" string in a JSON schema (decoded)
// to its first sentence, keeping everything else.
func shortSchema(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "description" {
				x[k] = clip(firstSentence(s), propMax)
				continue
			}
			x[k] = shortSchema(e)
		}
	case []any:
		for i, e := range x {
			x[i] = shortSchema(e)
		}
	}
	return v
}

// propMax bounds a description inside a short definition's input schema.
const propMax = 100

// clip cuts s to at most n bytes at a word boundary, marking the cut with
// "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(s[:cut], ' '); i > n/2 {
		cut = i
	}
	return strings.TrimRight(s[:cut], " ,;:.(") + "…"
}

// firstSentence is the first sentence of the first line of s: up to a '.',
// '!' or '?' followed by a space and a capital letter ("e.g. ['.py']" does
// not end one), or the whole line, at most lineMax bytes (firstLine).
func firstSentence(s string) string {
	s = firstLine(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		if j >= len(s) || s[j] != ' ' {
			continue
		}
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if r, _ := utf8.DecodeRuneInString(s[j:]); unicode.IsUpper(r) {
			return strings.TrimSpace(s[:i+1])
		}
	}
	return s
}
