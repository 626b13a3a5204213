// Command page is the page tools of the browser plane: the 21 tools of
// @agent-infra/mcp-server-browser 1.2.29 (browser_navigate,
// browser_click, browser_get_text, ...) with its names, arguments and
// answers, over aiod:cdp instead of a Node server and Puppeteer. The host
// lists them after the ten built-ins with --browser launch or
// --page-tools (spec/page-tools.md).
//
// The work is split between this module (which tab is current, the input
// events, the answers) and a script installed in the page (page.js: the
// clickable-element listing, markdown); the elements an index names stay
// in the page, so the module keeps no per-document state. What must
// outlive a call (the current tab, the order of the tabs, the downloads)
// is in aiod:state, one space per MCP client.
package main

import (
	_ "embed"
	"encoding/json"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Name is the plugin's name.
const Name = "browser_page_tools"

//go:embed page.js
var pageJS string

// MaxText bounds the text of an answer (page text, markdown, the
// clickable elements, an evaluation's result), in characters: a longer
// one is cut and says so.
const MaxText = 100_000

// Methods are the CDP methods the plugin sends (its cdp scope).
var Methods = []string{
	"Runtime.evaluate",
	"Page.enable", "Page.navigate", "Page.getNavigationHistory", "Page.navigateToHistoryEntry",
	"Page.captureScreenshot", "Page.bringToFront",
	"Input.dispatchMouseEvent", "Input.dispatchKeyEvent", "Input.insertText",
	"Target.createTarget", "Target.closeTarget",
	"Browser.setDownloadBehavior",
}

func init() {
	sdk.Plugin(sdk.Info{
		Name:        Name,
		Version:     "1.2.29",
		Description: "aiod page tools: navigate, read and act on web pages over CDP (the tools of @agent-infra/mcp-server-browser).",
		Capabilities: abi.Capabilities{
			CDP:   &abi.CDPScope{Methods: Methods, NewTargets: true},
			State: &abi.StateScope{MaxBytes: 1 << 20},
		},
		Limits: abi.Limits{TimeoutMs: 60_000},
	})
	for _, t := range tools {
		sdk.AddRawTool(sdk.Tool{
			Name:         t.name,
			Description:  t.desc,
			InputSchema:  json.RawMessage(t.in),
			OutputSchema: outputSchema(t.out),
			Annotations:  t.behavior.Annotations(),
		}, retrying(t.run))
	}
}

func main() {}

func outputSchema(s string) any {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

type tool struct {
	name, desc string
	in, out    string
	behavior   sdk.Behavior
	run        func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error)
}

const draft7 = `"$schema":"http://json-schema.org/draft-07/schema#"`

const noArgsStrict = `{"type":"object","properties":{},"additionalProperties":false,` + draft7 + `}`
const noArgs = `{"type":"object","properties":{}}`

var (
	readOnly = sdk.Behavior{ReadOnly: true, OpenWorld: true}
	acts     = sdk.Behavior{OpenWorld: true}
)

// tools are the 21 tools in @agent-infra/mcp-server-browser's order, with
// its schemas.
var tools = []tool{
	{"browser_navigate", "Navigate to a URL",
		`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false,` + draft7 + `}`, "", acts, navigate},
	{"browser_go_back", "Go back to the previous page", noArgs, "", acts, goBack},
	{"browser_go_forward", "Go forward to the next page", noArgs, "", acts, goForward},
	{"browser_form_input_fill", "Fill out an input field, before using the tool, Either 'index' or 'selector' must be provided",
		`{"type":"object","properties":{"selector":{"type":"string","description":"CSS selector for input field, priority use index, if index is not provided, use selector"},"index":{"type":"number","description":"Index of the element to fill"},"value":{"type":"string","description":"Value to fill"},"clear":{"type":"boolean","default":false,"description":"Whether to clear existing text before filling"}},"required":["value"],"additionalProperties":false,` + draft7 + `}`, "", acts, formInputFill},
	{"browser_get_markdown", "Get the markdown content of the current page", noArgsStrict, "", readOnly, getMarkdown},
	{"browser_get_text", "Get the text content of the current page", noArgsStrict, "", readOnly, getText},
	{"browser_read_links", "Get all links on the current page", noArgs,
		`{"type":"object","properties":{"links":{"type":"array","items":{"type":"object","properties":{"text":{"type":"string"},"href":{"type":"string"}},"required":["text","href"],"additionalProperties":false}}},"required":["links"],"additionalProperties":false,` + draft7 + `}`, readOnly, readLinks},
	{"browser_new_tab", "Open a new tab",
		`{"type":"object","properties":{"url":{"type":"string","description":"URL to open in the new tab"}},"required":["url"],"additionalProperties":false,` + draft7 + `}`, "", acts, newTab},
	{"browser_tab_list", "Get the list of tabs", noArgs,
		`{"type":"object","properties":{"tabList":{"type":"array","items":{"type":"object","properties":{"index":{"type":"number"},"active":{"type":"boolean"},"title":{"type":"string"},"url":{"type":"string"}},"required":["index","active","title","url"],"additionalProperties":false}}},"required":["tabList"],"additionalProperties":false,` + draft7 + `}`, readOnly, tabList},
	{"browser_switch_tab", "Switch to a specific tab",
		`{"type":"object","properties":{"index":{"type":"number","description":"Tab index to switch to"}},"required":["index"],"additionalProperties":false,` + draft7 + `}`, "", acts, switchTab},
	{"browser_close_tab", "Close the current tab", noArgs, "", acts, closeTab},
	{"browser_evaluate", "Execute JavaScript in the browser console",
		`{"type":"object","properties":{"script":{"type":"string","description":"JavaScript code to execute, () => { /* code */ }"}},"required":["script"],"additionalProperties":false,` + draft7 + `}`, "", acts, evaluate},
	{"browser_get_download_list", "Get the list of downloaded files", noArgs,
		`{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"guid":{"type":"string"},"url":{"type":"string"},"suggestedFilename":{"type":"string"},"resourceUri":{"type":"string"},"createdAt":{"type":"string"},"progress":{"type":"number"},"state":{"type":"string"}},"additionalProperties":false}}},"required":["list"],"additionalProperties":false,` + draft7 + `}`, readOnly, downloadList},
	{"browser_screenshot", "Take a screenshot of the current page or a specific element",
		`{"type":"object","properties":{"name":{"type":"string","description":"Name for the screenshot"},"selector":{"type":"string","description":"CSS selector for element to screenshot"},"index":{"type":"number","description":"index of the element to screenshot"},"width":{"type":"number","description":"Width in pixels (default: viewport width)"},"height":{"type":"number","description":"Height in pixels (default: viewport height)"},"fullPage":{"type":"boolean","description":"Full page screenshot (default: false)"},"highlight":{"type":"boolean","default":false,"description":"Highlight the element"}},"additionalProperties":false,` + draft7 + `}`, "", readOnly, screenshot},
	{"browser_click", "Click an element on the page, before using the tool, use `browser_get_clickable_elements` to get the index of the element, but not call `browser_get_clickable_elements` multiple times",
		`{"type":"object","properties":{"index":{"type":"number","description":"Index of the element to click"}},"additionalProperties":false,` + draft7 + `}`, "", acts, click},
	{"browser_select", "Select an element on the page with index, Either 'index' or 'selector' must be provided",
		`{"type":"object","properties":{"index":{"type":"number","description":"Index of the element to select"},"selector":{"type":"string","description":"CSS selector for element to select"},"value":{"type":"string","description":"Value to select"}},"required":["value"],"additionalProperties":false,` + draft7 + `}`, "", acts, selectOption},
	{"browser_hover", "Hover an element on the page, Either 'index' or 'selector' must be provided",
		`{"type":"object","properties":{"index":{"type":"number","description":"Index of the element to hover"},"selector":{"type":"string","description":"CSS selector for element to hover"}},"additionalProperties":false,` + draft7 + `}`, "", acts, hover},
	{"browser_get_clickable_elements", "Get the clickable or hoverable or selectable elements on the current page, don't call this tool multiple times", noArgs, "", readOnly, clickables},
	{"browser_scroll", "Scroll the page",
		`{"type":"object","properties":{"amount":{"type":"number","description":"Pixels to scroll (positive for down, negative for up), if the amount is not provided, scroll to the bottom of the page"}},"additionalProperties":false,` + draft7 + `}`, "", acts, scroll},
	{"browser_close", "Close the browser when the task is done and the browser is not needed anymore", noArgs, "", acts, closeBrowser},
	{"browser_press_key", "Press a key on the keyboard", pressKeySchema, "", acts, pressKey},
}
