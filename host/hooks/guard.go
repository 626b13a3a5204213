package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// guardEvent is the abi.HookEvent of ev for guard h, as JSON (what
// json.Marshal of an abi.HookEvent gives, keys aside, without its
// reflection: a guard is asked on every call it applies to). The
// arguments and the result are spliced in as they are: the protocol layer
// decoded the arguments, and the result is a checked JSON object.
func guardEvent(h caps.Hook, ev *Event) ([]byte, error) {
	n := 96 + len(ev.Tenant) + len(ev.Era) + len(ev.Session) + len(ev.Tool) + len(ev.Input)
	if ev.Outcome != nil {
		n += len(ev.Outcome.Result)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"tenant":`...)
	b = jsonx.AppendString(b, ev.Tenant)
	if ev.Era != "" {
		b = append(b, `,"era":`...)
		b = jsonx.AppendString(b, ev.Era)
	}
	if ev.Session != "" {
		b = append(b, `,"session":`...)
		b = jsonx.AppendString(b, ev.Session)
	}
	b = append(b, `,"tool":`...)
	b = jsonx.AppendString(b, ev.Tool)
	b = append(b, `,"arguments":`...)
	b = append(b, ev.Input...)
	if ev.Outcome != nil {
		b = append(b, `,"result":`...)
		b = append(b, ev.Outcome.Result...)
	}
	if len(h.Config) > 0 {
		b = append(b, `,"config":`...)
		b = jsonx.Append(b, h.Config)
	}
	return append(b, '}'), nil
}

// askGuard runs hook op of guard h and decodes its answer; an error is a
// failure of the guard (not loaded, trapped, out of time or memory, an
// answer that does not decode).
func (c *Chain) askGuard(ctx context.Context, h caps.Hook, op uint64, req mcp.CallRequest, ev *Event) (*abi.HookAnswer, error) {
	if c.o.Guards == nil {
		return nil, errors.New("no guard plugins on this host")
	}
	if _, ok := c.o.Guards.Guard(h.Plugin); !ok {
		return nil, fmt.Errorf("guard plugin %s is not loaded (or declares no hooks)", h.Plugin)
	}
	in, err := guardEvent(h, ev)
	if err != nil {
		return nil, err
	}
	out, err := c.o.Guards.CallGuard(ctx, h.Plugin, op, req.Owner, req.Name, in)
	if err != nil {
		return nil, err
	}
	// the two answers most calls get, as the Go SDK writes them
	switch string(out) {
	case `{"action":"allow"}`:
		return &allow, nil
	case `{"action":"keep"}`:
		return &keep, nil
	}
	var a abi.HookAnswer
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("an answer that is not a hook answer: %v", err)
	}
	return &a, nil
}

var (
	allow = abi.HookAnswer{Action: abi.HookAllow}
	keep  = abi.HookAnswer{Action: abi.HookKeep}
)

// guardBefore runs guard h before a call: the rewritten arguments (nil:
// unchanged) or, when the call must not run, the result to answer with.
func (c *Chain) guardBefore(ctx context.Context, h caps.Hook, req mcp.CallRequest, ev *Event) (args, res []byte) {
	a, err := c.askGuard(ctx, h, abi.OpHookBefore, req, ev)
	if err == nil {
		switch a.Action {
		case abi.HookAllow:
			return nil, nil
		case abi.HookDeny:
			reason := a.Reason
			if reason == "" {
				reason = "no reason given"
			}
			return nil, Blocked(h.Label(), reason)
		case abi.HookRewrite:
			if isObject(a.Arguments) {
				return a.Arguments, nil
			}
			err = errors.New("a rewrite whose arguments are not a JSON object")
		default:
			err = fmt.Errorf("the answer %q before a call (want allow, deny or rewrite)", a.Action)
		}
	}
	if h.FailOpen {
		c.o.Logger.Warn("guard failed before a call; fail_open: the call goes on", "guard", h.Plugin, "tool", req.Name, "tenant", ev.Tenant, "err", err)
		return nil, nil
	}
	c.o.Logger.Warn("guard failed before a call: the call is stopped", "guard", h.Plugin, "tool", req.Name, "tenant", ev.Tenant, "err", err)
	return nil, Failed(h.Label(), err)
}

// guardAfter runs guard h after a call: the result to go on with.
func (c *Chain) guardAfter(ctx context.Context, h caps.Hook, req mcp.CallRequest, ev *Event, res []byte) []byte {
	a, err := c.askGuard(ctx, h, abi.OpHookAfter, req, ev)
	if err == nil {
		switch a.Action {
		case abi.HookKeep:
			return res
		case abi.HookReplace:
			if isObject(a.Result) {
				return a.Result
			}
			err = errors.New("a replacement that is not a JSON object")
		case abi.HookAdd:
			if a.Text == "" {
				return res
			}
			b, aerr := AddText(res, h.Label(), clip(a.Text, MaxAddedBytes))
			if aerr == nil {
				return b
			}
			c.o.Logger.Warn("guard's text not added: the result is not a tool result object", "guard", h.Plugin, "tool", req.Name, "err", aerr)
			return res
		default:
			err = fmt.Errorf("the answer %q after a call (want keep, replace or add)", a.Action)
		}
	}
	if h.FailOpen {
		c.o.Logger.Warn("guard failed after a call; fail_open: the result goes on", "guard", h.Plugin, "tool", req.Name, "tenant", ev.Tenant, "err", err)
		return res
	}
	c.o.Logger.Warn("guard failed after a call: the result is withheld", "guard", h.Plugin, "tool", req.Name, "tenant", ev.Tenant, "err", err)
	return Failed(h.Label(), err)
}

// Failed is the CallToolResult of a call a failing guard stopped (before
// it ran, or its result withheld after): an isError result naming the
// guard and the failure.
func Failed(label string, err error) []byte {
	text := "Stopped: the operator's " + label + " failed (the call fails closed): " + clip(err.Error(), MaxReasonBytes)
	b, _ := json.Marshal(map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text, "_meta": map[string]string{MetaKey: label}}},
		"isError": true,
	})
	return b
}

// isObject reports whether b is one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && json.Valid(b)
}
