// Command hash is a compute-heavy example plugin (the engines' CPU
// benchmark): tool "hash" generates N MiB of pseudo-random bytes in the
// guest and returns their SHA-256, so nearly all of a call is guest code.
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm
// (make plugins does this and writes build/plugins/hash/).
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/aiodhq/aiod/sdk"
)

// Args are hash's arguments.
type Args struct {
	MiB int `json:"mib" jsonschema:"how many MiB to generate and hash (1 to 1024)"`
}

// Sum returns the hex SHA-256 of mib MiB of splitmix64 output seeded with 0.
func Sum(mib int) string {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	var x uint64
	for range mib * 16 {
		for i := 0; i < len(buf); i += 8 {
			x += 0x9e3779b97f4a7c15
			z := x
			z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
			z = (z ^ z>>27) * 0x94d049bb133111eb
			binary.LittleEndian.PutUint64(buf[i:], z^z>>31)
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Hash is the tool.
func Hash(_ *sdk.Ctx, a Args) (*sdk.Result, error) {
	if a.MiB < 1 || a.MiB > 1024 {
		return sdk.ErrorResult(fmt.Sprintf("mib must be 1 to 1024, got %d", a.MiB)), nil
	}
	return sdk.TextResult(Sum(a.MiB)), nil
}

func init() {
	sdk.Plugin(sdk.Info{Name: "hash", Version: "1.0.0", Description: "Example plugin: SHA-256 of data generated in the guest (a CPU benchmark)."})
	sdk.AddTool(sdk.Tool{
		Name:        "hash",
		Title:       "Hash",
		Description: "Generate mib MiB of deterministic pseudo-random bytes and return their SHA-256 in hex.",
		InputSchema: `{"type":"object","properties":{"mib":{"type":"integer","minimum":1,"maximum":1024,"description":"how many MiB to generate and hash (1 to 1024)"}},"required":["mib"],"additionalProperties":false}`,
		Annotations: &sdk.Annotations{ReadOnlyHint: sdk.Bool(true), IdempotentHint: sdk.Bool(true)},
	}, Hash)
}

func main() {}
