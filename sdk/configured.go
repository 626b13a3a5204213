package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// Configured plugins (ABI v1.1, spec/abi/v1.md §2.6): a plugin whose tools
// come from the operator's configuration rather than from its
// declarations. It sets Info.Configured, registers OnConfigure, which
// turns the configuration into tools (at every load and reload of the
// host), and HandleConfigured, which runs them; a call reads the
// configuration and the state OnConfigure returned with Configuration.
//
//	sdk.Plugin(sdk.Info{Name: "machine_tools", Configured: true, ...})
//	sdk.OnConfigure(func(c *sdk.Ctx, config json.RawMessage) (*sdk.Configuration, error) { ... })
//	sdk.HandleConfigured(func(c *sdk.Ctx, tool string, args json.RawMessage) (*sdk.Result, error) { ... })

// Configuration is what OnConfigure returns: the tools to publish, the
// parts of the configuration refused (and why), and the state calls read
// back (ConfigurationState).
type Configuration struct {
	Tools   []Tool
	Refused []abi.Refusal
	// State is any value that marshals to JSON.
	State any
}

var (
	configure        func(c *Ctx, config json.RawMessage) (*Configuration, error)
	configuredHandle func(c *Ctx, tool string, args json.RawMessage) (*Result, error)
)

// OnConfigure registers how the plugin turns its configuration into tools
// (a plugin with Info.Configured).
func OnConfigure(fn func(c *Ctx, config json.RawMessage) (*Configuration, error)) { configure = fn }

// HandleConfigured registers the handler of the tools OnConfigure
// published: a tools/call whose name no AddTool declared goes to it.
func HandleConfigured(fn func(c *Ctx, tool string, args json.RawMessage) (*Result, error)) {
	configuredHandle = fn
}

// ConfigurationState returns the configuration the plugin was configured
// with and the state its OnConfigure returned, as JSON (both null outside
// a configured plugin's calls).
func ConfigurationState() (config, state json.RawMessage, err error) {
	b, code := guest.Configuration()
	if abi.Code(code) != abi.OK {
		return nil, nil, fmt.Errorf("aiod:core.configuration: %s", b)
	}
	// an instance belongs to one load: the same bytes at every call,
	// decoded once (in wasm the guest keeps them after the first read, and
	// a call makes no host call for them)
	if last := &lastConfiguration; sameBytes(b, last.raw) {
		return last.r.Config, last.r.State, nil
	}
	var r abi.ConfigurationResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, fmt.Errorf("aiod:core.configuration: %w", err)
	}
	lastConfiguration.raw, lastConfiguration.r = b, r
	return r.Config, r.State, nil
}

// lastConfiguration is the configuration last read, and what it decoded
// to.
var lastConfiguration struct {
	raw []byte
	r   abi.ConfigurationResponse
}

// handleConfigure answers OpConfigure: args is {"config": <configuration>}.
func handleConfigure(args []byte) int32 {
	if configure == nil {
		return abi.RetUnknownOp
	}
	var in struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		guest.WriteOutput([]byte("configure: " + err.Error()))
		return abi.RetBadInput
	}
	ctx.tool = ""
	out, err := func() (out *Configuration, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("configure panicked: %v", r)
			}
		}()
		return configure(&ctx, in.Config)
	}()
	if err == nil && out == nil {
		err = errors.New("configure returned nothing")
	}
	if err != nil {
		guest.WriteOutput([]byte(err.Error()))
		return abi.RetBadInput
	}
	doc := abi.Configured{Tools: []abi.Tool{}, Refused: out.Refused}
	for _, t := range out.Tools {
		in := t.InputSchema
		if in == nil {
			in = json.RawMessage(`{"type":"object"}`)
		}
		at := abi.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: mustSchema(t.Name, in)}
		if t.OutputSchema != nil {
			at.OutputSchema = mustSchema(t.Name, t.OutputSchema)
		}
		if a := t.Annotations; a != nil {
			at.Annotations = &abi.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
				IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
		}
		if t.TaskSupport != "" {
			at.Execution = &abi.ToolExecution{TaskSupport: t.TaskSupport}
		}
		doc.Tools = append(doc.Tools, at)
	}
	if out.State != nil {
		b, err := json.Marshal(out.State)
		if err != nil {
			guest.WriteOutput([]byte("configure: state: " + err.Error()))
			return abi.RetBadInput
		}
		doc.State = b
	}
	b, err := json.Marshal(doc)
	if err != nil {
		guest.WriteOutput([]byte("configure: " + err.Error()))
		return abi.RetBadInput
	}
	guest.WriteOutput(b)
	return abi.RetOK
}

// sameBytes is bytes.Equal that answers at once for the same memory (the
// guest keeps what it read: the same bytes at every call).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) || bytes.Equal(a, b))
}
