// Command echo is the example aiod plugin: tool "echo" returns its text.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm
// (make plugins does this and writes build/plugins/echo/).
package main

import "github.com/aiodhq/aiod/sdk"

// Args are echo's arguments.
type Args struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

// Echo returns the text unchanged as one text content block.
func Echo(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	return sdk.TextResult(a.Text), nil
}

func init() {
	sdk.Plugin(sdk.Info{Name: "echo", Version: "1.0.0", Description: "Example plugin: echoes text."})
	sdk.AddTool(sdk.Tool{
		Name:        "echo",
		Title:       "Echo",
		Description: "Echo the given text back as one text content block.",
		InputSchema: `{"type":"object","properties":{"text":{"type":"string","description":"the text to echo back"}},"required":["text"],"additionalProperties":false}`,
		Annotations: &sdk.Annotations{ReadOnlyHint: sdk.Bool(true), IdempotentHint: sdk.Bool(true)},
	}, Echo)
}

func main() {}
