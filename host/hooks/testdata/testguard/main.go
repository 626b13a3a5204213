// Command testguard is the guard plugin of the hooks tests: what it
// answers is its policy entry's config ("before" and "after"), so that
// one module plays every guard, well-behaved or hostile.
package main

import (
	"encoding/json"
	"strings"

	"github.com/aiodhq/aiod/sdk"
)

var sink []byte

func answer(mode string, ev *sdk.HookEvent) sdk.HookAnswer {
	switch mode {
	case "", "allow":
		return sdk.Allow()
	case "keep":
		return sdk.Keep()
	case "deny":
		return sdk.Deny("testguard says no to " + ev.Tool + " for " + ev.Tenant + " (" + ev.Era + ")")
	case "rewrite":
		return sdk.Rewrite(json.RawMessage(`{"text":"rewritten by testguard"}`))
	case "rewrite-invalid":
		return sdk.Rewrite(json.RawMessage(`{"text":42}`))
	case "rewrite-not-object":
		return sdk.Rewrite(json.RawMessage(`[1]`))
	case "replace":
		return sdk.Replace(json.RawMessage(`{"content":[{"type":"text","text":"replaced by testguard"}]}`))
	case "add":
		return sdk.Add("testguard saw " + ev.Tool + ": " + strings.TrimSpace(string(ev.Result)))
	case "nonsense":
		return sdk.HookAnswer{Action: "maybe"}
	case "trap":
		var m map[string]int
		m["x"] = 1 // nil map write: a panic, which traps
	case "loop":
		for {
		}
	case "flood-output":
		return sdk.Add(strings.Repeat("x", 32<<20))
	case "flood":
		for {
			sink = append(sink, make([]byte, 1<<20)...)
		}
	}
	return sdk.HookAnswer{Action: "unknown mode " + mode}
}

func init() {
	sdk.Plugin(sdk.Info{Name: "testguard", Version: "1.0.0", Description: "The hooks tests' guard: answers as its config says."})
	sdk.BeforeHook([]string{"*"}, func(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer { return answer(ev.Config["before"], ev) })
	sdk.AfterHook([]string{"*"}, func(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer { return answer(ev.Config["after"], ev) })
}

func main() {}
