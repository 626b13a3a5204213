// Command relay is the example plugin of the aiod:upstream family: it calls
// the tools of the upstream MCP servers the host aggregates (--mcp-servers)
// from inside a plugin.
//
//   - relay_call {server, tool, arguments} forwards one call and answers with
//     the upstream's result (content, structuredContent, isError).
//   - relay_merge {calls: [{server, tool, arguments}, ...]} makes two to
//     eight calls in order and merges their answers: every content block in
//     order, structuredContent {"results": [...]} with one entry per call,
//     and isError if any call failed.
//
// The manifest asks for every server ("*"); the operator's policy names the
// ones it gets, and a call to another answers isError "... not granted".
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm
// (make plugins does this and writes build/plugins/relay/).
package main

import (
	"encoding/json"
	"fmt"
	"github.com/aiodhq/aiod/sdk/abi"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/upstream"
)

// Call is one upstream call.
type Call struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Merge is relay_merge's arguments.
type Merge struct {
	Calls []Call `json:"calls"`
}

const callSchema = `{"type":"object","properties":{` +
	`"server":{"type":"string","description":"the upstream server's registered name"},` +
	`"tool":{"type":"string","description":"the tool's name as the server gives it (no prefix)"},` +
	`"arguments":{"type":"object","description":"the tool's arguments"}},` +
	`"required":["server","tool"],"additionalProperties":false}`

// decode reads args strictly enough for an example: an object of the
// given shape.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

func check(c Call) error {
	if c.Server == "" || c.Tool == "" {
		return fmt.Errorf("server and tool are required")
	}
	return nil
}

// RelayCall forwards one call.
func RelayCall(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
	var c Call
	if err := decode(args, &c); err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	if err := check(c); err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	res, err := upstream.Call(c.Server, c.Tool, c.Arguments)
	if err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	return res.ToolResult(), nil
}

// merged is one entry of relay_merge's structuredContent.
type merged struct {
	Server            string          `json:"server"`
	Tool              string          `json:"tool"`
	IsError           bool            `json:"isError"`
	Text              string          `json:"text"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
}

// RelayMerge makes the calls in order and merges their answers.
func RelayMerge(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
	var m Merge
	if err := decode(args, &m); err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	if len(m.Calls) < 2 || len(m.Calls) > 8 {
		return sdk.ErrorResult(fmt.Sprintf("calls: want 2 to 8, got %d", len(m.Calls))), nil
	}
	out := &sdk.Result{Content: []sdk.Content{}}
	results := make([]merged, 0, len(m.Calls))
	for i, c := range m.Calls {
		if err := check(c); err != nil {
			return sdk.ErrorResult(fmt.Sprintf("calls[%d]: %v", i, err)), nil
		}
		e := merged{Server: c.Server, Tool: c.Tool}
		res, err := upstream.Call(c.Server, c.Tool, c.Arguments)
		if err != nil {
			e.IsError, e.Text = true, err.Error()
			out.Content = append(out.Content, sdk.Text(err.Error()))
		} else {
			tr := res.ToolResult()
			e.IsError, e.Text, e.StructuredContent = res.IsError, res.Text(), res.StructuredContent
			out.Content = append(out.Content, tr.Content...)
		}
		out.IsError = out.IsError || e.IsError
		results = append(results, e)
	}
	b, _ := json.Marshal(map[string]any{"results": results})
	out.Structured = json.RawMessage(b)
	return out, nil
}

func init() {
	sdk.Plugin(sdk.Info{Name: "relay", Version: "1.0.0",
		Description:  "Example plugin: calls the tools of the host's upstream MCP servers (aiod:upstream).",
		Capabilities: abi.Capabilities{Upstream: &abi.UpstreamScope{Servers: []string{"*"}}}})
	sdk.AddRawTool(sdk.Tool{
		Name:        "relay_call",
		Title:       "Relay a call",
		Description: "Call a tool of an upstream MCP server the host aggregates and answer with its result.",
		InputSchema: callSchema,
	}, RelayCall)
	sdk.AddRawTool(sdk.Tool{
		Name:        "relay_merge",
		Title:       "Merge calls",
		Description: "Call two to eight upstream tools in order and merge their answers: all content blocks in order, structuredContent.results with one entry per call, isError if any failed.",
		InputSchema: `{"type":"object","properties":{"calls":{"type":"array","minItems":2,"maxItems":8,"items":` + callSchema + `}},"required":["calls"],"additionalProperties":false}`,
	}, RelayMerge)
}

func main() {}
