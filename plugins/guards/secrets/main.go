// Command secrets is the secret scanner guard (spec/hooks.md §3): it finds
// API keys, tokens, private keys and cloud credentials (package scan) in
// the arguments of a call and in its result. An operator switches it on
// in the policy: {"hooks": [{"plugin": "secrets", "tools": ["*"]}]}.
//
// Its config (the policy entry's "config"):
//   - "arguments": "block" (the default) denies a call whose arguments
//     hold a credential, naming its kinds; "redact" lets it run with them
//     redacted; "allow" lets it run as it is.
//   - "results": "redact" (the default) replaces each credential of a
//     result by [redacted:<kind>]; "block" withholds the whole result.
package main

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/aiodhq/aiod/plugins/guards/secrets/scan"
	"github.com/aiodhq/aiod/sdk"
)

// kindsOf lists the distinct kinds found, sorted.
func kindsOf(found []string) string {
	seen := map[string]bool{}
	var out []string
	for _, k := range found {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func before(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer {
	mode := ev.Config["arguments"]
	if mode == "allow" {
		return sdk.Allow()
	}
	redacted, found, err := scan.JSON(ev.Arguments)
	if err != nil {
		return sdk.Deny("the secrets guard could not read the arguments: " + err.Error())
	}
	if len(found) == 0 {
		return sdk.Allow()
	}
	if mode == "redact" {
		return sdk.Rewrite(json.RawMessage(redacted))
	}
	return sdk.Deny("the arguments hold a credential (" + kindsOf(found) + "): the call was not made")
}

func after(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer {
	redacted, found, err := scan.JSON(ev.Result)
	if err != nil {
		// not a JSON result: nothing this guard can vouch for
		return sdk.Replace(errorResult("the secrets guard could not read the result: " + err.Error()))
	}
	if len(found) == 0 {
		return sdk.Keep()
	}
	if ev.Config["results"] == "block" {
		return sdk.Replace(errorResult("the result of " + ev.Tool + " held a credential (" + kindsOf(found) + ") and was withheld by the secrets guard"))
	}
	return sdk.Replace(json.RawMessage(redacted))
}

func errorResult(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}, "isError": true})
	return b
}

func init() {
	sdk.Plugin(sdk.Info{Name: "secrets", Version: "1.0.0",
		Description: "Guard: finds credentials in tool arguments (blocks the call) and results (redacts them as [redacted:<kind>])."})
	sdk.BeforeHook([]string{"*"}, before)
	sdk.AfterHook([]string{"*"}, after)
}

func main() {}
