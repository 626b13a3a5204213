package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/hostfn/extism"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// The extism form (spec/abi/extism.md): an unchanged Extism plugin, run on
// the host's own Extism host ABI (extism.Env). Two interfaces are
// recognized by their exports, as hyper-mcp does: the older describe/call
// (mcp.run servlets, hyper-mcp v1) and hyper-mcp's list_tools/call_tool
// with the optional prompt, resource and completion exports (v2).

// extismIface is the interface an Extism module implements.
type extismIface int

const (
	extismV1 extismIface = 1 // describe, call
	extismV2 extismIface = 2 // list_tools, call_tool, ...
)

// detectExtism tells the interface from the exports.
func detectExtism(exports []string) (extismIface, error) {
	has := func(n string) bool { return slices.Contains(exports, n) }
	switch {
	case has("describe") && has("call"):
		return extismV1, nil
	case has("call_tool") || has("get_prompt") || has("read_resource"):
		return extismV2, nil
	}
	return 0, errors.New("module exports neither call_tool (hyper-mcp's interface) nor describe and call (the older one): not an Extism MCP plugin")
}

// extismEmpty is the context of a request: hyper-mcp passes the JSON-RPC
// id and _meta; aiod has neither at this layer, so it is empty.
var extismEmpty = json.RawMessage(`{}`)

// extismRequest is the export to call and its input for one operation,
// or errUnknownOp when the module does not have it.
func extismRequest(iface extismIface, exports []string, op uint64, name string, args []byte) (string, []byte, error) {
	type v2 struct {
		Context json.RawMessage `json:"context"`
		Request any             `json:"request"`
	}
	var export string
	var in any
	switch {
	case op == abi.OpToolCall && iface == extismV1:
		export = "call"
		in = map[string]any{"params": map[string]any{"name": name, "arguments": json.RawMessage(args)}}
	case op == abi.OpToolCall:
		export = "call_tool"
		in = v2{extismEmpty, map[string]any{"name": name, "arguments": json.RawMessage(args)}}
	case iface == extismV1:
		return "", nil, errUnknownOp
	case op == abi.OpPromptGet:
		export = "get_prompt"
		in = v2{extismEmpty, map[string]any{"name": name, "arguments": json.RawMessage(args)}}
	case op == abi.OpResourceRead:
		var r struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(args, &r); err != nil {
			return "", nil, err
		}
		export = "read_resource"
		in = v2{extismEmpty, map[string]any{"uri": r.URI}}
	case op == abi.OpComplete:
		// hyper-mcp's schema names the reference types "prompt" and
		// "resource" where MCP says "ref/prompt" and "ref/resource"
		var p map[string]any
		if err := json.Unmarshal(args, &p); err != nil {
			return "", nil, err
		}
		if ref, ok := p["ref"].(map[string]any); ok {
			switch ref["type"] {
			case "ref/prompt":
				ref["type"] = "prompt"
			case "ref/resource":
				ref["type"] = "resource"
			}
		}
		export = "complete"
		in = v2{extismEmpty, p}
	default:
		return "", nil, errUnknownOp
	}
	if !slices.Contains(exports, export) {
		return "", nil, errUnknownOp
	}
	b, err := json.Marshal(in)
	return export, b, err
}

// kernels recycles the per-call Extism kernel state.
var kernels = sync.Pool{New: func() any { return &extism.Call{} }}

// extismFamilies are the families an Extism plugin with grant g links:
// aiod:core, the Extism env, and the http functions (refusing when not
// granted, extism.HTTPDenied) besides the gated families.
func (r *Registry) extismFamilies(g *caps.Grant, gated []hostfn.Family) []hostfn.Family {
	fams := []hostfn.Family{core.New(), extism.Env()}
	hasHTTP := false
	for _, f := range gated {
		hasHTTP = hasHTTP || f.Name() == abi.FamilyHTTP
	}
	fams = append(fams, gated...)
	switch {
	case !g.Has(abi.FamilyHTTP):
		fams = append(fams, extism.HTTPDenied())
	case !hasHTTP:
		fams = append(fams, extism.HTTP(nil))
	}
	return fams
}

// callExtism runs one export on inst with input, returning the guest's
// return code and its error text (error_set).
func callExtism(ctx context.Context, inst runtime.Instance, c *hostfn.Call, vars *extism.Vars, m *abi.Manifest, g *caps.Grant, export string, input []byte) (int32, string, error) {
	k := kernels.Get().(*extism.Call)
	defer func() { k.Reset(); kernels.Put(k) }()
	k.Config, k.Vars = m.Config, vars
	if g != nil {
		k.Max = uint64(g.MemoryPages) * 65536
	}
	c.Input, c.Output = input, nil
	ret, err := inst.Call(extism.With(ctx, k), c, export)
	return ret, k.Err, err
}

// invokeExtism is invoke for a plugin of form extism.
func (r *Registry) invokeExtism(ctx context.Context, p *Plugin, op uint64, req CallRequest, c *hostfn.Call, owner string, args []byte) ([]byte, error) {
	fail := func(format string, a ...any) ([]byte, error) {
		if op != abi.OpToolCall {
			return nil, fmt.Errorf(format, a...)
		}
		return toolError(format, a...), nil
	}
	export, input, err := extismRequest(p.extism, p.compiled.Exports(), op, req.Name, args)
	if errors.Is(err, errUnknownOp) {
		if op != abi.OpToolCall {
			return nil, errUnknownOp
		}
		return toolError("plugin %s does not implement tool calls", p.Manifest.Name), nil
	}
	if err != nil {
		return fail("plugin %s: bad request for %s: %v", p.Manifest.Name, req.Name, err)
	}
	pl, inst, err := p.get(ctx, owner)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
			return fail("tool %s: no instance became free before the deadline (timeout %s)", req.Name, p.Grant.Timeout)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fail("tool %s: cannot start plugin %s: %v", req.Name, p.Manifest.Name, err)
	}
	ret, errText, err := callExtism(ctx, inst, c, r.extismVars, p.Manifest, p.Grant, export, input)
	out := c.Output
	c.Input, c.Output = nil, nil
	if err != nil {
		return r.callFailed(ctx, pl, inst, p, req.Name, op, err)
	}
	pl.done(ctx, inst)
	if ret != 0 {
		if errText == "" {
			errText = fmt.Sprintf("%s returned %d", export, ret)
		}
		return fail("plugin %s failed %s: %s", p.Manifest.Name, req.Name, truncate(errText, 1024))
	}
	if !validResult(out) {
		return fail("plugin %s returned an invalid result for %s (%s output is not a JSON object)", p.Manifest.Name, req.Name, export)
	}
	return out, nil
}

// extismListing is what an Extism module lists: its tools, and with the
// v2 interface its prompts, resources and resource templates.
type extismListing struct {
	Tools             []abi.Tool             `json:"tools"`
	Prompts           []abi.Prompt           `json:"prompts,omitempty"`
	Resources         []abi.Resource         `json:"resources,omitempty"`
	ResourceTemplates []abi.ResourceTemplate `json:"resourceTemplates,omitempty"`
}

// listExtism calls the module's list exports on inst.
func listExtism(ctx context.Context, inst runtime.Instance, c *hostfn.Call, vars *extism.Vars, m *abi.Manifest, g *caps.Grant, iface extismIface, exports []string) (*extismListing, error) {
	var l extismListing
	type list struct {
		export, key string
		into        any
	}
	lists := []list{{"describe", "tools", &l.Tools}}
	if iface == extismV2 {
		lists = []list{{"list_tools", "tools", &l.Tools}, {"list_prompts", "prompts", &l.Prompts},
			{"list_resources", "resources", &l.Resources}, {"list_resource_templates", "resourceTemplates", &l.ResourceTemplates}}
	}
	for _, e := range lists {
		if !slices.Contains(exports, e.export) {
			continue
		}
		input := []byte(`{"context":{}}`)
		if iface == extismV1 {
			input = nil
		}
		ret, errText, err := callExtism(ctx, inst, c, vars, m, g, e.export, input)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.export, err)
		}
		if ret != 0 {
			return nil, fmt.Errorf("%s failed (code %d): %s", e.export, ret, truncate(errText, 512))
		}
		// {"tools": [...]}, {"prompts": [...]}, ...: one list per export
		var one map[string]json.RawMessage
		if err := json.Unmarshal(c.Output, &one); err != nil {
			return nil, fmt.Errorf("%s returned invalid JSON: %w", e.export, err)
		}
		if v, ok := one[e.key]; ok {
			if err := json.Unmarshal(v, e.into); err != nil {
				return nil, fmt.Errorf("%s: %q: %w", e.export, e.key, err)
			}
		}
	}
	for i, t := range l.Tools {
		if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
			l.Tools[i].InputSchema = json.RawMessage(`{"type":"object"}`)
		}
	}
	return &l, nil
}

// checkExtism is checkReactor for the extism form: the module's interface,
// and every tool the manifest names listed by the module; the instance is
// kept warm.
func (r *Registry) checkExtism(ctx context.Context, p *Plugin) error {
	name := p.Manifest.Name
	exports := p.compiled.Exports()
	iface, err := detectExtism(exports)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", name, err)
	}
	p.extism = iface
	ctx, cancel := context.WithTimeout(ctx, p.Grant.Timeout)
	defer cancel()
	inst, err := p.compiled.Instantiate(ctx)
	if err != nil {
		return err
	}
	call := &hostfn.Call{Plugin: name, Owner: DefaultOwner, Grant: p.Grant, Log: p.log, MaxOutput: p.Grant.MaxResultBytes}
	l, err := listExtism(ctx, inst, call, r.extismVars, p.Manifest, p.Grant, iface, exports)
	if err != nil {
		inst.Close(ctx)
		return fmt.Errorf("plugin %s: %w", name, err)
	}
	listed := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		listed[i] = t.Name
	}
	return p.keepChecked(ctx, inst, listed)
}

// DescribeExtism writes the manifest of an unchanged Extism module: its
// tools (and prompts and resources) as the module lists them, called once
// with HTTP refused, form "extism", pinned by sha256. name names the
// plugin; caps are the capabilities it requests.
func DescribeExtism(ctx context.Context, eng runtime.Engine, wasm []byte, name string, want abi.Capabilities) (*abi.Manifest, []byte, error) {
	// compiling is bounded by ctx only (minutes for a large module on a
	// slow machine); running the module by a minute
	c, err := eng.Compile(ctx, wasm, runtime.Config{Name: name,
		Families: []hostfn.Family{core.New(), extism.Env(), extism.HTTPDenied()}})
	if err != nil {
		return nil, nil, err
	}
	defer c.Close(ctx)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	iface, err := detectExtism(c.Exports())
	if err != nil {
		return nil, nil, err
	}
	inst, err := c.Instantiate(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer inst.Close(ctx)
	m := &abi.Manifest{Name: name, Version: "0.0.0", ABI: abi.Version, Form: abi.FormExtism, Module: "plugin.wasm", Capabilities: want}
	call := &hostfn.Call{Plugin: name, Owner: DefaultOwner, MaxOutput: 16 << 20}
	l, err := listExtism(ctx, inst, call, extism.NewVars(0), m, nil, iface, c.Exports())
	if err != nil {
		return nil, nil, err
	}
	m.Tools, m.Prompts, m.Resources, m.ResourceTemplates = l.Tools, l.Prompts, l.Resources, l.ResourceTemplates
	if m.Tools == nil {
		m.Tools = []abi.Tool{}
	}
	sum := sha256.Sum256(wasm)
	m.SHA256 = hex.EncodeToString(sum[:])
	if err := caps.ValidateManifest(m); err != nil {
		return nil, nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return m, append(b, '\n'), nil
}
