package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
)

// Headers gives case-insensitive access to a request's HTTP headers; the
// transport adapts its own header type to it.
type Headers interface {
	// Get returns the named header's value, "" when absent.
	Get(name string) string
}

// The base64 sentinel of SEP-2243: =?base64?<standard base64 of UTF-8>?=
const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// decodeHeaderValue trims optional whitespace around a header value and
// decodes the base64 sentinel. ok is false for a value that contains
// characters a header value may not carry, or that uses the sentinel
// without valid padded standard base64 inside.
func decodeHeaderValue(v string) (string, bool) {
	v = strings.Trim(v, " \t")
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return "", false
		}
	}
	if len(v) >= len(b64Prefix)+len(b64Suffix) && strings.HasPrefix(v, b64Prefix) && strings.HasSuffix(v, b64Suffix) {
		b, err := base64.StdEncoding.Strict().DecodeString(v[len(b64Prefix) : len(v)-len(b64Suffix)])
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return v, true
}

// paramHeader is one tool argument mirrored into an Mcp-Param-{Header}
// request header (its property schema has "x-mcp-header": Header).
type paramHeader struct {
	Header string // without the Mcp-Param- prefix
	Arg    string
	Type   string // string, integer or boolean
}

// headerIndex maps tool names to their mirrored arguments, for one
// catalogue generation.
type headerIndex struct {
	gen   uint64
	tools map[string][]paramHeader
}

type headerCache struct{ p atomic.Pointer[headerIndex] }

// forCatalog returns the index of cat, built from its tools/list
// rendering once per generation.
func (c *headerCache) forCatalog(cat *Snapshot) *headerIndex {
	if ix := c.p.Load(); ix != nil && ix.gen == cat.Generation() {
		return ix
	}
	ix := &headerIndex{gen: cat.Generation(), tools: map[string][]paramHeader{}}
	var tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if list := cat.ToolsJSON(); bytes.Contains(list, []byte("x-mcp-header")) {
		_ = json.Unmarshal(list, &tools) // rendered by the catalogue: valid
	}
	for _, t := range tools {
		if hs := xMCPHeaders(t.InputSchema); len(hs) > 0 {
			ix.tools[t.Name] = hs
		}
	}
	c.p.Store(ix)
	return ix
}

// xMCPHeaders reads the x-mcp-header declarations of a tool's input
// schema: only direct properties of the root, only integer, string and
// boolean ones, header names unique case-insensitively (a tool breaking
// these rules gets no header checks; a client would drop it anyway).
func xMCPHeaders(schema json.RawMessage) []paramHeader {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Type   any    `json:"type"`
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []paramHeader
	seen := map[string]bool{}
	for arg, p := range s.Properties {
		if p.Header == "" {
			continue
		}
		typ, _ := p.Type.(string)
		if typ != "string" && typ != "integer" && typ != "boolean" {
			continue
		}
		if !isToken(p.Header) || seen[strings.ToLower(p.Header)] {
			return nil
		}
		seen[strings.ToLower(p.Header)] = true
		out = append(out, paramHeader{Header: p.Header, Arg: arg, Type: typ})
	}
	return out
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkStandardHeaders validates Mcp-Method, Mcp-Name and Mcp-Param-* of
// a modern request against its body (step 7 of the validation order).
func checkStandardHeaders(h Headers, method string, p *params, mirrored []paramHeader) *Error {
	hv, ok := decodeHeaderValue(h.Get("Mcp-Method"))
	if hv == "" {
		return errf(CodeHeaderMismatch, "Header mismatch: missing Mcp-Method header (body method '"+method+"')")
	}
	if !ok || hv != method {
		return errf(CodeHeaderMismatch, "Header mismatch: Mcp-Method header value '"+hv+"' does not match body method '"+method+"'")
	}
	var want *string
	switch method {
	case "tools/call", "prompts/get":
		want = p.Name
	case "resources/read":
		want = p.URI
	case "tasks/get", "tasks/update", "tasks/cancel":
		want = p.TaskID
	}
	if want != nil {
		raw := h.Get("Mcp-Name")
		if raw == "" {
			return errf(CodeHeaderMismatch, "Header mismatch: missing Mcp-Name header (body value '"+*want+"')")
		}
		v, ok := decodeHeaderValue(raw)
		if !ok || v != *want {
			return errf(CodeHeaderMismatch, "Header mismatch: Mcp-Name header value '"+v+"' does not match body value '"+*want+"'")
		}
	}
	if len(mirrored) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if len(p.Arguments) > 0 && json.Unmarshal(p.Arguments, &args) != nil {
		return nil // the tool call itself reports malformed arguments
	}
	for _, m := range mirrored {
		val, present := args[m.Arg]
		if !present || string(val) == "null" {
			continue
		}
		name := "Mcp-Param-" + m.Header
		raw := h.Get(name)
		if raw == "" {
			return errf(CodeHeaderMismatch, "Header mismatch: missing "+name+" header for argument '"+m.Arg+"'")
		}
		v, ok := decodeHeaderValue(raw)
		if !ok {
			return errf(CodeHeaderMismatch, "Header mismatch: "+name+" header value is not valid")
		}
		if !paramMatches(m.Type, v, val) {
			return errf(CodeHeaderMismatch, "Header mismatch: "+name+" header value '"+v+"' does not match argument '"+m.Arg+"'")
		}
	}
	return nil
}

// paramMatches compares a decoded header value with the argument's JSON
// value: strings exactly, integers numerically, booleans as true/false.
func paramMatches(typ, header string, val json.RawMessage) bool {
	switch typ {
	case "string":
		var s string
		return json.Unmarshal(val, &s) == nil && s == header
	case "integer":
		hf, err1 := strconv.ParseFloat(header, 64)
		af, err2 := strconv.ParseFloat(string(val), 64)
		return err1 == nil && err2 == nil && hf == af
	case "boolean":
		return (header == "true" || header == "false") && header == string(bytes.TrimSpace(val))
	}
	return false
}
