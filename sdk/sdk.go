// Package sdk is the Go SDK for aiod plugins. A plugin is a Go main package
// built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared that registers its
// tools in init (or main) and leaves main empty:
//
//	type echoArgs struct {
//		Text string `json:"text" jsonschema:"the text to echo"`
//	}
//
//	func init() {
//		sdk.Plugin(sdk.Info{Name: "echo", Version: "1.0.0"})
//		sdk.AddTool(sdk.Tool{Name: "echo", Description: "Echo the text back."},
//			func(c *sdk.Ctx, a echoArgs) (*sdk.Result, error) {
//				return sdk.TextResult(a.Text), nil
//			})
//	}
//
//	func main() {}
//
// The SDK implements the ABI in spec/abi/v1.md: it exports aiod_abi_version
// and aiod_call, answers the describe operation from the declarations (the
// build writes manifest.json from it, so descriptions live in one place),
// decodes arguments, and encodes results. Handlers run one at a time per
// instance; instances are pooled and may be discarded at any time, so keep
// nothing in globals that must outlive a call (use sdk/state).
//
// Natively (not wasip1) the same code runs under sdk/sdktest.
package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
	"github.com/aiodhq/aiod/sdk/internal/infer"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Info describes the plugin for its manifest.
type Info struct {
	Name        string
	Version     string
	Description string
	// Capabilities the plugin asks for (spec/manifest/v1 §3), e.g.
	// abi.Capabilities{Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "$SANDBOX", Mode: abi.ReadWrite}}}}.
	Capabilities abi.Capabilities
	// Limits the plugin asks for (spec/manifest/v1 §5); zero values take
	// the operator's defaults.
	Limits abi.Limits
	// Configured: the plugin's tools come from the operator's
	// configuration (OnConfigure, configured.go; ABI v1.1).
	Configured bool
}

// Tool declares a tool. InputSchema and OutputSchema may be nil (inferred
// from the handler's argument type), a JSON string, json.RawMessage, or any
// value that marshals to a JSON Schema object.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  any
	OutputSchema any
	Annotations  *Annotations
	// TaskSupport is "optional" or "required" for a tool whose calls may
	// (or must) run as MCP tasks, outliving the request; "" forbids it.
	TaskSupport string
}

// Annotations are MCP's tool hints.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for annotations.
func Bool(b bool) *bool { return &b }

// Ctx is passed to handlers: logging and progress for the running call.
type Ctx struct {
	tool string
}

// Tool is the name of the tool being called.
func (c *Ctx) Tool() string { return c.tool }

// Log levels.
const (
	LevelDebug   = 0
	LevelInfo    = 1
	LevelNotice  = 2
	LevelWarning = 3
	LevelError   = 4
)

// Log sends a log message to the host log and, when the request allows
// it, to the client.
func (c *Ctx) Log(level int, format string, a ...any) { guest.Log(level, fmt.Sprintf(format, a...)) }

// Progress reports progress (total 0 if unknown) with an optional message.
func (c *Ctx) Progress(progress, total float64, message string) {
	guest.Progress(progress, total, message)
}

type tool struct {
	decl   Tool
	schema json.RawMessage
	out    json.RawMessage
	call   func(c *Ctx, args []byte) (*Result, error)
}

var (
	info  Info
	tools []*tool
	index = map[string]*tool{}
)

// Plugin sets the plugin's manifest information.
func Plugin(i Info) { info = i }

// AddTool registers a tool whose arguments are decoded into In (a struct).
func AddTool[In any](t Tool, h func(c *Ctx, in In) (*Result, error)) {
	var zero In
	typ := reflect.TypeOf(zero)
	dec := jsonx.DecoderFor(typ)
	schema := t.InputSchema
	if schema == nil {
		s, err := infer.For(typ)
		if err != nil {
			panic(fmt.Sprintf("sdk: tool %s: cannot infer input schema: %v", t.Name, err))
		}
		schema = s
	}
	// The arguments are decoded into one value kept for the tool (a new
	// one per call escaped to the heap: an allocation, which costs a wasm
	// guest far more than a native one); h gets a copy, and the kept value
	// is cleared at once. A call made while another is decoding (none
	// is, today) takes a value of its own.
	var spare *In
	register(t, schema, func(c *Ctx, args []byte) (*Result, error) {
		in := spare
		if in == nil {
			in = new(In)
		}
		spare = nil
		err := dec.Decode(args, in)
		v := *in
		*in = zero
		spare = in
		if err != nil {
			return ErrorResult(fmt.Sprintf("invalid arguments: %v", err)), nil
		}
		return h(c, v)
	})
}

// AddRawTool registers a tool that receives its arguments as raw JSON.
func AddRawTool(t Tool, h func(c *Ctx, args json.RawMessage) (*Result, error)) {
	schema := t.InputSchema
	if schema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	register(t, schema, func(c *Ctx, args []byte) (*Result, error) { return h(c, args) })
}

func register(t Tool, schema any, call func(c *Ctx, args []byte) (*Result, error)) {
	if _, dup := index[t.Name]; dup {
		panic("sdk: tool " + t.Name + " registered twice")
	}
	tl := &tool{decl: t, schema: mustSchema(t.Name, schema), call: call}
	if t.OutputSchema != nil {
		tl.out = mustSchema(t.Name, t.OutputSchema)
	}
	tools = append(tools, tl)
	index[t.Name] = tl
}

func mustSchema(name string, s any) json.RawMessage {
	switch v := s.(type) {
	case string:
		return json.RawMessage(v)
	case json.RawMessage:
		return v
	case []byte:
		return json.RawMessage(v)
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("sdk: tool %s: schema: %v", name, err))
	}
	return b
}

func init() { guest.Handler = handle }

var ctx Ctx

func handle(op int32, name, args []byte) int32 {
	guest.ResetBlobs()
	switch op {
	case abi.OpDescribe:
		b, err := Describe()
		if err != nil {
			guest.WriteOutput([]byte(err.Error()))
			return abi.RetBadInput
		}
		guest.WriteOutput(b)
		return abi.RetOK
	case abi.OpToolCall:
		t := lookup(name)
		if t == nil {
			if configuredHandle != nil {
				tool := string(name)
				ctx.tool = tool
				return finishCall(func(c *Ctx, args []byte) (*Result, error) {
					return configuredHandle(c, tool, json.RawMessage(args))
				}, args)
			}
			return abi.RetUnknownName
		}
		ctx.tool = t.decl.Name
		// client.go: a *RPCError becomes the request's error, an unanswered
		// input request (2026-07-28) ends the call with input_required.
		return finishCall(t.call, args)
	case abi.OpHookBefore, abi.OpHookAfter:
		out, ret := handleHook(op, name, args)
		guest.WriteOutput(out)
		return ret
	}
	if op == abi.OpConfigure {
		return handleConfigure(args)
	}
	return handleSurface(op, name, args)
}

// lookup finds a tool by name: a linear scan for a few tools (a map lookup
// hashes the name, which costs more in wasm), the map beyond.
func lookup(name []byte) *tool {
	if len(tools) <= 16 {
		for _, t := range tools {
			if t.decl.Name == string(name) {
				return t
			}
		}
		return nil
	}
	return index[string(name)]
}

// Describe returns the manifest document built from the declarations: the
// content of manifest.json without module and sha256.
func Describe() ([]byte, error) {
	if info.Name == "" {
		return nil, errors.New("sdk: sdk.Plugin was not called")
	}
	type toolDoc struct {
		Name         string             `json:"name"`
		Title        string             `json:"title,omitempty"`
		Description  string             `json:"description,omitempty"`
		InputSchema  json.RawMessage    `json:"inputSchema"`
		OutputSchema json.RawMessage    `json:"outputSchema,omitempty"`
		Annotations  *Annotations       `json:"annotations,omitempty"`
		Execution    *abi.ToolExecution `json:"execution,omitempty"`
	}
	doc := struct {
		Name         string           `json:"name"`
		Version      string           `json:"version"`
		ABI          int              `json:"abi"`
		Description  string           `json:"description,omitempty"`
		Tools        []toolDoc        `json:"tools"`
		Prompts      any              `json:"prompts,omitempty"`
		Resources    any              `json:"resources,omitempty"`
		Templates    any              `json:"resourceTemplates,omitempty"`
		Capabilities abi.Capabilities `json:"capabilities"`
		Limits       abi.Limits       `json:"limits"`
		Hooks        *abi.Hooks       `json:"hooks,omitempty"`
		Configured   bool             `json:"configured,omitempty"`
	}{Name: info.Name, Version: info.Version, ABI: abi.Version, Description: info.Description,
		Tools: []toolDoc{}, Capabilities: info.Capabilities, Limits: info.Limits, Hooks: declaredHooks(), Configured: info.Configured}
	doc.Prompts, doc.Resources, doc.Templates = describeSurface()
	for _, t := range tools {
		td := toolDoc{Name: t.decl.Name, Title: t.decl.Title,
			Description: t.decl.Description, InputSchema: t.schema, OutputSchema: t.out, Annotations: t.decl.Annotations}
		if t.decl.TaskSupport != "" {
			td.Execution = &abi.ToolExecution{TaskSupport: t.decl.TaskSupport}
		}
		doc.Tools = append(doc.Tools, td)
	}
	return json.MarshalIndent(doc, "", "  ")
}
