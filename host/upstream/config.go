// Package upstream aggregates other MCP servers ("upstreams") into aiod's tool
// catalogue: it parses the EXTRA_MCP_SERVERS / --mcp-servers value, lists each
// upstream's tools under a published name, and forwards calls, passing the
// upstream's answer back unedited. The aggregation rules are in spec/upstream.md.
//
// The package speaks MCP as a client through the official go-sdk client
// (github.com/modelcontextprotocol/go-sdk/mcp), which probes server/discover
// (2026-07-28) and falls back to the initialize handshake; this package adds
// only what that client cannot do (see guard.go and RATIONALE.md).
package upstream

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Server is one registered upstream MCP server, in registration order.
type Server struct {
	// Name is the key of the entry in the JSON object.
	Name string
	// URL is the upstream's Streamable HTTP endpoint (loopback http only).
	URL string
	// Prefix, when not empty, publishes the upstream's tool T as Prefix_T.
	// Without one the upstream's tool names must already start with Name_.
	Prefix string

	// The rest is set only for a server the policy names (FromPolicy).

	// FromPolicy: the server comes from the policy's "upstreams".
	FromPolicy bool
	// Headers are set on every HTTP request to the server (values never
	// logged).
	Headers http.Header
	// RootCAs verify the server's certificate (nil: the system's).
	RootCAs *x509.CertPool
	// Transport is TransportAuto, TransportStreamable or TransportSSE.
	Transport string
	// Tenants that may use the server (nil: every tenant naming it).
	Tenants []string
	// Stdio, when set, is a command server run in the process sandbox
	// (URL is empty).
	Stdio *Stdio
	// Auth, when set, wraps the server's HTTP transport under the origin
	// check: the OAuth bearer token on every request (host/upstream/oauth).
	Auth func(http.RoundTripper) http.RoundTripper
}

// String names the server without its headers (they may hold secrets).
func (s Server) String() string {
	if s.Stdio != nil {
		return fmt.Sprintf("%s (command %s)", s.Name, s.Stdio.Command)
	}
	return fmt.Sprintf("%s (%s)", s.Name, s.URL)
}

// Stdio is a command (stdio) server.
type Stdio struct {
	Command string
	Args    []string
	Env     []string // names of aiod's variables it gets
	Hosts   []string // hosts it may reach (none: no network)
	SHA256  string   // hex pin of the executable ("": none)
	// ReadOnly are more host paths shown read-only.
	ReadOnly []string
}

// Warning is an entry of the value that was skipped (or a field that was
// ignored), with the reason. The caller logs it at start-up.
type Warning struct {
	Server string // the entry's name
	Reason string
}

func (w Warning) String() string { return fmt.Sprintf("MCP server %q: %s", w.Server, w.Reason) }

// knownFields are the entry fields this package understands. "command",
// "args" and "env" describe a stdio server (skipped); "type" names the
// transport of the 1.x hub format.
var knownFields = map[string]bool{"url": true, "prefix": true, "command": true, "args": true, "env": true, "type": true}

// ParseServers parses the EXTRA_MCP_SERVERS / --mcp-servers value:
//
//	{"<name>": {"url": "http://127.0.0.1:PORT/mcp", "prefix": "<prefix>"}, ...}
//
// The servers come back in the order the object is written. An entry that is
// not a loopback http:// URL (a remote host, https, another scheme) or that is
// a stdio server ("command") is skipped with one Warning naming it and the
// reason. An unknown field is ignored with a Warning (the entry is kept). A
// value that is not such an object, a duplicate name, a name or prefix outside
// [A-Za-z0-9_.-], or an entry with neither url nor command is an error whose
// text names the problem; the caller prefixes the variable's name. An empty
// (or all-blank) value registers nothing.
func ParseServers(value string) ([]Server, []Warning, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("want a JSON object {\"<name>\": {\"url\": ..., \"prefix\": ...}}, got %s", describeToken(tok))
	}
	var (
		servers []Server
		warns   []Warning
		seen    = map[string]bool{}
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("not valid JSON: %w", err)
		}
		name, _ := tok.(string)
		if err := checkIdent(name); err != nil {
			return nil, nil, fmt.Errorf("server name %q: %w", name, err)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("server name %q appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("server %q: not valid JSON: %w", name, err)
		}
		s, w, err := parseEntry(name, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("server %q: %w", name, err)
		}
		warns = append(warns, w...)
		if s != nil {
			servers = append(servers, *s)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("trailing data after the JSON object")
	}
	return servers, warns, nil
}

// parseEntry reads one entry's object, field by field in written order.
func parseEntry(name string, raw json.RawMessage) (*Server, []Warning, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, _ := dec.Token() // raw is one valid JSON value
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("want an object {\"url\": ..., \"prefix\": ...}, got %s", describeToken(tok))
	}
	var (
		warns               []Warning
		u, prefix, typ      string
		hasURL, hasCommand  bool
		fieldSeen           = map[string]bool{}
		urlTok, prefixTok   any
		typeTok, commandTok any
	)
	for dec.More() {
		t, _ := dec.Token()
		field := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("field %q: %w", field, err)
		}
		if fieldSeen[field] {
			return nil, nil, fmt.Errorf("field %q appears twice", field)
		}
		fieldSeen[field] = true
		switch field {
		case "url":
			urlTok, hasURL = v, true
		case "prefix":
			prefixTok = v
		case "type":
			typeTok = v
		case "command":
			commandTok, hasCommand = v, true
		}
		if !knownFields[field] {
			warns = append(warns, Warning{name, fmt.Sprintf("unknown field %q ignored", field)})
		}
	}
	if hasURL {
		s, ok := urlTok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("url: want a string, got %s", describeToken(urlTok))
		}
		u = s
	}
	if prefixTok != nil {
		s, ok := prefixTok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("prefix: want a string, got %s", describeToken(prefixTok))
		}
		if s != "" {
			if err := checkIdent(s); err != nil {
				return nil, nil, fmt.Errorf("prefix %q: %w", s, err)
			}
		}
		prefix = s
	}
	if typeTok != nil {
		s, ok := typeTok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("type: want a string, got %s", describeToken(typeTok))
		}
		typ = s
	}
	if hasCommand || typ == "stdio" {
		_ = commandTok
		return nil, append(warns, Warning{name, "command (stdio) servers are not supported: only http:// on 127.0.0.1, localhost or [::1]; skipped"}), nil
	}
	if !hasURL {
		return nil, nil, errors.New("has neither \"url\" nor \"command\"")
	}
	switch typ {
	case "", "http", "streamable-http", "streamableHttp":
	default:
		return nil, append(warns, Warning{name, fmt.Sprintf("type %q is not supported (streamable HTTP only); skipped", typ)}), nil
	}
	if reason := checkURL(u); reason != "" {
		return nil, append(warns, Warning{name, reason + "; skipped"}), nil
	}
	return &Server{Name: name, URL: u, Prefix: prefix}, warns, nil
}

// checkURL returns why u is not accepted, or "".
func checkURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Sprintf("url %q does not parse: %v", u, err)
	}
	host := strings.ToLower(p.Hostname())
	loop := host == "127.0.0.1" || host == "localhost" || host == "::1"
	if loop && strings.Contains(p.Host, ":") && host == "::1" && !strings.HasPrefix(p.Host, "[") {
		loop = false // "::1" must be written [::1]
	}
	switch {
	case p.Scheme == "https" && !loop:
		return fmt.Sprintf("url %q: https to a remote host is not accepted (only http:// on 127.0.0.1, localhost or [::1])", u)
	case p.Scheme == "https":
		return fmt.Sprintf("url %q: https is not accepted (only http:// on 127.0.0.1, localhost or [::1])", u)
	case p.Scheme != "http":
		return fmt.Sprintf("url %q: scheme %q is not accepted (only http:// on 127.0.0.1, localhost or [::1])", u, p.Scheme)
	case p.User != nil:
		return fmt.Sprintf("url %q: credentials in the URL are not accepted", redactUser(p))
	case !loop:
		return fmt.Sprintf("url %q: remote host %q is not accepted (only http:// on 127.0.0.1, localhost or [::1])", u, p.Hostname())
	}
	return ""
}

func redactUser(p *url.URL) string {
	q := *p
	q.User = url.User("…")
	return q.String()
}

// checkIdent accepts 1..64 characters of [A-Za-z0-9_.-]: the characters of an
// MCP tool name, since a name or prefix becomes the start of published names.
func checkIdent(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	if len(s) > 64 {
		return errors.New("longer than 64 characters")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("character %q not allowed (want [A-Za-z0-9_.-])", c)
		}
	}
	return nil
}

func describeToken(t any) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", t)
}
