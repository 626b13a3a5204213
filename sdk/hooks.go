package sdk

import (
	"encoding/json"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Guard plugins (ABI v1.1, spec/hooks.md §1): a plugin that registers a
// hook sees the calls of other tools, before they run or after, once the
// operator's policy switches it on ({"hooks": [{"plugin": "<name>"}]}).

// HookEvent is what a guard is told about a call (abi.HookEvent).
type HookEvent = abi.HookEvent

// HookAnswer is a guard's answer (abi.HookAnswer); Allow, Deny, Rewrite,
// Keep, Replace and Add make one.
type HookAnswer = abi.HookAnswer

// Allow lets the call go on.
func Allow() HookAnswer { return HookAnswer{Action: abi.HookAllow} }

// Deny stops the call before it runs; the model is shown reason.
func Deny(reason string) HookAnswer { return HookAnswer{Action: abi.HookDeny, Reason: reason} }

// Rewrite lets the call go on with args (a JSON object) instead of its
// own arguments; the tool still checks them.
func Rewrite(args json.RawMessage) HookAnswer {
	return HookAnswer{Action: abi.HookRewrite, Arguments: args}
}

// Keep lets the result go on unchanged.
func Keep() HookAnswer { return HookAnswer{Action: abi.HookKeep} }

// Replace puts result (a CallToolResult object) in the place of the
// call's result: a redacted one, say.
func Replace(result json.RawMessage) HookAnswer {
	return HookAnswer{Action: abi.HookReplace, Result: result}
}

// Add adds text to the result, as a block marked as the guard's.
func Add(text string) HookAnswer { return HookAnswer{Action: abi.HookAdd, Text: text} }

type hook struct {
	globs []string
	h     func(c *Ctx, ev *HookEvent) HookAnswer
}

var before, after *hook

// BeforeHook makes the plugin a guard that sees the calls of the tools
// whose names match globs ('*' matches any run of characters) before they
// run: h answers Allow, Deny or Rewrite. One per plugin.
func BeforeHook(globs []string, h func(c *Ctx, ev *HookEvent) HookAnswer) {
	if before != nil {
		panic("sdk: BeforeHook registered twice")
	}
	before = &hook{globs: globs, h: h}
}

// AfterHook makes the plugin a guard that sees the results of the calls of
// the tools whose names match globs: h answers Keep, Replace or Add. One
// per plugin.
func AfterHook(globs []string, h func(c *Ctx, ev *HookEvent) HookAnswer) {
	if after != nil {
		panic("sdk: AfterHook registered twice")
	}
	after = &hook{globs: globs, h: h}
}

// declaredHooks is the manifest's "hooks" (nil: not a guard).
func declaredHooks() *abi.Hooks {
	if before == nil && after == nil {
		return nil
	}
	var d abi.Hooks
	if before != nil {
		d.Before = before.globs
	}
	if after != nil {
		d.After = after.globs
	}
	return &d
}

// handleHook runs op 5 or 6: name is the tool, args the HookEvent.
func handleHook(op int32, name, args []byte) (out []byte, ret int32) {
	hk := before
	if op == abi.OpHookAfter {
		hk = after
	}
	if hk == nil {
		return nil, abi.RetUnknownOp
	}
	var ev HookEvent
	if err := decodeEvent(args, &ev); err != nil {
		return []byte("invalid hook event: " + err.Error()), abi.RetBadInput
	}
	ctx.tool = string(name)
	return appendAnswer(nil, hk.h(&ctx, &ev)), abi.RetOK
}

// decodeEvent decodes the host's HookEvent in one pass over its top
// level (jsonx.Members): encoding/json costs tens of microseconds per
// event in wasm, and validating the nested arguments and result again
// most of the rest (the host made them).
func decodeEvent(b []byte, ev *HookEvent) error {
	var err error
	str := func(raw []byte, dst *string) {
		if err == nil && string(raw) != "null" {
			*dst, err = jsonx.String(raw)
		}
	}
	if merr := jsonx.Members(b, func(key string, raw []byte) bool {
		switch key {
		case "tenant":
			str(raw, &ev.Tenant)
		case "era":
			str(raw, &ev.Era)
		case "session":
			str(raw, &ev.Session)
		case "tool":
			str(raw, &ev.Tool)
		case "arguments":
			ev.Arguments = append(json.RawMessage(nil), raw...)
		case "result":
			ev.Result = append(json.RawMessage(nil), raw...)
		case "config":
			if err == nil {
				ev.Config, err = jsonx.StringMap(raw)
			}
		}
		return err == nil
	}); merr != nil {
		return merr
	}
	return err
}

// appendAnswer encodes a as JSON without encoding/json's reflection. A
// RawMessage member that is not valid JSON is sent as null (the host then
// finds the answer wanting).
func appendAnswer(b []byte, a HookAnswer) []byte {
	b = append(b, `{"action":`...)
	b = jsonx.AppendString(b, a.Action)
	if a.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonx.AppendString(b, a.Reason)
	}
	if a.Text != "" {
		b = append(b, `,"text":`...)
		b = jsonx.AppendString(b, a.Text)
	}
	for _, m := range []struct {
		key string
		v   json.RawMessage
	}{{"arguments", a.Arguments}, {"result", a.Result}} {
		if len(m.v) == 0 {
			continue
		}
		b = append(b, `,"`+m.key+`":`...)
		if json.Valid(m.v) {
			b = append(b, m.v...)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}
