// Command cdphostile is a hostile aiod:cdp plugin for the browser tests
// (host/sandboxtest/browser_test.go): it calls methods outside its scope,
// floods its session with events and asks for an answer over its result
// limit. Its tool cdp_probe answers what the host said, as JSON.
package main

import (
	"encoding/json"
	"errors"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/cdp"
)

func init() {
	sdk.Plugin(sdk.Info{
		Name:         "cdphostile",
		Version:      "1.0.0",
		Description:  "test: a plugin that abuses aiod:cdp",
		Capabilities: abi.Capabilities{CDP: &abi.CDPScope{Methods: []string{"Runtime.*", "Network.*"}}},
		Limits:       abi.Limits{MaxResultBytes: 1048576},
	})
	// Its answers are objects of several shapes, reports of each probe.
	sdk.AddTool(sdk.Tool{Name: "cdp_probe", Description: "probe aiod:cdp", OutputSchema: `{"type":"object"}`}, probe)
}

func main() {}

type in struct {
	Op     string          `json:"op"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

func code(err error) string {
	var e *cdp.Error
	if errors.As(err, &e) {
		return e.Code + ": " + e.Message
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

func probe(_ *sdk.Ctx, a in) (*sdk.Result, error) {
	s, err := cdp.Page()
	if err != nil {
		return sdk.JSONResult(map[string]any{"attach": code(err)}, true), nil
	}
	switch a.Op {
	case "call": // any method, on the page
		_, err := s.Raw(a.Method, a.Params)
		return sdk.JSONResult(map[string]any{"call": code(err)}, false), nil
	case "browser": // any method, on the browser target
		err := cdp.Browser(a.Method, a.Params, nil)
		return sdk.JSONResult(map[string]any{"call": code(err)}, false), nil
	case "flood": // 20000 console events of 1 KB, then read them
		if err := s.Call("Runtime.enable", nil, nil); err != nil {
			return sdk.JSONResult(map[string]any{"enable": code(err)}, true), nil
		}
		err := s.Call("Runtime.evaluate", map[string]any{"expression": "for (let i = 0; i < 20000; i++) console.log('x'.repeat(1000)); 1"}, nil)
		got, dropped, more := 0, 0, true
		for more && err == nil {
			var evs []cdp.Event
			var d int
			evs, d, more, err = s.Events([]string{"Runtime.consoleAPICalled"}, 1000, 2000)
			got += len(evs)
			dropped += d
			if len(evs) == 0 {
				break
			}
		}
		s.Call("Runtime.disable", nil, nil)
		return sdk.JSONResult(map[string]any{"events": got, "dropped": dropped, "error": code(err)}, false), nil
	}
	return sdk.ErrorResult("unknown op " + a.Op), nil
}
