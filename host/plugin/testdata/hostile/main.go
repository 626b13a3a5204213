// Command hostile is a test plugin whose tools misbehave on purpose.
package main

import (
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
)

type none struct{}

type sizeArgs struct {
	MB int `json:"mb"`
}

var sink [][]byte

func init() {
	sdk.Plugin(sdk.Info{Name: "hostile", Version: "1.0.0"})
	sdk.AddTool(sdk.Tool{Name: "ok", Description: "behaves"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		return sdk.TextResult("fine"), nil
	})
	sdk.AddTool(sdk.Tool{Name: "loop", Description: "never returns"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		n := 0
		for {
			n++
		}
	})
	sdk.AddTool(sdk.Tool{Name: "grow", Description: "allocates without bound"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		for {
			sink = append(sink, make([]byte, 1<<20))
		}
	})
	sdk.AddTool(sdk.Tool{Name: "big", Description: "returns mb megabytes of text"}, func(c *sdk.Ctx, a sizeArgs) (*sdk.Result, error) {
		return sdk.TextResult(strings.Repeat("x", a.MB<<20)), nil
	})
	sdk.AddTool(sdk.Tool{Name: "panic", Description: "panics"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		panic("hostile plugin panics on purpose")
	})
	sdk.AddTool(sdk.Tool{Name: "trap", Description: "dereferences nil"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		var p *int
		return sdk.TextResult(string(rune(*p))), nil
	})
	sdk.AddTool(sdk.Tool{Name: "sleep", Description: "sleeps ms milliseconds"}, func(c *sdk.Ctx, a struct {
		MS int `json:"ms"`
	}) (*sdk.Result, error) {
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
		return sdk.TextResult("slept"), nil
	})
	sdk.AddTool(sdk.Tool{Name: "fail", Description: "returns a tool error"}, func(c *sdk.Ctx, _ none) (*sdk.Result, error) {
		return sdk.ErrorResult("it went wrong"), nil
	})
}

func main() {}
