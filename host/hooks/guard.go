package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// guardEvent is the abi.HookEvent of ev for guard h, as JSON: the guard's
// config, then eventBody.
func guardEvent(h *caps.Hook, ev *Event) ([]byte, error) {
	return eventFor(nil, h, eventBody(nil, ev)), nil
}

// eventBody appends the members of the abi.HookEvent of ev but the
// guard's config to b, as JSON, without the braces (eventFor adds them and
// the config): what json.Marshal of an abi.HookEvent gives, keys aside,
// without its reflection. A phase encodes it once for all its guards
// (again only when a guard changed the arguments or the result). The
// arguments and the result are spliced in as they are: the protocol layer
// decoded the arguments, and the result is a checked JSON object. They
// come last, and the config first (spec/hooks.md §1): a guard's reader
// that looks for a small member finds it before the large ones, and a
// no-op guard's look for its config stops at the first member (scanning
// the arguments and the result for a config that is not there was half
// of the C example guard's op).
func eventBody(b []byte, ev *Event) []byte {
	b = append(b, `"tenant":`...)
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
	return b
}

// eventFor appends guard h's event to b: its config ({} without one),
// then body, in braces.
func eventFor(b []byte, h *caps.Hook, body []byte) []byte {
	b = append(b, `{"config":`...)
	if len(h.Config) > 0 {
		b = jsonx.Append(b, h.Config)
	} else {
		b = append(b, `{}`...)
	}
	b = append(b, ',')
	b = append(b, body...)
	return append(b, '}')
}

// phaseEvent is the event of one phase of a call, its body encoded once
// for its guards, in a buffer of the chain's pool: the body, then the
// event of the guard being asked.
type phaseEvent struct {
	buf  *[]byte
	body int // the body's length; 0: not encoded (or stale)
}

// of is the event for guard h.
func (pe *phaseEvent) of(h *caps.Hook, ev *Event) []byte {
	if pe.buf == nil {
		pe.buf = eventBufs.Get().(*[]byte)
	}
	b := *pe.buf
	if pe.body == 0 {
		b = eventBody(b[:0], ev)
		pe.body = len(b)
	}
	b = eventFor(b[:pe.body], h, b[:pe.body])
	*pe.buf = b
	return b[pe.body:]
}

// stale marks the event changed (rewritten arguments, a new result).
func (pe *phaseEvent) stale() { pe.body = 0 }

// release gives the buffer back (big ones are dropped).
func (pe *phaseEvent) release() {
	if pe.buf != nil && cap(*pe.buf) <= 64<<10 {
		eventBufs.Put(pe.buf)
	}
	pe.buf = nil
}

var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// askGuard runs hook op of guard st.h with event and decodes its answer;
// an error is a failure of the guard (not loaded, trapped, out of time or
// memory, an answer that does not decode).
func (c *Chain) askGuard(ctx context.Context, st *step, op uint64, req mcp.CallRequest, event []byte) (*abi.HookAnswer, error) {
	if c.o.Guards == nil {
		return nil, errors.New("no guard plugins on this host")
	}
	if st.missing {
		return nil, fmt.Errorf("guard plugin %s is not loaded (or declares no hooks)", st.h.Plugin)
	}
	out, err := c.o.Guards.CallGuard(ctx, st.h.Plugin, op, req.Owner, req.Name, event)
	if err != nil {
		return nil, err
	}
	return decodeAnswer(out)
}

// decodeAnswer decodes a guard's answer: one abi.HookAnswer object, no
// unknown member. The two answers most calls get, as the SDKs write them,
// are recognised as they are.
func decodeAnswer(out []byte) (*abi.HookAnswer, error) {
	switch string(out) {
	case `{"action":"allow"}`:
		return &allow, nil
	case `{"action":"keep"}`:
		return &keep, nil
	}
	if !isObject(out) {
		return nil, errors.New("an answer that is not one JSON object")
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

// guardBefore runs guard st.h before a call: the rewritten arguments
// (nil: unchanged) or, when the call must not run, the result to answer
// with.
func (c *Chain) guardBefore(ctx context.Context, st *step, req mcp.CallRequest, ev *Event, event []byte) (args, res []byte) {
	h := st.h
	a, err := c.askGuard(ctx, st, abi.OpHookBefore, req, event)
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

// guardAfter runs guard st.h after a call: the result to go on with.
func (c *Chain) guardAfter(ctx context.Context, st *step, req mcp.CallRequest, ev *Event, event, res []byte) []byte {
	h := st.h
	a, err := c.askGuard(ctx, st, abi.OpHookAfter, req, event)
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
