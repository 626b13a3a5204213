// Package caps validates plugin manifests (whose types are the contract's,
// sdk/abi) and holds the operator's policy and the capability grant
// computed from both. It is pure data: it imports no engine,
// no HTTP framework and no host function code, so it can be fuzzed and
// reasoned about alone.
package caps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"

	"github.com/aiodhq/aiod/sdk/abi"
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// A CDP method or pattern: "*", "Domain.*" or "Domain.method" where the
	// method part may hold '*'.
	cdpMethodRE = regexp.MustCompile(`^(\*|[A-Za-z][A-Za-z0-9]*\.[A-Za-z0-9*]+)$`)
)

// ErrInvalidManifest is wrapped by every manifest validation error.
var ErrInvalidManifest = errors.New("invalid manifest")

// ParseManifest decodes a manifest strictly (unknown fields are errors) and
// validates it.
func ParseManifest(data []byte) (*abi.Manifest, error) {
	var m abi.Manifest
	if err := StrictUnmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidManifest, err)
	}
	if err := ValidateManifest(&m); err != nil {
		return nil, err
	}
	return &m, nil
}

// StrictUnmarshal decodes JSON refusing unknown fields and trailing data.
// Field names must be spelled exactly and appear once: encoding/json alone
// would accept "Tools" for "tools" and keep the last of two "name"s, so the
// host could read a document differently from a person, a JSON Schema
// validator or another parser.
func StrictUnmarshal(data []byte, v any) error {
	if strictFlat(data, v) {
		return nil
	}
	return strictUnmarshal(data, v)
}

// strictUnmarshal is StrictUnmarshal for any document and type: the
// decoding, then a walk of the document's tokens that checks its names.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// Only white space may follow. (dec.More is false before a stray '}' or
	// ']', and decoding one fails, so neither could tell "{}}" from "{}".)
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after JSON value")
	}
	return checkNames(json.NewDecoder(bytes.NewReader(data)), reflect.TypeOf(v))
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// checkNames reads the next JSON value of dec, which decodes into type t,
// and refuses object names that repeat or are not exactly a field's JSON
// name. A nil t (json.RawMessage, interfaces) is not checked.
func checkNames(dec *json.Decoder, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t != nil && t.Kind() == reflect.Interface {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := tok.(string)
			var elem reflect.Type
			if t != nil {
				if seen[name] {
					return fmt.Errorf("json: duplicate field %q", name)
				}
				seen[name] = true
				switch t.Kind() {
				case reflect.Struct:
					f, ok := jsonField(t, name)
					if !ok {
						return fmt.Errorf("json: unknown field %q", name)
					}
					elem = f
				case reflect.Map:
					elem = t.Elem()
				}
			}
			if err := checkNames(dec, elem); err != nil {
				return err
			}
		}
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkNames(dec, elem); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing '}' or ']'
	return err
}

// jsonField returns the type of the field of struct t whose JSON name is
// exactly name.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
		case tag == name || tag == "" && f.Name == name:
			return f.Type, true
		}
	}
	return nil, false
}

// ValidateManifest checks a manifest's fields.
func ValidateManifest(m *abi.Manifest) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidManifest, fmt.Sprintf(format, a...))
	}
	if !nameRE.MatchString(m.Name) {
		return bad("name %q must match %s", m.Name, nameRE)
	}
	if m.ABI != abi.Version {
		return bad("plugin %s: abi %d is not supported (this host speaks abi %d)", m.Name, m.ABI, abi.Version)
	}
	switch m.Form {
	case "", abi.FormReactor, abi.FormCommand, abi.FormExtism:
	default:
		return bad("plugin %s: form %q must be \"reactor\", \"command\" or \"extism\"", m.Name, m.Form)
	}
	if len(m.Config) > 0 && m.Form != abi.FormExtism {
		return bad("plugin %s: config is for form \"extism\" only", m.Name)
	}
	if m.Module != "" && (strings.ContainsAny(m.Module, `/\`) || m.Module == "." || m.Module == "..") {
		return bad("plugin %s: module %q must be a file name in the plugin directory", m.Name, m.Module)
	}
	if m.SHA256 != "" && !sha256RE.MatchString(m.SHA256) {
		return bad("plugin %s: sha256 must be 64 lowercase hex digits", m.Name)
	}
	if m.Configured && m.Form != "" && m.Form != abi.FormReactor {
		return bad("plugin %s: configured is for form \"reactor\" only", m.Name)
	}
	if !m.Configured && len(m.Tools) == 0 && len(m.Prompts) == 0 && len(m.Resources) == 0 && len(m.ResourceTemplates) == 0 && m.Hooks == nil {
		return bad("plugin %s declares no tools, prompts, resources or hooks", m.Name)
	}
	if err := validateManifestHooks(m); err != nil {
		return bad("plugin %s: %v", m.Name, err)
	}
	seen := map[string]bool{}
	for i, t := range m.Tools {
		if !toolNameRE.MatchString(t.Name) {
			return bad("plugin %s: tool %d: name %q must match %s", m.Name, i, t.Name, toolNameRE)
		}
		if err := ValidateTool(t); err != nil {
			return bad("plugin %s: %v", m.Name, err)
		}
		if seen[t.Name] {
			return bad("plugin %s: tool %q declared twice", m.Name, t.Name)
		}
		seen[t.Name] = true
	}
	if err := validateSurface(m); err != nil {
		return bad("plugin %s: %v", m.Name, err)
	}
	if err := validateCapabilities(m.Capabilities); err != nil {
		return bad("plugin %s: capabilities: %v", m.Name, err)
	}
	l := m.Limits
	if l.MemoryMiB < 0 || l.MemoryMiB > 4096 || l.TimeoutMs < 0 || l.MaxResultBytes < 0 || l.MaxInstances < 0 || l.Fuel < 0 {
		return bad("plugin %s: limits must be non-negative (memory_mib at most 4096)", m.Name)
	}
	return nil
}

// ValidateTool checks one tool declaration as a manifest's are checked:
// its name, and that its input schema (and output schema, when it has
// one) is a JSON Schema object of type "object". It is also how the host
// checks the tools a configured plugin publishes (OpConfigure).
func ValidateTool(t abi.Tool) error {
	if !toolNameRE.MatchString(t.Name) {
		return fmt.Errorf("name %q must match %s", t.Name, toolNameRE)
	}
	if err := checkSchema(t.InputSchema, true); err != nil {
		return fmt.Errorf("tool %s: inputSchema: %v", t.Name, err)
	}
	if err := checkSchema(t.OutputSchema, false); err != nil {
		return fmt.Errorf("tool %s: outputSchema: %v", t.Name, err)
	}
	return nil
}

func checkSchema(raw json.RawMessage, required bool) error {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return errors.New("required")
		}
		return nil
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("must be a JSON object: %w", err)
	}
	if t, ok := s["type"]; !ok || t != "object" {
		return errors.New(`must have "type": "object"`)
	}
	return nil
}

func validateCapabilities(c abi.Capabilities) error {
	if c.Files != nil {
		for _, p := range c.Files.Paths {
			if err := checkPath(p.Path); err != nil {
				return fmt.Errorf("files: %w", err)
			}
			if p.Mode != abi.ReadOnly && p.Mode != abi.ReadWrite {
				return fmt.Errorf("files: path %q: mode must be \"ro\" or \"rw\"", p.Path)
			}
		}
	}
	if c.Process != nil {
		if len(c.Process.Commands) == 0 {
			return errors.New("process: commands must list at least one program")
		}
		for _, cmd := range c.Process.Commands {
			if cmd == "" || strings.ContainsAny(cmd, "\x00\n") {
				return fmt.Errorf("process: bad command %q", cmd)
			}
		}
		for _, d := range c.Process.Cwd {
			if err := checkPath(d); err != nil {
				return fmt.Errorf("process: cwd: %w", err)
			}
		}
	}
	if c.State != nil && c.State.MaxBytes < 0 {
		return errors.New("state: max_bytes must be non-negative")
	}
	if c.CDP != nil {
		for _, m := range c.CDP.Methods {
			if !cdpMethodRE.MatchString(m) {
				return fmt.Errorf("cdp: method %q must be Domain.method, a pattern like Domain.* or Input.dispatch*, or *", m)
			}
		}
	}
	if c.HTTP != nil {
		for _, h := range c.HTTP.Hosts {
			if h == "" || strings.ContainsAny(h, "\x00\n/:@ ") {
				return fmt.Errorf("http: bad host %q (a host name or a pattern like *.example.com)", h)
			}
		}
	}
	if c.Upstream != nil {
		for _, s := range c.Upstream.Servers {
			if s == "" || strings.ContainsAny(s, "\x00\n") {
				return fmt.Errorf("upstream: bad server name %q", s)
			}
		}
	}
	return nil
}

// Variables allowed at the start of a scope path.
var pathVars = []string{"$SANDBOX", "$HOME", "$TMP", "$WORKSPACE"}

func checkPath(p string) error {
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q contains NUL", p)
	}
	if strings.HasPrefix(p, "/") {
		return nil
	}
	for _, v := range pathVars {
		if p == v || strings.HasPrefix(p, v+"/") {
			return nil
		}
	}
	return fmt.Errorf("path %q must be absolute or start with one of %v", p, pathVars)
}
