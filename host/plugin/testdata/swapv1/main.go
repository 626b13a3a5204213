// Command swapv1 is version 1 of the "swap" test plugin: its tool answers
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
	sdk.Plugin(sdk.Info{Name: "swap", Version: "1.0.0", Description: "hot-reload test plugin, version 1"})
	sdk.AddTool(sdk.Tool{Name: "which", Description: "answers v1:<text>"}, func(_ *sdk.Ctx, a args) (*sdk.Result, error) {
		time.Sleep(time.Duration(a.SleepMs) * time.Millisecond)
		return sdk.TextResult("v1:" + a.Text), nil
	})
}

func main() {}
