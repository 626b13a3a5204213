// Command tally-go is the tally example plugin in Go (the SDK). Tools:
// echo (the text back) and count (a per-client counter kept in
// aiod:state). The same tools, with the same answers, exist in C, Rust and
// AssemblyScript (plugins/examples/tally-*; host/e2e TestTallyLanguages).
// Build: aiod plugin build plugins/examples/tally-go.
package main

import (
	"strconv"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/state"
)

// EchoArgs are echo's arguments.
type EchoArgs struct {
	Text *string `json:"text"`
}

// CountArgs are count's arguments.
type CountArgs struct {
	Name string `json:"name"`
}

// Echo returns the text unchanged.
func Echo(_ *sdk.Ctx, a EchoArgs) (*sdk.Result, error) {
	if a.Text == nil {
		return sdk.ErrorResult("text is required"), nil
	}
	return sdk.TextResult(*a.Text), nil
}

// Count adds one to the named counter and returns its new value.
func Count(_ *sdk.Ctx, a CountArgs) (*sdk.Result, error) {
	if a.Name == "" {
		return sdk.ErrorResult("name is required"), nil
	}
	key := "count/" + a.Name
	old, _, err := state.Get(key)
	if err != nil {
		return sdk.ErrorResult("state get failed: " + err.Error()), nil
	}
	n, _ := strconv.ParseInt(old, 10, 64)
	next := strconv.FormatInt(n+1, 10)
	if err := state.Set(key, next); err != nil {
		return sdk.ErrorResult("state set failed: " + err.Error()), nil
	}
	return sdk.TextResult(next), nil
}

func init() {
	sdk.Plugin(sdk.Info{Name: "tally-go", Version: "1.0.0",
		Description:  "Example plugin in Go: echo, and a per-client counter kept in aiod:state.",
		Capabilities: abi.Capabilities{State: &abi.StateScope{MaxBytes: 65536}}})
	sdk.AddTool(sdk.Tool{
		Name:        "echo",
		Description: "Echo the given text back as one text content block.",
		InputSchema: `{"type":"object","properties":{"text":{"type":"string","description":"the text to echo back"}},"required":["text"],"additionalProperties":false}`,
	}, Echo)
	sdk.AddTool(sdk.Tool{
		Name:        "count",
		Description: "Add one to the named counter (kept per client in aiod:state) and return its new value.",
		InputSchema: `{"type":"object","properties":{"name":{"type":"string","description":"the counter's name"}},"required":["name"],"additionalProperties":false}`,
	}, Count)
}

func main() {}
