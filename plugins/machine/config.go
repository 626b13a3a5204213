package main

import (
	"bytes"
	"encoding/json"
	"time"
	"unsafe"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Config is the plugin's configuration, as the host builds it from the
// registrations (spec/machine-mode.md §1): the tools by registered name,
// and the registrations the host refused itself (a pin that does not
// match, a program that is not there).
type Config struct {
	Tools   map[string]CLI `json:"tools"`
	Refused []abi.Refusal  `json:"refused,omitempty"`
}

// CLI is one registered command-line tool.
type CLI struct {
	// Command is the program (absolute) and its fixed arguments.
	Command []string `json:"command"`
	// Prefix starts the tool names (the registered name when empty).
	Prefix string `json:"prefix,omitempty"`
	// Env are the named variables of aiod's environment, with their
	// values: all the environment the tool gets besides PATH.
	Env map[string]string `json:"env,omitempty"`
	// TimeoutMs bounds a call (0: DefaultTimeout), MaxOutputBytes the
	// JSONL it may write (0: DefaultMaxOutput).
	TimeoutMs      int64 `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
}

// Call bounds.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultMaxOutput = 8 << 20
)

func (c CLI) timeout() time.Duration {
	if c.TimeoutMs > 0 {
		return time.Duration(c.TimeoutMs) * time.Millisecond
	}
	return DefaultTimeout
}

func (c CLI) maxOutput() int64 {
	if c.MaxOutputBytes > 0 {
		return c.MaxOutputBytes
	}
	return DefaultMaxOutput
}

// State is what configure made for the calls: each tool's binding.
type State struct {
	Tools map[string]*Binding `json:"tools"`
}

// Binding is how one MCP tool calls one command of a CLI.
type Binding struct {
	CLI     string `json:"cli"`
	Command string `json:"command"` // as capabilities names it
	// Path are the words of the command on the command line ("docs
	// search" is two).
	Path     []string  `json:"path"`
	Flags    []Flag    `json:"flags,omitempty"`
	Operands []Operand `json:"operands,omitempty"`
	// What the command supports (capabilities), each an argument the
	// adapter adds: cursor, limit (a bounded command that declares no
	// --limit), dry_run, idempotency_key; and whether it must be
	// confirmed.
	Cursor         bool `json:"cursor,omitempty"`
	Limit          bool `json:"limit,omitempty"`
	DryRun         bool `json:"dry_run,omitempty"`
	IdempotencyKey bool `json:"idempotency_key,omitempty"`
	Confirm        bool `json:"confirm,omitempty"`
	Destructive    bool `json:"destructive,omitempty"`
	// Types are the event types the command's schema allows, without
	// the aoi: prefix (empty: any).
	Types []string `json:"types,omitempty"`
}

// Flag is one flag of a command: the MCP property, the flag's name on the
// command line (--name), its JSON type ("string", "integer", "number",
// "boolean" or "array") and, for an array, its items' type.
type Flag struct {
	Prop  string `json:"prop"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Items string `json:"items,omitempty"`
}

// Operand is one positional operand: its property, its type, and whether
// it takes the rest (an array).
type Operand struct {
	Prop     string `json:"prop"`
	Type     string `json:"type"`
	Items    string `json:"items,omitempty"`
	Variadic bool   `json:"variadic,omitempty"`
}

// loaded caches the decoded configuration of this instance's load (an
// instance never outlives its load, so it never changes under it; the
// bytes are compared all the same).
var loaded struct {
	config, state []byte
	cfg           Config
	st            State
}

// current returns the configuration and state of the call's load.
func current() (*Config, *State, error) {
	config, state, err := sdk.ConfigurationState()
	if err != nil {
		return nil, nil, err
	}
	if !sameBytes(config, loaded.config) || !sameBytes(state, loaded.state) {
		var cfg Config
		var st State
		if err := json.Unmarshal(config, &cfg); err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(state, &st); err != nil {
			return nil, nil, err
		}
		loaded.config, loaded.state, loaded.cfg, loaded.st = config, state, cfg, st
	}
	return &loaded.cfg, &loaded.st, nil
}

// sameBytes is bytes.Equal that answers at once for the same memory (the
// SDK hands the bytes it kept to every call).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) || bytes.Equal(a, b))
}
