// Command importer is a test plugin that imports a host function family
// (aiod:files) so tests can check it is refused when not granted.
package main

import (
	"unsafe"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
)

//go:wasmimport aiod:files read
func filesRead(ptr unsafe.Pointer, n uint32) uint64

type none struct{}

func init() {
	sdk.Plugin(sdk.Info{Name: "importer", Version: "1.0.0", Capabilities: abi.Capabilities{Files: &abi.FilesScope{Paths: []abi.PathScope{{Path: "$TMP", Mode: abi.ReadOnly}}}}})
	sdk.AddTool(sdk.Tool{Name: "peek", Description: "reads a file through aiod:files"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		req := []byte(`{"path":"/etc/hostname"}`)
		ret := filesRead(unsafe.Pointer(&req[0]), uint32(len(req)))
		if ret>>32 != 0 {
			return sdk.ErrorResult("denied"), nil
		}
		return sdk.TextResult("read"), nil
	})
}

func main() {}
