// Command swapv2 is version 2 of the "swap" test plugin: its tool answers
// with the version that served it, so hot-reload tests can tell the two
// versions apart in every answer.
package main

import (
	"time"

	"github.com/aiodhq/aiod/sdk"
)

type args struct {
	Text    string `json:"text"`
	SleepMs int    `json:"sleep_ms"`
}

func init() {
	sdk.Plugin(sdk.Info{Name: "swap", Version: "2.0.0", Description: "hot-reload test plugin, version 2"})
	sdk.AddTool(sdk.Tool{Name: "which", Description: "answers v2:<text>"}, func(_ *sdk.Ctx, a args) (*sdk.Result, error) {
		time.Sleep(time.Duration(a.SleepMs) * time.Millisecond)
		return sdk.TextResult("v2:" + a.Text), nil
	})
}

func main() {}
