// Command argpolicy is the argument-policy guard (spec/hooks.md §3): it
// denies a call whose arguments hold, at a JSON path, a value matching a
// pattern of the operator's. Its config holds the rules, one per key:
//
//	{"hooks": [{"plugin": "argpolicy", "tools": ["sandbox_execute_bash"],
//	  "config": {"deny:cmd": "(^|[;&|]\\s*)(rm\\s+-rf\\s+/|shutdown|reboot)\\b"}}]}
//
// A config whose rules do not parse denies every call (the operator's
// mistake should not open the tools).
package main

import (
	"sort"

	"github.com/aiodhq/aiod/plugins/guards/argpolicy/rules"
	"github.com/aiodhq/aiod/sdk"
)

// cache keeps the parsed rules of the last configs seen (instance memory
// is a cache: any call may land on a fresh instance).
var cache = map[string][]rules.Rule{}

func ruleSet(cfg map[string]string) ([]rules.Rule, error) {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	key := ""
	for _, k := range keys {
		key += k + "\x00" + cfg[k] + "\x00"
	}
	if rs, ok := cache[key]; ok && len(cache) < 64 {
		return rs, nil
	}
	rs, err := rules.Parse(cfg)
	if err == nil {
		if len(cache) >= 64 {
			clear(cache)
		}
		cache[key] = rs
	}
	return rs, err
}

func before(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer {
	rs, err := ruleSet(ev.Config)
	if err != nil {
		return sdk.Deny("the argument policy does not parse: " + err.Error())
	}
	r, at, ok, err := rules.Match(rs, ev.Arguments)
	switch {
	case err != nil:
		return sdk.Deny("the argument policy could not read the arguments: " + err.Error())
	case ok:
		return sdk.Deny("argument " + at + " matches the operator's rule " + r.String())
	}
	return sdk.Allow()
}

func init() {
	sdk.Plugin(sdk.Info{Name: "argpolicy", Version: "1.0.0",
		Description: "Guard: denies calls whose arguments match the operator's patterns at JSON paths (config deny:<path> = <regexp>)."})
	sdk.BeforeHook([]string{"*"}, before)
}

func main() {}
