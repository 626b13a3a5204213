package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/process"
	"github.com/google/jsonschema-go/jsonschema"
)

// Discovery (spec/machine-mode.md §2): `TOOL capabilities --output json`
// and `TOOL schema --output json --command NAME` for each command, run
// like a call (the process sandbox, stdin closed) but without the tool's
// named environment: discovery is credential-free, as the standard
// promises, so it gets nothing to use.

// Discovery bounds: each discovery command's deadline and output.
const (
	discoverTimeout = 10 * time.Second
	discoverOutput  = 4 << 20
)

// Capabilities is what `capabilities --output json` answers (the parts
// the adapter reads).
type Capabilities struct {
	Tool        string          `json:"tool"`
	ToolVersion string          `json:"tool_version"`
	AOIVersions []string        `json:"aoi_versions"`
	Commands    json.RawMessage `json:"commands"`
}

// Command is one command of the capabilities.
type Command struct {
	Name                   string          `json:"name"`
	Title                  string          `json:"title"`
	Description            string          `json:"description"`
	Summary                string          `json:"summary"`
	ReadOnly               *bool           `json:"read_only"`
	Destructive            *bool           `json:"destructive"`
	Bounded                bool            `json:"bounded"`
	SupportsCursor         bool            `json:"supports_cursor"`
	RequiresConfirm        bool            `json:"requires_confirm"`
	SupportsDryRun         bool            `json:"supports_dry_run"`
	SupportsIdempotencyKey *bool           `json:"supports_idempotency_key"`
	EventTypes             []string        `json:"event_types"`
	Flags                  json.RawMessage `json:"flags"`
	Operands               json.RawMessage `json:"operands"`
}

// commandNameRE is a command's name: words of letters, digits, '_', '-'
// and '.', separated by single spaces (a subcommand path).
var commandNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*( [A-Za-z0-9][A-Za-z0-9_.-]*)*$`)

// toolNameRE is MCP's (and aiod's) tool name.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// configure turns the configuration into tools: each registered CLI's
// discovery, one tool per command. A CLI whose discovery fails or lies is
// refused as a whole, with the reason; the others are published.
func configure(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Configuration, error) {
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	out := &sdk.Configuration{Refused: slices.Clone(cfg.Refused)}
	st := State{Tools: map[string]*Binding{}}
	names := make([]string, 0, len(cfg.Tools))
	for n := range cfg.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		tools, binds, err := discover(name, cfg.Tools[name])
		for _, t := range tools {
			if err == nil && st.Tools[t.Name] != nil {
				err = fmt.Errorf("tool name %s is %s's already", t.Name, st.Tools[t.Name].CLI)
			}
		}
		if err != nil {
			out.Refused = append(out.Refused, abi.Refusal{Name: name, Reason: err.Error()})
			continue
		}
		for i, t := range tools {
			st.Tools[t.Name] = binds[i]
		}
		out.Tools = append(out.Tools, tools...)
	}
	out.State = st
	return out, nil
}

// discover runs one CLI's discovery and makes its tools.
func discover(name string, cli CLI) ([]sdk.Tool, []*Binding, error) {
	if len(cli.Command) == 0 {
		return nil, nil, errors.New("no command")
	}
	capsOut, err := runDiscovery(cli, "capabilities", "--output", "json")
	if err != nil {
		return nil, nil, err
	}
	var caps Capabilities
	if err := decodeObject(capsOut, &caps); err != nil {
		return nil, nil, fmt.Errorf("capabilities: %w", err)
	}
	if caps.Tool == "" {
		return nil, nil, errors.New("capabilities: no tool name")
	}
	var cmds []Command
	if err := json.Unmarshal(caps.Commands, &cmds); err != nil || len(cmds) == 0 {
		return nil, nil, errors.New("capabilities: commands must be a non-empty array of objects")
	}
	prefix := cli.Prefix
	if prefix == "" {
		prefix = name
	}
	seen := map[string]bool{}
	var tools []sdk.Tool
	var binds []*Binding
	for _, c := range cmds {
		if !commandNameRE.MatchString(c.Name) {
			return nil, nil, fmt.Errorf("capabilities: command name %q is not a command", c.Name)
		}
		if seen[c.Name] {
			return nil, nil, fmt.Errorf("capabilities: command %s is listed twice", c.Name)
		}
		seen[c.Name] = true
		tool := prefix + "_" + strings.NewReplacer("-", "_", " ", "_").Replace(c.Name)
		if !toolNameRE.MatchString(tool) {
			return nil, nil, fmt.Errorf("command %s: tool name %s is not a valid tool name", c.Name, tool)
		}
		schemaOut, err := runDiscovery(cli, "schema", "--output", "json", "--command", c.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("command %s: %w", c.Name, err)
		}
		t, b, err := makeTool(name, caps, c, tool, schemaOut)
		if err != nil {
			return nil, nil, fmt.Errorf("command %s: %w", c.Name, err)
		}
		tools, binds = append(tools, t), append(binds, b)
	}
	return tools, binds, nil
}

// runDiscovery runs one discovery command of cli and returns its stdout,
// which must be one JSON object; the program must exit 0. It runs with a
// clear environment, none of the tool's named variables in it.
func runDiscovery(cli CLI, args ...string) ([]byte, error) {
	argv := append(slices.Clone(cli.Command), args...)
	what := args[0]
	out, res, err := runAll(argv, nil, discoverTimeout, discoverOutput)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot run %s: %v", what, cli.Command[0], err)
	}
	switch {
	case res.TimedOut:
		return nil, fmt.Errorf("%s did not answer within %s", what, discoverTimeout)
	case res.StdoutTruncated:
		return nil, fmt.Errorf("%s answered more than %d bytes", what, discoverOutput)
	case res.ExitCode != 0:
		return nil, fmt.Errorf("%s exited with code %d", what, res.ExitCode)
	}
	return out, nil
}

// runAll runs argv with a clear environment and env, and returns all its
// stdout.
func runAll(argv []string, env map[string]string, timeout time.Duration, maxOut int64) ([]byte, *process.WaitResult, error) {
	p, err := process.Start(process.StartRequest{Argv: argv, Env: env, ClearEnv: true, Timeout: timeout, MaxOutputBytes: maxOut})
	if err != nil {
		return nil, nil, err
	}
	var out []byte
	for {
		b, err := p.Read(0, timeout)
		if errors.Is(err, process.ErrTimeout) {
			continue
		}
		if err != nil || len(b) == 0 {
			break
		}
		out = append(out, b...)
	}
	res, err := p.Wait(false)
	return out, res, err
}

// decodeObject decodes b, one JSON object (whitespace around it allowed),
// into v.
func decodeObject(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return errors.New("not one JSON object")
	}
	return json.Unmarshal(b, v)
}

// makeTool makes the MCP tool of command c from its schema document.
func makeTool(cliName string, caps Capabilities, c Command, tool string, schemaDoc []byte) (sdk.Tool, *Binding, error) {
	var doc map[string]json.RawMessage
	if err := decodeObject(schemaDoc, &doc); err != nil {
		return sdk.Tool{}, nil, fmt.Errorf("schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(bytes.TrimSpace(schemaDoc), &s); err != nil {
		return sdk.Tool{}, nil, fmt.Errorf("schema: not a JSON Schema: %v", err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return sdk.Tool{}, nil, fmt.Errorf("schema: not a JSON Schema: %v", err)
	}
	if raw, ok := doc["command"]; ok {
		var named string
		if json.Unmarshal(raw, &named) == nil && named != c.Name {
			return sdk.Tool{}, nil, fmt.Errorf("schema: describes command %q, not the one asked for", named)
		}
	}
	b := &Binding{CLI: cliName, Command: c.Name, Path: strings.Fields(c.Name),
		Cursor: c.SupportsCursor, DryRun: c.SupportsDryRun, Confirm: c.RequiresConfirm,
		IdempotencyKey: c.SupportsIdempotencyKey != nil && *c.SupportsIdempotencyKey,
		Destructive:    c.Destructive != nil && *c.Destructive}
	// the event types the schema allows: every type capabilities lists
	// must be one of them, or the tool lies about its stream
	if types := typeEnum(&s); types != nil {
		for _, et := range c.EventTypes {
			if !slices.Contains(types, bare(et)) {
				return sdk.Tool{}, nil, fmt.Errorf("capabilities lists event type %s, which the schema does not allow", et)
			}
		}
		b.Types = types
	}
	flagsRaw, opsRaw := c.Flags, c.Operands
	if len(flagsRaw) == 0 {
		flagsRaw = doc["flags"]
	}
	if len(opsRaw) == 0 {
		opsRaw = doc["operands"]
	}
	in, err := inputSchema(b, c, flagsRaw, opsRaw)
	if err != nil {
		return sdk.Tool{}, nil, err
	}
	out, err := outputSchema(caps.Tool, c.Name, schemaDoc)
	if err != nil {
		return sdk.Tool{}, nil, err
	}
	t := sdk.Tool{Name: tool, Title: c.Title, Description: description(caps, c, b, &s), InputSchema: in, OutputSchema: out}
	if t.Title == "" {
		t.Title = caps.Tool + " " + c.Name
	}
	a := &sdk.Annotations{Title: t.Title, ReadOnlyHint: c.ReadOnly, DestructiveHint: c.Destructive, IdempotentHint: c.SupportsIdempotencyKey}
	if a.ReadOnlyHint != nil || a.DestructiveHint != nil || a.IdempotentHint != nil {
		t.Annotations = a
	}
	return t, b, nil
}

// typeEnum is the event types the schema allows, without the aoi: prefix,
// from properties.type's enum or const; nil when it names none.
func typeEnum(s *jsonschema.Schema) []string {
	p := s.Properties["type"]
	if p == nil {
		return nil
	}
	var vals []any
	if p.Const != nil {
		vals = []any{*p.Const}
	}
	vals = append(vals, p.Enum...)
	if len(vals) == 0 {
		return nil
	}
	var out []string
	for _, v := range vals {
		if s, ok := v.(string); ok {
			out = append(out, bare(s))
		}
	}
	return out
}

// bare is an event type without the aoi: prefix (the standard's
// vocabulary appears both ways).
func bare(t string) string { return strings.TrimPrefix(t, "aoi:") }

// description is the tool's description: the command's own, else its
// schema's, and what the adapter adds to it.
func description(caps Capabilities, c Command, b *Binding, s *jsonschema.Schema) string {
	d := c.Description
	if d == "" {
		d = c.Summary
	}
	if d == "" {
		d = s.Description
	}
	if d == "" {
		d = fmt.Sprintf("The %s command of %s.", c.Name, caps.Tool)
	}
	d = strings.TrimSpace(d)
	var notes []string
	notes = append(notes, fmt.Sprintf("Runs `%s %s` in Machine Mode (AOI-CLI); the result is its events and its summary.", caps.Tool, c.Name))
	if b.Cursor {
		notes = append(notes, "When the summary says truncated, call again with its next_cursor as cursor for the next page.")
	}
	if b.Confirm {
		notes = append(notes, "It asks the user to confirm before it runs (unless dry_run).")
	}
	return d + "\n\n" + strings.Join(notes, " ")
}
