package caps

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// The policy's "upstreams" object: upstream MCP servers the operator opts
// into beyond what EXTRA_MCP_SERVERS accepts (spec/upstream.md, "Servers the
// policy names"). Pure data and validation; host/upstream runs them.

// UpstreamServer is one entry of the policy's "upstreams" object.
type UpstreamServer struct {
	// Name is the entry's key (not a JSON member).
	Name string `json:"-"`
	// URL is an https:// URL (any host) or an http:// URL on loopback.
	// Exactly one of URL and Command is set.
	URL string `json:"url,omitempty"`
	// Prefix publishes the server's tool T as Prefix_T ("": none).
	Prefix string `json:"prefix,omitempty"`
	// Headers are sent with every HTTP request to the server; "${VAR}" in
	// a value is replaced by aiod's environment variable VAR at start.
	Headers map[string]string `json:"headers,omitempty"`
	// CAFile is a PEM file of the certificate authorities that verify the
	// server's certificate, instead of the system's (https only).
	CAFile string `json:"ca_file,omitempty"`
	// Transport: "" (discover: Streamable HTTP, else the 2024-11-05
	// HTTP+SSE transport), "streamable-http" or "sse".
	Transport string `json:"transport,omitempty"`
	// Tenants are the tenants that may use the server (each must also name
	// it in its own "upstreams"); "*" or absent: every tenant that names
	// it.
	Tenants []string `json:"tenants,omitempty"`
	// Command and Args start a stdio server in the process sandbox.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env names aiod's environment variables the command gets (their
	// values are aiod's); nothing else is passed but PATH and HOME.
	Env []string `json:"env,omitempty"`
	// Hosts the command may reach ("host" or "host:port"); empty: no
	// network at all.
	Hosts []string `json:"hosts,omitempty"`
	// SHA256 pins the command's executable (hex); lockdown runs only
	// pinned commands.
	SHA256 string `json:"sha256,omitempty"`
	// ReadOnly are more host paths the command sees read-only at the same
	// place (where its package lives), besides the machine's programs.
	ReadOnly []string `json:"read_only,omitempty"`
	// OAuth, when set, gets the server's bearer token by OAuth 2.1.
	OAuth *UpstreamOAuth `json:"oauth,omitempty"`
}

// Stdio reports whether the entry is a command (stdio) server.
func (s UpstreamServer) Stdio() bool { return s.Command != "" }

// UpstreamTenantAllowed reports whether the entry lets tenant use it.
func (s UpstreamServer) UpstreamTenantAllowed(tenant string) bool {
	if len(s.Tenants) == 0 {
		return true
	}
	for _, t := range s.Tenants {
		if t == "*" || t == tenant {
			return true
		}
	}
	return false
}

// reservedHeaders are the headers the transports set themselves.
var reservedHeaders = map[string]bool{
	"accept": true, "content-type": true, "content-length": true, "host": true, "connection": true,
	"transfer-encoding": true, "last-event-id": true, "te": true, "upgrade": true,
}

// ParseUpstreams decodes the policy's "upstreams" object strictly, keeping
// the order the entries are written in, and validates each entry. tenants
// are the policy's tenant names (an entry's "tenants" must name them).
func ParseUpstreams(raw json.RawMessage, tenants map[string]Tenant) ([]UpstreamServer, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("upstreams: %w", err)
	}
	if tok != json.Delim('{') {
		return nil, errors.New("upstreams: want an object of server name -> server")
	}
	var out []UpstreamServer
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("upstreams: %w", err)
		}
		name := tok.(string)
		var entry json.RawMessage
		if err := dec.Decode(&entry); err != nil {
			return nil, fmt.Errorf("upstreams: server %q: %w", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("upstreams: server %q appears twice", name)
		}
		seen[name] = true
		if err := checkUpstreamIdent(name); err != nil {
			return nil, fmt.Errorf("upstreams: server name %q: %w", name, err)
		}
		var s UpstreamServer
		if err := StrictUnmarshal(entry, &s); err != nil {
			return nil, fmt.Errorf("upstreams: server %q: %w", name, err)
		}
		s.Name = name
		if err := validateUpstream(s, tenants); err != nil {
			return nil, fmt.Errorf("upstreams: server %q: %w", name, err)
		}
		out = append(out, s)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("upstreams: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("upstreams: trailing data")
	}
	return out, nil
}

func validateUpstream(s UpstreamServer, tenants map[string]Tenant) error {
	if s.Prefix != "" {
		if err := checkUpstreamIdent(s.Prefix); err != nil {
			return fmt.Errorf("prefix %q: %w", s.Prefix, err)
		}
	}
	for _, t := range s.Tenants {
		if t == "*" {
			continue
		}
		if _, ok := tenants[t]; !ok {
			return fmt.Errorf("tenants: %q is not a tenant of the policy", t)
		}
	}
	for name, v := range s.Headers {
		if err := checkHeader(name, v); err != nil {
			return err
		}
	}
	switch {
	case s.URL == "" && s.Command == "":
		return errors.New(`has neither "url" nor "command"`)
	case s.URL != "" && s.Command != "":
		return errors.New(`has both "url" and "command"`)
	case s.URL != "":
		if s.OAuth != nil {
			if err := s.OAuth.validate(); err != nil {
				return fmt.Errorf("oauth: %w", err)
			}
			for name := range s.Headers {
				if strings.EqualFold(name, "Authorization") {
					return errors.New(`"oauth" sets the Authorization header: remove it from "headers"`)
				}
			}
		}
		if len(s.Args) > 0 || len(s.Env) > 0 || len(s.Hosts) > 0 || s.SHA256 != "" || len(s.ReadOnly) > 0 {
			return errors.New(`"args", "env", "hosts", "read_only" and "sha256" are for command servers only`)
		}
		return checkUpstreamURL(s)
	}
	// a command server
	if len(s.Headers) > 0 || s.CAFile != "" || s.Transport != "" || s.OAuth != nil {
		return errors.New(`"headers", "ca_file", "transport" and "oauth" are for url servers only`)
	}
	if strings.ContainsRune(s.Command, 0) || strings.TrimSpace(s.Command) != s.Command {
		return fmt.Errorf("command %q: not a program name or path", s.Command)
	}
	for _, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			return errors.New("args: an argument contains a NUL byte")
		}
	}
	for _, e := range s.Env {
		if !envName(e) {
			return fmt.Errorf("env: %q is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", e)
		}
	}
	for _, p := range s.ReadOnly {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return fmt.Errorf("read_only: %q must be a clean absolute path other than /", p)
		}
	}
	for _, h := range s.Hosts {
		if err := checkHostEntry(h); err != nil {
			return fmt.Errorf("hosts: %q: %w", h, err)
		}
	}
	if s.SHA256 != "" {
		if b, err := hex.DecodeString(s.SHA256); err != nil || len(b) != 32 || strings.ToLower(s.SHA256) != s.SHA256 {
			return errors.New("sha256: want 64 lowercase hex digits")
		}
	}
	return nil
}

// checkUpstreamURL: https to any host, or http on loopback only; no
// credentials in the URL.
func checkUpstreamURL(s UpstreamServer) error {
	p, err := url.Parse(s.URL)
	if err != nil {
		return fmt.Errorf("url: %v", err)
	}
	if p.User != nil {
		return errors.New("url: credentials in the URL are not accepted (use headers with ${VAR})")
	}
	if p.Host == "" || p.Hostname() == "" {
		return fmt.Errorf("url %q: no host", s.URL)
	}
	switch s.Transport {
	case "", "streamable-http", "sse":
	default:
		return fmt.Errorf(`transport %q: want "streamable-http", "sse" or nothing (discover)`, s.Transport)
	}
	switch p.Scheme {
	case "https":
	case "http":
		if !loopbackHost(p) {
			return fmt.Errorf("url %q: plain http is accepted only on 127.0.0.1, localhost or [::1]; use https", s.URL)
		}
		if s.CAFile != "" {
			return errors.New("ca_file: only for an https url")
		}
	default:
		return fmt.Errorf("url %q: scheme %q is not accepted (https, or http on loopback)", s.URL, p.Scheme)
	}
	if s.CAFile != "" && !filepath.IsAbs(s.CAFile) {
		return fmt.Errorf("ca_file %q: must be an absolute path", s.CAFile)
	}
	return nil
}

func loopbackHost(p *url.URL) bool {
	h := strings.ToLower(p.Hostname())
	if h == "::1" {
		return strings.HasPrefix(p.Host, "[")
	}
	return h == "127.0.0.1" || h == "localhost"
}

// checkHeader validates a header name (an HTTP token, not one the transport
// sets) and the syntax of its value's ${VAR} references. The value itself
// is never put in an error: it may hold a secret pasted by mistake.
func checkHeader(name, value string) error {
	if name == "" {
		return errors.New("headers: an empty header name")
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return fmt.Errorf("headers: %q is not a valid header name", name)
		}
	}
	low := strings.ToLower(name)
	if reservedHeaders[low] || strings.HasPrefix(low, "mcp-") {
		return fmt.Errorf("headers: %q is set by the transport and cannot be configured", name)
	}
	if _, err := ExpandVars(value, func(string) (string, bool) { return "x", true }); err != nil {
		return fmt.Errorf("headers: %s: %w", name, err)
	}
	return nil
}

// ExpandVars replaces each "${NAME}" of s by lookup(NAME); "$$" is one "$"
// and any other "$" is itself. A NAME that lookup does not know, a "${"
// without its "}" or with a NAME that is not [A-Za-z_][A-Za-z0-9_]* is an
// error naming it. A value with a control character (CR, LF, NUL...) is an
// error naming the variable, never its value.
func ExpandVars(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			return "", errors.New("the value contains a control character")
		}
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", errors.New(`"${" without its "}"`)
		}
		name := s[i+2 : i+2+end]
		if !envName(name) {
			return "", fmt.Errorf("${%s}: not an environment variable name", name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		for j := 0; j < len(v); j++ {
			if v[j] < 0x20 && v[j] != '\t' || v[j] == 0x7f {
				return "", fmt.Errorf("environment variable %s contains a control character", name)
			}
		}
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), nil
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkHostEntry accepts "host" or "host:port" (a name or an IP address).
func checkHostEntry(h string) error {
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil {
		host = hh
		if port == "" {
			return errors.New("empty port")
		}
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return errors.New("port is not a number")
			}
		}
	}
	if host == "" || strings.ContainsAny(host, "/ @*?#") {
		return errors.New("want a host name or address, optionally with :port")
	}
	return nil
}

// checkUpstreamIdent is the rule of EXTRA_MCP_SERVERS names and prefixes:
// 1..64 characters of [A-Za-z0-9_.-].
func checkUpstreamIdent(s string) error {
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

// RefuseUpstreams refuses the named upstream servers to every tenant of
// p (servers a reloaded policy no longer names, still registered until
// the next start, must not become open to all).
func (p *Policy) RefuseUpstreams(names []string) {
	for name, t := range p.Tenants {
		t.refusedUpstreams = append(append([]string(nil), t.refusedUpstreams...), names...)
		p.Tenants[name] = t
	}
}
