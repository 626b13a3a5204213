// Command browserinfo is the built-in plugin browser_get_info: the
// browser's user agent, its DevTools websocket URL and the sizes of the
// display and of the page's viewport, read over aiod:cdp. With no browser
// it answers isError saying what is missing. spec/sandbox-tools.md
// describes the tool.
package main

import (
	"encoding/json"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/cdp"
)

// Name is the tool's (and the plugin's) name.
const Name = "browser_get_info"

// InputSchema is the tool's input schema: no arguments.
const InputSchema = `{"properties":{},"type":"object"}`

// OutputSchema is the schema of Info.
const OutputSchema = `{"additionalProperties":false,"properties":{` +
	`"cdp_ui_url":{"type":["string","null"]},"cdp_url":{"type":"string"},` +
	`"page_viewport":{"anyOf":[` + viewportSchema + `,{"type":"null"}]},"user_agent":{"type":"string"},` +
	`"viewport":` + viewportSchema + `,"vnc_url":{"type":["string","null"]}` +
	`},"required":["cdp_ui_url","cdp_url","page_viewport","user_agent","viewport","vnc_url"],"type":"object"}`

const viewportSchema = `{"additionalProperties":false,"properties":{"height":{"type":"integer"},"width":{"type":"integer"}},"required":["height","width"],"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:         Name,
		Version:      "1.0.0",
		Description:  "aiod built-in: information about the browser (CDP URL, viewport).",
		Capabilities: abi.Capabilities{CDP: &abi.CDPScope{Methods: []string{"Runtime.evaluate"}}},
	})
	sdk.AddRawTool(sdk.Tool{
		Name:         Name,
		Title:        "Browser information",
		Description:  "Get information about browser, like cdp url, viewport size, etc.",
		InputSchema:  InputSchema,
		OutputSchema: OutputSchema,
		Annotations:  sdk.Behavior{ReadOnly: true, OpenWorld: true}.Annotations(),
	}, Run)
}

func main() {}

// Info is the tool's answer, its fields in aiod's order (keys sorted).
type Info struct {
	CDPUIURL     *string   `json:"cdp_ui_url"`
	CDPURL       string    `json:"cdp_url"`
	PageViewport *Viewport `json:"page_viewport"`
	UserAgent    string    `json:"user_agent"`
	Viewport     Viewport  `json:"viewport"`
	VNCURL       *string   `json:"vnc_url"`
}

// Viewport is a size, keys sorted.
type Viewport struct {
	Height int `json:"height"`
	Width  int `json:"width"`
}

// Run answers the browser's info.
func Run(_ *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
	bi, err := cdp.GetInfo()
	if err != nil {
		return sdk.ErrorResult("Failed to get browser info: " + err.Error()), nil
	}
	out := Info{CDPURL: bi.WebSocketURL, UserAgent: bi.UserAgent, Viewport: Viewport{Height: bi.Viewport.Height, Width: bi.Viewport.Width}}
	// The page's viewport, and (attached to a browser aiod did not start)
	// the display's size, from the first page.
	if s, err := cdp.Page(); err == nil {
		var res struct {
			Result struct {
				Value struct {
					W, H, SW, SH int
				} `json:"value"`
			} `json:"result"`
		}
		expr := map[string]any{"expression": "({W: innerWidth, H: innerHeight, SW: screen.width, SH: screen.height})", "returnByValue": true}
		if s.Call("Runtime.evaluate", expr, &res) == nil {
			v := res.Result.Value
			out.PageViewport = &Viewport{Height: v.H, Width: v.W}
			if bi.Mode == "attach" && v.SW > 0 {
				out.Viewport = Viewport{Height: v.SH, Width: v.SW}
			}
		}
	}
	return sdk.JSONResult(out, false), nil
}
