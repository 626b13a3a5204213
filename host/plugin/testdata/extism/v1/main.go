// An mcp.run servlet style Extism plugin (describe, call) built with the
// Extism Go PDK, for the extism form's tests.
package main

import (
	"encoding/json"

	pdk "github.com/extism/go-pdk"
)

//go:wasmexport describe
func describe() int32 {
	pdk.OutputJSON(map[string]any{"tools": []map[string]any{{"name": "v1_echo", "description": "echo text",
		"inputSchema": map[string]any{"type": "object"}}}})
	return 0
}

//go:wasmexport call
func call() int32 {
	var in struct {
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": in.Params.Name + ": " + in.Params.Arguments.Text}}})
	pdk.Output(b)
	return 0
}

func main() {}
