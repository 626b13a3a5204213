// Command snapinit is a test plugin whose initialisation calls a host
// function (aiod:core log): it must not be snapshotted, and still work.
package main

import "github.com/aiodhq/aiod/sdk"

type none struct{}

func init() {
	sdk.Plugin(sdk.Info{Name: "snapinit", Version: "1.0.0"})
	sdk.AddTool(sdk.Tool{Name: "hello", Description: "says hello"}, func(*sdk.Ctx, none) (*sdk.Result, error) {
		return sdk.TextResult("hello"), nil
	})
	(&sdk.Ctx{}).Log(0, "initialising")
}

func main() {}
