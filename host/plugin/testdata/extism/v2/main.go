// A hyper-mcp style Extism plugin (list_tools, call_tool, list_prompts,
// get_prompt) built with the Extism Go PDK, for the extism form's tests.
package main

import (
	"encoding/json"
	"strconv"

	pdk "github.com/extism/go-pdk"
)

type request struct {
	Context json.RawMessage `json:"context"`
	Request struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"request"`
}

func text(s string) map[string]any {
	return map[string]any{"content": []map[string]string{{"type": "text", "text": s}}}
}

//go:wasmexport list_tools
func listTools() int32 {
	obj := map[string]any{"type": "object"}
	tools := []map[string]any{
		{"name": "x_echo", "description": "echo text", "inputSchema": map[string]any{"type": "object",
			"properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		{"name": "x_count", "description": "count calls in a var", "inputSchema": obj},
		{"name": "x_config", "description": "read config greeting", "inputSchema": obj},
		{"name": "x_fetch", "description": "GET a url", "inputSchema": obj},
		{"name": "x_fail", "description": "fail with an error", "inputSchema": obj},
		{"name": "x_log", "description": "log a line", "inputSchema": obj},
	}
	pdk.OutputJSON(map[string]any{"tools": tools})
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	var req request
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	var args struct {
		Text string `json:"text"`
		URL  string `json:"url"`
	}
	json.Unmarshal(req.Request.Arguments, &args)
	switch req.Request.Name {
	case "x_echo":
		pdk.OutputJSON(text(args.Text))
	case "x_count":
		n := pdk.GetVarInt("n") + 1
		pdk.SetVarInt("n", n)
		pdk.OutputJSON(text(strconv.Itoa(n)))
	case "x_config":
		g, ok := pdk.GetConfig("greeting")
		if !ok {
			g = "(no greeting)"
		}
		pdk.OutputJSON(text(g))
	case "x_fetch":
		resp := pdk.NewHTTPRequest(pdk.MethodGet, args.URL).Send()
		pdk.OutputJSON(text(strconv.Itoa(int(resp.Status())) + " " + string(resp.Body())))
	case "x_fail":
		pdk.SetErrorString("asked to fail")
		return 1
	case "x_log":
		pdk.Log(pdk.LogInfo, "hello from extism")
		pdk.OutputJSON(text("logged"))
	default:
		pdk.SetErrorString("unknown tool " + req.Request.Name)
		return 1
	}
	return 0
}

//go:wasmexport list_prompts
func listPrompts() int32 {
	pdk.OutputJSON(map[string]any{"prompts": []map[string]any{{"name": "x_greet", "description": "greet someone",
		"arguments": []map[string]any{{"name": "who", "required": true}}}}})
	return 0
}

//go:wasmexport get_prompt
func getPrompt() int32 {
	var req struct {
		Request struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.OutputJSON(map[string]any{"messages": []map[string]any{{"role": "user",
		"content": map[string]string{"type": "text", "text": "hello " + req.Request.Arguments["who"]}}}})
	return 0
}

//go:wasmexport list_resources
func listResources() int32 {
	pdk.OutputJSON(map[string]any{"resources": []map[string]any{{"uri": "x://motd", "name": "motd", "mimeType": "text/plain"}}})
	return 0
}

//go:wasmexport read_resource
func readResource() int32 {
	var req struct {
		Request struct {
			URI string `json:"uri"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.OutputJSON(map[string]any{"contents": []map[string]string{{"uri": req.Request.URI, "mimeType": "text/plain", "text": "message of the day"}}})
	return 0
}

//go:wasmexport complete
func complete() int32 {
	var req struct {
		Request struct {
			Ref struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"ref"`
			Argument struct {
				Value string `json:"value"`
			} `json:"argument"`
		} `json:"request"`
	}
	if err := pdk.InputJSON(&req); err != nil {
		pdk.SetError(err)
		return 1
	}
	pdk.OutputJSON(map[string]any{"completion": map[string]any{"values": []string{req.Request.Ref.Type + ":" + req.Request.Ref.Name + ":" + req.Request.Argument.Value + "!"}}})
	return 0
}

func main() {}
