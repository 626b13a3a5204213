// Command audit is the audit-enrichment guard (spec/hooks.md §3): after a
// call it adds to the result's _meta, under "aiod.dev/audit", what the
// audit log records of the call beyond its own entry (host/audit reads it
// there): the names of the arguments (never their values), the kinds of
// the result's content blocks, whether the tool reported an error, and the
// operator's labels (the config's "label:<name>" keys). The model is shown
// nothing new.
//
//	{"hooks": [{"plugin": "audit", "config": {"label:team": "payments"}}]}
package main

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// MetaKey is where the enrichment goes in the result's _meta.
const MetaKey = "aiod.dev/audit"

func after(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer {
	var res map[string]json.RawMessage
	if json.Unmarshal(ev.Result, &res) != nil || res == nil {
		return sdk.Keep()
	}
	enr := map[string]any{}
	var args map[string]json.RawMessage
	if json.Unmarshal(ev.Arguments, &args) == nil {
		names := make([]any, 0, len(args))
		keys := make([]string, 0, len(args))
		for k := range args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			names = append(names, k)
		}
		enr["argument_names"] = names
	}
	var content []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(res["content"], &content) == nil {
		kinds := make([]any, 0, len(content))
		for _, c := range content {
			kinds = append(kinds, c.Type)
		}
		enr["content_types"] = kinds
	}
	enr["is_error"] = bytes.Equal(bytes.TrimSpace(res["isError"]), []byte("true"))
	labels := map[string]string{}
	for k, v := range ev.Config {
		if name, ok := strings.CutPrefix(k, "label:"); ok {
			labels[name] = v
		}
	}
	if len(labels) > 0 {
		enr["labels"] = labels
	}
	meta := map[string]json.RawMessage{}
	if m, ok := res["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return sdk.Keep() // a _meta that is not an object: leave the result alone
	}
	meta[MetaKey] = jsonx.Marshal(enr)
	mb, err := json.Marshal(meta)
	if err != nil {
		return sdk.Keep()
	}
	res["_meta"] = mb
	out, err := json.Marshal(res)
	if err != nil {
		return sdk.Keep()
	}
	return sdk.Replace(out)
}

func init() {
	sdk.Plugin(sdk.Info{Name: "audit", Version: "1.0.0",
		Description: "Guard: adds argument names, content kinds, the error flag and the operator's labels to the audit log (the result's _meta)."})
	sdk.AfterHook([]string{"*"}, after)
}

func main() {}
