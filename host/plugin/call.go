package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/mcp/catalog"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// CallRequest is one call into the registry (the protocol layer's type,
// host/mcp/catalog).
type CallRequest = catalog.CallRequest

// CallTool runs a tool and returns its CallToolResult as JSON. Failures of
// the tool (limits, traps, bad output) come back as isError results; only
// an unknown tool (ErrUnknownTool) or a cancelled request is an error.
func (r *Registry) CallTool(ctx context.Context, req CallRequest) ([]byte, error) {
	return r.invokeCurrent(ctx, abi.OpToolCall, func(cat *Catalog) (*Plugin, CallRequest, error) {
		t := cat.byName[req.Name]
		if t == nil {
			return nil, req, ErrUnknownTool
		}
		return t.Plugin, req, nil
	})
}

// invokeCurrent runs op on the plugin lookup finds in the current
// catalogue. A reload can swap the catalogue and retire that plugin
// between the lookup and invoke's reference (invoke then finds it closed):
// the call goes to the new catalogue's plugin instead, for every operation
// (tools, prompts, resources, completions).
func (r *Registry) invokeCurrent(ctx context.Context, op uint64, lookup func(*Catalog) (*Plugin, CallRequest, error)) ([]byte, error) {
	for {
		cat := r.cat.Load()
		p, req, err := lookup(cat)
		if err != nil {
			return nil, err
		}
		out, err := r.invoke(ctx, p, op, req)
		if err == ErrUnknownTool && r.cat.Load() != cat && p.closed.Load() {
			continue
		}
		return out, err
	}
}

// invoke runs one aiod_call operation on p. For tools, failures of the
// plugin come back as isError results; for the other operations (which
// have no such result) they are errors. ErrInputRequired and *RPCError
// report the plugin's two other ways to end a call.
func (r *Registry) invoke(ctx context.Context, p *Plugin, op uint64, req CallRequest) ([]byte, error) {
	return r.invokeOp(ctx, p, op, req, true)
}

// run is invoke on a plugin being loaded, whose start-up load is not over
// (its configure operation): it does not wait for the load to end.
func (r *Registry) run(ctx context.Context, p *Plugin, op uint64, req CallRequest) ([]byte, error) {
	return r.invokeOp(ctx, p, op, req, false)
}

func (r *Registry) invokeOp(ctx context.Context, p *Plugin, op uint64, req CallRequest, await bool) ([]byte, error) {
	if !tracing.On() {
		return r.callOp(ctx, p, op, req, await)
	}
	owner := req.Owner
	if owner == "" {
		owner = DefaultOwner
	}
	ctx, sp := tracing.Start(ctx, tracing.SpanPluginCall, tracing.AttrPlugin.String(p.Manifest.Name), tracing.AttrTool.String(req.Name),
		tracing.AttrTenant.String(owner), attribute.String("aiod.op", opName(op)))
	out, err := r.callOp(ctx, p, op, req, await)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case bytes.Contains(out, []byte(`"isError":true`)):
		outcome = "tool_error"
	}
	sp.SetAttributes(tracing.AttrBytes.Int(len(out)))
	tracing.End(sp, outcome)
	return out, err
}

// callOp is invokeOp without its span.
func (r *Registry) callOp(ctx context.Context, p *Plugin, op uint64, req CallRequest, await bool) ([]byte, error) {
	// hold the plugin until the call ends, even if a reload retires it
	p.refs.Add(1)
	defer r.releasePlugin(p)
	if p.closed.Load() {
		return nil, ErrUnknownTool
	}
	owner := req.Owner
	if owner == "" {
		owner = DefaultOwner
	}
	args := req.Args
	if len(args) == 0 {
		args = []byte("{}")
	}
	parent := ctx
	dctx := withTimeout(ctx, p.Grant.Timeout)
	defer func() { dctx.stop() }()
	ctx = dctx
	var loadErr error
	if await {
		loadErr = p.await(ctx)
	}
	if err := loadErr; err != nil {
		// listed at start-up, and still compiling or refused since
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return nil, ctx.Err()
		}
		if op != abi.OpToolCall {
			return nil, fmt.Errorf("plugin %s is not available: %w", p.Manifest.Name, err)
		}
		return toolError("tool %s: plugin %s is not available: %v", req.Name, p.Manifest.Name, err), nil
	}
	if l, ok := p.compiled.(*lazyCompiled); ok && l.asleep.Load() {
		// a dormant module is compiled again first (lazyCompiled.awaken),
		// and the call's deadline starts once it is awake
		l.awaken(parent)
		dctx.stop()
		dctx = withTimeout(parent, p.Grant.Timeout)
		ctx = dctx
	}

	pc := r.calls.Get().(*pooledCall)
	c := &pc.Call
	defer func() { c.Reset(); r.calls.Put(pc) }()
	c.Plugin, c.Owner, c.Grant, c.Log = p.Manifest.Name, owner, p.Grant, p.log
	c.MaxOutput = p.Grant.MaxResultBytes
	c.Notify = req.Notify
	c.Client = req.Client
	if conf := p.conf.Load(); conf != nil {
		c.Configuration = conf.call
	}
	in := append(c.Output[:0], req.Name...) // borrow Output's buffer for the input
	in = append(in, args...)
	c.Input = in
	dctx.call = c // the engine's host functions find it there
	c.Output = nil
	if op == abi.OpHookBefore || op == abi.OpHookAfter {
		// the buffer a fixed answer left (a tool's result is returned,
		// and would take it with it)
		c.Output, pc.spare = pc.spare[:0], nil
	}

	if p.extism != 0 {
		return r.invokeExtism(ctx, p, op, req, c, owner, args)
	}
	if p.command {
		if op != abi.OpToolCall {
			return nil, errUnknownOp
		}
		return r.callCommand(ctx, p, c, req.Name, args)
	}
	var wsp trace.Span
	if tracing.On() {
		_, wsp = tracing.Start(ctx, tracing.SpanInstanceWait, tracing.AttrPlugin.String(p.Manifest.Name), tracing.AttrTenant.String(owner))
	}
	pl, inst, err := p.get(ctx, owner)
	if wsp != nil {
		tracing.End(wsp, okOr(err, "error"))
	}
	if err != nil {
		// an isError result for a tool call only: the other operations
		// have no such result, and a hook op's output would be taken for
		// the guard's own answer (as invokeExtism's fail does)
		fail := func(format string, a ...any) ([]byte, error) {
			if op != abi.OpToolCall {
				return nil, fmt.Errorf(format, a...)
			}
			return toolError(format, a...), nil
		}
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
			return fail("tool %s: no instance became free before the deadline (timeout %s)", req.Name, p.Grant.Timeout)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fail("tool %s: cannot start plugin %s: %v", req.Name, p.Manifest.Name, err)
	}
	runCtx := ctx
	var rsp trace.Span
	if tracing.On() {
		runCtx, rsp = tracing.Start(ctx, tracing.SpanPluginRun, tracing.AttrPlugin.String(p.Manifest.Name), tracing.AttrTool.String(req.Name))
	}
	pc.params = [3]uint64{op, uint64(len(req.Name)), uint64(len(args))} // not a new variadic slice
	ret, err := inst.Call(runCtx, c, abi.ExportCall, pc.params[:]...)
	if rsp != nil {
		tracing.End(rsp, okOr(err, "trap"))
	}
	out := c.Output
	c.Output = in[:0] // give the buffer back for reuse
	if err != nil {
		return r.callFailed(ctx, pl, inst, p, req.Name, op, err)
	}
	pl.done(ctx, inst)
	switch ret {
	case abi.RetOK:
	case abi.RetInputRequired:
		return nil, ErrInputRequired
	case abi.RetRPCError:
		if !validResult(out) {
			return nil, fmt.Errorf("plugin %s answered %s with an invalid JSON-RPC error", p.Manifest.Name, req.Name)
		}
		return nil, &RPCError{Body: append(json.RawMessage(nil), out...)}
	case abi.RetUnknownName:
		if op != abi.OpToolCall {
			return nil, fmt.Errorf("plugin %s does not implement %s", p.Manifest.Name, req.Name)
		}
		return toolError("plugin %s does not implement tool %s", p.Manifest.Name, req.Name), nil
	case abi.RetUnknownOp:
		if op != abi.OpToolCall {
			return nil, errUnknownOp
		}
		fallthrough
	default:
		if op != abi.OpToolCall {
			return nil, fmt.Errorf("plugin %s failed %s with code %d: %s", p.Manifest.Name, req.Name, ret, truncate(string(out), 512))
		}
		return toolError("plugin %s failed tool %s with code %d: %s", p.Manifest.Name, req.Name, ret, truncate(string(out), 512)), nil
	}
	if op == abi.OpHookBefore || op == abi.OpHookAfter {
		// unchecked: the hook chain decodes the answer strictly
		// (CallGuard), and recognises the common ones as they are; those
		// two are answered as constants, and their buffer kept for the
		// next call's output
		if a := fixedAnswer(out); a != nil {
			pc.spare = out[:0]
			return a, nil
		}
		return out, nil
	}
	if !core.ValidObject(out, c.Spliced) {
		if op != abi.OpToolCall {
			return nil, fmt.Errorf("plugin %s returned an invalid result for %s (not a JSON object)", p.Manifest.Name, req.Name)
		}
		return toolError("plugin %s returned an invalid result for tool %s (not a JSON object)", p.Manifest.Name, req.Name), nil
	}
	return out, nil
}

// pooledCall is a call's state, pooled: the host functions' Call and a
// spare output buffer (a hook's fixed answer gives its output back).
type pooledCall struct {
	hostfn.Call
	spare  []byte
	params [3]uint64 // aiod_call's (an interface's variadic arguments escape)
}

// The hook answers the SDKs write for allow and keep, as CallGuard answers
// them (its callers must not change them).
var (
	answerAllow = []byte(`{"action":"allow"}`)
	answerKeep  = []byte(`{"action":"keep"}`)
)

// fixedAnswer is the constant of hook answer out when it is allow or keep
// as the SDKs write them (nil otherwise).
func fixedAnswer(out []byte) []byte {
	switch string(out) {
	case `{"action":"allow"}`:
		return answerAllow
	case `{"action":"keep"}`:
		return answerKeep
	}
	return nil
}

// opName names an aiod_call operation in a span.
func opName(op uint64) string {
	switch op {
	case abi.OpToolCall:
		return "tools/call"
	case abi.OpPromptGet:
		return "prompts/get"
	case abi.OpResourceRead:
		return "resources/read"
	case abi.OpComplete:
		return "completion/complete"
	case abi.OpHookBefore:
		return "hook_before"
	case abi.OpHookAfter:
		return "hook_after"
	case abi.OpConfigure:
		return "configure"
	}
	return "describe"
}

// okOr is "ok" without err, else failed.
func okOr(err error, failed string) string {
	if err != nil {
		return failed
	}
	return "ok"
}

// toolErrorText extracts the message of a toolError result.
func toolErrorText(b []byte) string {
	var v struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(b, &v) == nil && len(v.Content) > 0 {
		return v.Content[0].Text
	}
	return string(b)
}

func (r *Registry) callCommand(ctx context.Context, p *Plugin, c *hostfn.Call, name string, args []byte) ([]byte, error) {
	stdin, _ := json.Marshal(map[string]any{"op": "tools/call", "name": name, "arguments": json.RawMessage(args)})
	out, code, err := p.compiled.RunCommand(ctx, c, stdin, p.Grant.MaxResultBytes)
	if err != nil {
		return r.failure(p, name, err), nil
	}
	if code != 0 {
		return toolError("plugin %s exited with code %d for tool %s: %s", p.Manifest.Name, code, name, truncate(string(out), 512)), nil
	}
	out = trimSpace(out)
	if !validResult(out) {
		return toolError("plugin %s returned an invalid result for tool %s (stdout is not one JSON object)", p.Manifest.Name, name), nil
	}
	return append([]byte(nil), out...), nil
}

func (r *Registry) failure(p *Plugin, tool string, err error) []byte {
	var tl hostfn.ErrResultTooLarge
	switch {
	case errors.As(err, &tl):
		p.log.Warn("result too large", "tool", tool, "limit", tl.Limit)
		return toolError("tool %s: result exceeds the limit max_result_bytes=%d", tool, tl.Limit)
	case errors.Is(err, runtime.ErrTimeout):
		p.log.Warn("call timed out", "tool", tool, "timeout", p.Grant.Timeout)
		return toolError("tool %s exceeded its time limit (timeout %s) and was stopped", tool, p.Grant.Timeout)
	case errors.Is(err, runtime.ErrFuel):
		p.log.Warn("fuel limit", "tool", tool, "fuel", p.Grant.Fuel)
		return toolError("tool %s exceeded its fuel limit (fuel=%d) and was stopped", tool, p.Grant.Fuel)
	case errors.Is(err, runtime.ErrMemory):
		p.log.Warn("memory limit", "tool", tool, "err", err)
		return toolError("tool %s exceeded its memory limit (memory_mib=%d) and was stopped", tool, p.Grant.MemoryPages/16)
	default:
		p.log.Warn("plugin trapped", "tool", tool, "err", err)
		return toolError("tool %s failed: %s", tool, truncate(err.Error(), 1024))
	}
}

func validResult(b []byte) bool {
	return len(b) > 1 && b[0] == '{' && json.Valid(b)
}

func trimSpace(b []byte) []byte {
	return []byte(strings.TrimSpace(string(b)))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// toolError renders an isError CallToolResult.
func toolError(format string, a ...any) []byte {
	msg := fmt.Sprintf(format, a...)
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": msg}},
		"isError": true,
	})
	return b
}

// callFailed discards inst, whose call of op failed with err (a trap, the
// deadline, a cancellation): a tool call answers the failure as an
// isError result, other operations as an error (the context's own when
// the client cancelled).
func (r *Registry) callFailed(ctx context.Context, pl *pool, inst runtime.Instance, p *Plugin, name string, op uint64, err error) ([]byte, error) {
	pl.discard(inst)
	if op != abi.OpToolCall {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s", toolErrorText(r.failure(p, name, err)))
	}
	return r.failure(p, name, err), nil
}
