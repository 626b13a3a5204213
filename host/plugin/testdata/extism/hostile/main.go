// A hostile Extism plugin: it hands the Extism host ABI bad offsets and
// lengths. Each must trap the call, not the host.
package main

import (
	"encoding/json"

	pdk "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/env load_u64
func loadU64(off uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(off uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(off, n uint64)

//go:wasmimport extism:host/env var_set
func varSet(k, v uint64)

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmexport list_tools
func listTools() int32 {
	var tools []map[string]any
	for _, n := range []string{"h_load", "h_store", "h_output", "h_var", "h_alloc", "h_ok"} {
		tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
	}
	pdk.OutputJSON(map[string]any{"tools": tools})
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	var req struct {
		Request struct {
			Name string `json:"name"`
		} `json:"request"`
	}
	pdk.InputJSON(&req)
	switch req.Request.Name {
	case "h_load":
		loadU64(1 << 40)
	case "h_store":
		storeU8(5, 1)
	case "h_output":
		outputSet(4096, 1<<30)
	case "h_var":
		varSet(12345, 0)
	case "h_alloc":
		if alloc(1<<62) != 0 {
			pdk.SetErrorString("alloc of 2^62 bytes succeeded")
			return 1
		}
		pdk.SetErrorString("alloc refused")
		return 1
	}
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "still fine"}}})
	pdk.Output(b)
	return 0
}

func main() {}
