// Command cmdecho is a WASI *command* plugin (ABI v1 §6): one JSON request
// on stdin, the CallToolResult on stdout. It uses only the standard
// library, as a plugin in any language would.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var req struct {
		Op        string `json:"op"`
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
			Exit int    `json:"exit"`
		} `json:"arguments"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Println("bad request:", err)
		os.Exit(2)
	}
	if req.Arguments.Exit != 0 {
		fmt.Print("asked to fail")
		os.Exit(req.Arguments.Exit)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"content": []map[string]string{{"type": "text", "text": req.Op + " " + req.Name + ": " + req.Arguments.Text}},
		"isError": false,
	})
}
