package caps

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Machine Mode tools (spec/machine-mode.md): command-line tools that speak
// Machine Mode (AOI-CLI v0.2), registered by the operator with
// --machine-tools / AIO_MACHINE_TOOLS or the policy's "machine_tools", and
// published as MCP tools by the built-in machine_tools plugin. Pure data
// and validation here; the host resolves the environment and the pins.

// MachineTool is one registered command-line tool.
type MachineTool struct {
	// Command is the program, an absolute path, and the arguments that
	// come before every command of it ("fixed-arg", a script for an
	// interpreter).
	Command []string `json:"command"`
	// Prefix starts the published tool names, <prefix>_<command>; empty:
	// the tool's registered name.
	Prefix string `json:"prefix,omitempty"`
	// Env names the variables of aiod's environment the tool gets (and
	// nothing else of it).
	Env []string `json:"env,omitempty"`
	// SHA256 pins Command[0] (hex): a file with another digest is
	// refused. Required in lockdown.
	SHA256 string `json:"sha256,omitempty"`
	// TimeoutMs bounds one call (0: 60 s; the plugin's deadline caps
	// it), MaxOutputBytes the JSONL a call may read (0: 8 MiB, at most
	// 16 MiB).
	TimeoutMs      int64 `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
}

// Patterns and bounds of a registration.
const (
	// MachineNamePattern is a registered name, and a prefix: tool-name
	// characters, room for the command after it.
	MachineNamePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
	// EnvNamePattern is an environment variable's name.
	EnvNamePattern = `^[A-Za-z_][A-Za-z0-9_]{0,127}$`
	// MaxMachineOutput caps MaxOutputBytes.
	MaxMachineOutput = 16 << 20
	// MaxMachineTimeoutMs caps TimeoutMs.
	MaxMachineTimeoutMs = 600000
)

var (
	machineNameRE = regexp.MustCompile(MachineNamePattern)
	envNameRE     = regexp.MustCompile(EnvNamePattern)
)

// ErrInvalidMachineTools is wrapped by every registration error.
var ErrInvalidMachineTools = errors.New("invalid machine tools")

// ParseMachineTools decodes a registration object {"<name>": {...}}
// strictly (unknown properties, wrong types, names twice and trailing data
// are errors) and validates it. An empty or blank value is none.
func ParseMachineTools(data []byte) (map[string]MachineTool, error) {
	if strings.TrimSpace(string(data)) == "" {
		return nil, nil
	}
	if err := checkDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidMachineTools, err)
	}
	var m map[string]MachineTool
	if err := StrictUnmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidMachineTools, err)
	}
	if err := ValidateMachineTools(m); err != nil {
		return nil, err
	}
	return m, nil
}

// ValidateMachineTools checks registrations: names and prefixes, an
// absolute program without NUL, environment names (none that makes a
// program run code it was not told to: LD_*, DYLD_*, BASH_ENV, ENV,
// BASH_FUNC_*), a pin's form and the bounds; and that no two tools
// publish under one prefix.
func ValidateMachineTools(m map[string]MachineTool) error {
	bad := func(name, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidMachineTools, name, fmt.Sprintf(format, a...))
	}
	prefixes := map[string]string{}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := m[name]
		if !machineNameRE.MatchString(name) {
			return bad(name, "the name must match %s", MachineNamePattern)
		}
		if t.Prefix != "" && !machineNameRE.MatchString(t.Prefix) {
			return bad(name, "prefix %q must match %s", t.Prefix, MachineNamePattern)
		}
		if len(t.Command) == 0 || t.Command[0] == "" {
			return bad(name, "command must name the program")
		}
		if !filepath.IsAbs(t.Command[0]) || filepath.Clean(t.Command[0]) != t.Command[0] {
			return bad(name, "command[0] %q must be a clean absolute path", t.Command[0])
		}
		if slices.ContainsFunc(t.Command, func(s string) bool { return strings.ContainsRune(s, 0) }) {
			return bad(name, "command must not contain NUL bytes")
		}
		for _, e := range t.Env {
			if !envNameRE.MatchString(e) {
				return bad(name, "env %q is not a variable name", e)
			}
			if strings.HasPrefix(e, "LD_") || strings.HasPrefix(e, "DYLD_") || strings.HasPrefix(e, "BASH_FUNC_") || e == "BASH_ENV" || e == "ENV" {
				return bad(name, "env %s would make the program run code it was not told to run", e)
			}
		}
		if t.SHA256 != "" && !sha256RE.MatchString(t.SHA256) {
			return bad(name, "sha256 must be 64 lowercase hex digits")
		}
		if t.TimeoutMs < 0 || t.TimeoutMs > MaxMachineTimeoutMs {
			return bad(name, "timeout_ms must be 0 to %d", MaxMachineTimeoutMs)
		}
		if t.MaxOutputBytes < 0 || t.MaxOutputBytes > MaxMachineOutput {
			return bad(name, "max_output_bytes must be 0 to %d", MaxMachineOutput)
		}
		p := t.Prefix
		if p == "" {
			p = name
		}
		if other, ok := prefixes[p]; ok {
			return bad(name, "prefix %q is %s's already", p, other)
		}
		prefixes[p] = name
	}
	return nil
}

// checkDuplicateKeys fails on an object key given twice at the top level
// or in an entry (encoding/json keeps the last silently).
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var walk func(depth int) error
	walk = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				ks, _ := k.(string)
				if seen[ks] {
					return fmt.Errorf("%q appears twice", ks)
				}
				seen[ks] = true
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
		case '[':
			for dec.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	return walk(0)
}
