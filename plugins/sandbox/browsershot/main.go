// Command browsershot is the built-in plugin browser_gui_screenshot: a PNG
// of the browser's current viewport (the "display" of a browser driven
// over CDP), as MCP image content. With no browser it answers isError
// saying what is missing. spec/sandbox-tools.md describes the tool.
package main

import (
	"encoding/base64"
	"encoding/json"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/cdp"
)

// Name is the tool's (and the plugin's) name.
const Name = "browser_gui_screenshot"

// InputSchema is the tool's input schema: no arguments.
const InputSchema = `{"properties":{},"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: a screenshot of the browser's display.",
		Capabilities: abi.Capabilities{CDP: &abi.CDPScope{Methods: []string{"Page.captureScreenshot"}}},
	})
	sdk.AddRawTool(sdk.Tool{
		Name:        Name,
		Title:       "Screenshot of the display",
		Description: "Take a screenshot of the current display (the browser's viewport), as a PNG image.",
		InputSchema: InputSchema,
		Annotations: sdk.Behavior{ReadOnly: true, OpenWorld: true}.Annotations(),
	}, Run)
}

func main() {}

// Run answers the screenshot.
func Run(_ *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
	s, err := cdp.Page()
	if err != nil {
		return sdk.ErrorResult("Failed to take screenshot: " + err.Error()), nil
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := s.Call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return sdk.ErrorResult("Failed to take screenshot: " + err.Error()), nil
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		return sdk.ErrorResult("Failed to take screenshot: the browser did not answer a PNG image"), nil
	}
	return &sdk.Result{Content: []sdk.Content{sdk.Image(png, "image/png")}}, nil
}
