// Command conformance is a test fixture plugin: every tool, resource,
// template, prompt and completion the official MCP conformance suites
// (0.1.16 and 0.2.0-alpha.12) call on a server, written with the aiod SDK.
// It is built by `make plugins` into build/plugins/conformance and is not
// embedded in the binary.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
)

const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

var (
	png, _ = base64.StdEncoding.DecodeString(pngBase64)
	wav, _ = base64.StdEncoding.DecodeString(wavBase64)
)

const noArgs = `{"type":"object","properties":{},"additionalProperties":false}`

func text(s string) (*sdk.Result, error) { return sdk.TextResult(s), nil }

func tool(name, desc string, h func(c *sdk.Ctx, args json.RawMessage) (*sdk.Result, error)) {
	sdk.AddRawTool(sdk.Tool{Name: name, Description: desc, InputSchema: noArgs}, h)
}

func main() {}

func init() {
	sdk.Plugin(sdk.Info{Name: "conformance", Version: "1.0.0",
		Description: "Fixtures for the official MCP conformance suites (test only)."})
	contentTools()
	clientTools()
	diagnosticTools()
	mrtrTools()
	taskTools()
	resources()
	prompts()
}

func contentTools() {
	tool("test_simple_text", "Returns one text block.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return text("This is a simple text response for testing.")
	})
	tool("test_image_content", "Returns one image block (a 1x1 PNG).", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return &sdk.Result{Content: []sdk.Content{sdk.Image(png, "image/png")}}, nil
	})
	tool("test_audio_content", "Returns one audio block (a tiny WAV).", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return &sdk.Result{Content: []sdk.Content{sdk.Audio(wav, "audio/wav")}}, nil
	})
	tool("test_embedded_resource", "Returns one embedded text resource.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return &sdk.Result{Content: []sdk.Content{sdk.TextResource("test://embedded-resource", "text/plain", "This is an embedded resource content.")}}, nil
	})
	tool("test_multiple_content_types", "Returns text, an image and an embedded resource.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return &sdk.Result{Content: []sdk.Content{
			sdk.Text("Multiple content types test:"),
			sdk.Image(png, "image/png"),
			sdk.TextResource("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`),
		}}, nil
	})
	tool("test_error_handling", "Always fails, as a tool result with isError.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return sdk.ErrorResult("This tool intentionally returns an error for testing"), nil
	})
	tool("test_tool_with_logging", "Sends three info log messages while it runs.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		c.Log(sdk.LevelInfo, "Tool execution started")
		c.Log(sdk.LevelInfo, "Tool processing data")
		c.Log(sdk.LevelInfo, "Tool execution completed")
		return text("Tool with logging executed successfully")
	})
	tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		for _, p := range []float64{0, 50, 100} {
			c.Progress(p, 100, fmt.Sprintf("Completed step %.0f of 100", p))
		}
		return text("Progress reported")
	})
	sdk.AddRawTool(sdk.Tool{Name: "json_schema_2020_12_tool",
		Description: "Has a JSON Schema 2020-12 input schema that must be listed verbatim.",
		InputSchema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`},
		func(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			return text("JSON Schema 2020-12 tool called with: " + string(args))
		})
}

// clientTools ask the client for input in the middle of a call (legacy
// sessions: server-to-client requests on the call's stream).
func clientTools() {
	sdk.AddRawTool(sdk.Tool{Name: "test_sampling", Description: "Asks the client's model to answer a prompt.",
		InputSchema: `{"type":"object","properties":{"prompt":{"type":"string","description":"the prompt to send to the model"}},"required":["prompt"]}`},
		func(c *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			var in struct{ Prompt string }
			_ = json.Unmarshal(args, &in)
			r, err := c.Sample("sampling", map[string]any{
				"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": in.Prompt}}},
				"maxTokens": 100,
			})
			if err != nil {
				return nil, err
			}
			return text("LLM response: " + r.Text())
		})
	sdk.AddRawTool(sdk.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email.",
		InputSchema: `{"type":"object","properties":{"message":{"type":"string","description":"the message to show the user"}},"required":["message"]}`},
		func(c *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			var in struct{ Message string }
			_ = json.Unmarshal(args, &in)
			r, err := c.Elicit("elicitation", in.Message, `{"type":"object","properties":{"username":{"type":"string","description":"your username"},"email":{"type":"string","description":"your email address"}},"required":["username","email"]}`)
			if err != nil {
				return nil, err
			}
			return elicited(r)
		})
	tool("test_elicitation_sep1034_defaults", "Elicits a form whose fields have defaults (SEP-1034).", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		r, err := c.Elicit("defaults", "Test defaults for primitives", `{"type":"object","properties":{
			"name":{"type":"string","description":"User name","default":"John Doe"},
			"age":{"type":"integer","description":"User age","default":30},
			"score":{"type":"number","description":"User score","default":95.5},
			"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
			"verified":{"type":"boolean","description":"Verification status","default":true}}}`)
		if err != nil {
			return nil, err
		}
		return elicited(r)
	})
	tool("test_elicitation_sep1330_enums", "Elicits a form with every enum shape (SEP-1330).", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		r, err := c.Elicit("enums", "Test enum schemas", `{"type":"object","properties":{
			"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
			"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
			"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
			"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
			"titledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]}}}}`)
		if err != nil {
			return nil, err
		}
		return elicited(r)
	})
}

func elicited(r *sdk.ElicitResult) (*sdk.Result, error) {
	b, _ := json.Marshal(r.Content)
	return text(fmt.Sprintf("User response: action=%s, content=%s", r.Action, b))
}

// diagnosticTools serve the 2026-07-28 stateless scenario's checks.
func diagnosticTools() {
	sdk.AddRawTool(sdk.Tool{Name: "test_x_mcp_header", Description: "Mirrors its region argument into the Mcp-Param-Region header (SEP-2243).",
		InputSchema: `{"type":"object","properties":{"region":{"type":"string","description":"mirrored into Mcp-Param-Region","x-mcp-header":"Region"},"level":{"type":"integer","description":"not mirrored"}}}`},
		func(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			var in struct{ Region string }
			_ = json.Unmarshal(args, &in)
			return text("region=" + in.Region)
		})
	tool("test_missing_capability", "Needs the client's sampling capability; without it fails with -32021.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		if err := c.Require("sampling"); err != nil {
			return nil, err
		}
		return text("Client declared the sampling capability; tool executed.")
	})
	tool("test_streaming_elicitation", "Returns a plain result; its response stream must carry no requests.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		return text("stream observed: result frames only, no top-level requests")
	})
	// Not a conformance fixture: aiod's own e2e tests cancel it midway.
	sdk.AddRawTool(sdk.Tool{Name: "aiod_slow", Description: "Reports progress every 50 ms for ms milliseconds, then answers done (for cancellation tests).",
		InputSchema: `{"type":"object","properties":{"ms":{"type":"integer","description":"how long to run"}},"required":["ms"]}`},
		func(c *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			var in struct{ Ms int }
			_ = json.Unmarshal(args, &in)
			for t := 0; t < in.Ms; t += 50 {
				c.Progress(float64(t), float64(in.Ms), "working")
				time.Sleep(50 * time.Millisecond)
			}
			return text("done")
		})
	tool("test_logging_tool", "Logs once; the host drops it unless the request set a log level.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		c.Log(sdk.LevelInfo, "test_logging_tool executed")
		return text("Log attempted; the host gates it on the request's log level.")
	})
	tool("test_trigger_tool_change", "Announces a tools list change to listening clients.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		if err := sdk.NotifyToolsChanged(); err != nil {
			return nil, err
		}
		return text("tools_list_changed published")
	})
	tool("test_trigger_prompt_change", "Announces a prompts list change to listening clients.", func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
		if err := sdk.NotifyPromptsChanged(); err != nil {
			return nil, err
		}
		return text("prompts_list_changed published")
	})
}

const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// askName elicits a non-empty name under key, asking again until it gets
// one.
func askName(c *sdk.Ctx, key, message string) (string, error) {
	for {
		r, err := c.Elicit(key, message, nameSchema)
		if err != nil {
			return "", err
		}
		if name, _ := r.Content["name"].(string); r.Accepted() && name != "" {
			return name, nil
		}
	}
}

// mrtrTools ask for input in a way that works in both eras: in 2026-07-28
// each unanswered request becomes an input_required round.
func mrtrTools() {
	tool("test_input_required_result_elicitation", "Asks the caller's name (MRTR elicitation).", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		name, err := askName(c, "user_name", "What is your name?")
		if err != nil {
			return nil, err
		}
		return text("Hello, " + name + "!")
	})
	tool("test_input_required_result_sampling", "Asks the client's model a question (MRTR sampling).", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		r, err := c.Sample("capital_question", map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "What is the capital of France?"}}},
			"maxTokens": 100,
		})
		if err != nil {
			return nil, err
		}
		return text("Sampling response: " + r.Text())
	})
	tool("test_input_required_result_list_roots", "Asks for the client's roots (MRTR roots/list).", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		roots, err := c.ListRoots("client_roots")
		if err != nil {
			return nil, err
		}
		uris := make([]string, len(roots))
		for i, r := range roots {
			uris[i] = r.URI
		}
		return text(fmt.Sprintf("Client exposed %d root(s): %s", len(roots), strings.Join(uris, ", ")))
	})
	confirm := func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		r, err := c.Elicit("confirm", "Please confirm", `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
		if err != nil {
			return nil, err
		}
		// In 2026-07-28 the host opened (and so verified) the requestState
		// it sealed in round one; a tampered one never gets here.
		if ci := c.Client(); ci.Era == "modern" && ci.InputRound == 0 {
			return nil, &sdk.RPCError{Code: sdk.CodeInvalidParams, Message: "the confirmation must come back with the requestState of round one"}
		}
		return text("state-ok: requestState verified, confirmation " + r.Action)
	}
	tool("test_input_required_result_request_state", "Asks for a confirmation; the answer comes back with the sealed requestState.", confirm)
	tool("test_input_required_result_tampered_state", "Like request_state; a tampered requestState is refused by the host.", confirm)
	tool("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots in one round.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		a, err := c.Input(
			sdk.Elicitation("user_name", "What is your name?", nameSchema),
			sdk.Sampling("greeting", map[string]any{
				"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Generate a greeting"}}},
				"maxTokens": 50,
			}),
			sdk.Roots("client_roots"))
		if err != nil {
			return nil, err
		}
		e, _ := a.Elicit("user_name")
		s, _ := a.Sample("greeting")
		roots, _ := a.Roots("client_roots")
		name := ""
		if e != nil {
			name, _ = e.Content["name"].(string)
		}
		greeting := ""
		if s != nil {
			greeting = s.Text()
		}
		return text(fmt.Sprintf("%s %s (%d root(s) visible)", greeting, name, len(roots)))
	})
	tool("test_input_required_result_multi_round", "Asks two questions, one round each.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		name, err := askName(c, "step1", "Step 1: What is your name?")
		if err != nil {
			return nil, err
		}
		r, err := c.Elicit("step2", "Step 2: What is your favorite color?", `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`)
		if err != nil {
			return nil, err
		}
		color, _ := r.Content["color"].(string)
		return text(fmt.Sprintf("Multi-round complete: %s likes %s", name, color))
	})
	tool("test_input_required_result_capabilities", "Asks only for the kinds of input the client declared.", func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
		ci := c.Client()
		var reqs []sdk.InputRequest
		if ci.Has("elicitation") {
			reqs = append(reqs, sdk.Elicitation("user_name", "What is your name?", nameSchema))
		}
		if ci.Has("sampling") {
			reqs = append(reqs, sdk.Sampling("greeting", map[string]any{
				"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Generate a short greeting"}}},
				"maxTokens": 50,
			}))
		}
		if ci.Has("roots") {
			reqs = append(reqs, sdk.Roots("client_roots"))
		}
		if len(reqs) == 0 {
			return text("No declared client capability supports an input request")
		}
		a, err := c.Input(reqs...)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return text("Capability-aware input requests fulfilled: " + strings.Join(keys, ", "))
	})
}

func resources() {
	sdk.AddResource(sdk.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource", MimeType: "text/plain"},
		func(_ *sdk.Ctx, uri string) ([]sdk.ResourceContents, error) {
			return []sdk.ResourceContents{{URI: uri, MimeType: "text/plain", Text: "This is the content of the static text resource."}}, nil
		})
	sdk.AddResource(sdk.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (a PNG)", MimeType: "image/png"},
		func(_ *sdk.Ctx, uri string) ([]sdk.ResourceContents, error) {
			return []sdk.ResourceContents{{URI: uri, MimeType: "image/png", Blob: png}}, nil
		})
	sdk.AddResource(sdk.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource clients subscribe to", MimeType: "text/plain"},
		func(_ *sdk.Ctx, uri string) ([]sdk.ResourceContents, error) {
			return []sdk.ResourceContents{{URI: uri, MimeType: "text/plain", Text: "Watched resource content"}}, nil
		})
	sdk.AddResourceTemplate(sdk.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Description: "A templated JSON resource", MimeType: "application/json"},
		func(_ *sdk.Ctx, uri string, vars map[string]string) ([]sdk.ResourceContents, error) {
			b, _ := json.Marshal(map[string]any{"id": vars["id"], "templateTest": true, "data": "Data for ID: " + vars["id"]})
			return []sdk.ResourceContents{{URI: uri, MimeType: "application/json", Text: string(b)}}, nil
		})
}

func prompts() {
	sdk.AddPrompt(sdk.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A prompt without arguments"},
		func(*sdk.Ctx, map[string]string) (*sdk.PromptResult, error) {
			return &sdk.PromptResult{Messages: []sdk.PromptMessage{sdk.UserMessage(sdk.Text("This is a simple prompt for testing."))}}, nil
		})
	sdk.AddPrompt(sdk.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with two required arguments",
		Arguments: []sdk.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ *sdk.Ctx, a map[string]string) (*sdk.PromptResult, error) {
			return &sdk.PromptResult{Messages: []sdk.PromptMessage{sdk.UserMessage(sdk.Text(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])))}}, nil
		})
	sdk.AddPromptCompletion("test_prompt_with_arguments", func(_ *sdk.Ctx, req *sdk.CompleteRequest) (*sdk.Completion, error) {
		var out []string
		for _, v := range []string{"test", "testValue1", "testValue2", "other"} {
			if strings.HasPrefix(v, req.Argument.Value) {
				out = append(out, v)
			}
		}
		return &sdk.Completion{Values: out, Total: len(out)}, nil
	})
	sdk.AddPrompt(sdk.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt embedding a resource",
		Arguments: []sdk.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ *sdk.Ctx, a map[string]string) (*sdk.PromptResult, error) {
			return &sdk.PromptResult{Messages: []sdk.PromptMessage{
				sdk.UserMessage(sdk.TextResource(a["resourceUri"], "text/plain", "Embedded resource content for testing.")),
				sdk.UserMessage(sdk.Text("Please process the embedded resource above.")),
			}}, nil
		})
	sdk.AddPrompt(sdk.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt with an image"},
		func(*sdk.Ctx, map[string]string) (*sdk.PromptResult, error) {
			return &sdk.PromptResult{Messages: []sdk.PromptMessage{
				sdk.UserMessage(sdk.Image(png, "image/png")),
				sdk.UserMessage(sdk.Text("Please analyze the image above.")),
			}}, nil
		})
	sdk.AddPrompt(sdk.Prompt{Name: "test_input_required_result_prompt", Description: "Asks for context before rendering (MRTR in prompts/get)"},
		func(c *sdk.Ctx, _ map[string]string) (*sdk.PromptResult, error) {
			r, err := c.Elicit("user_context", "Please provide context for the prompt", `{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`)
			if err != nil {
				return nil, err
			}
			ctx, _ := r.Content["context"].(string)
			return &sdk.PromptResult{Description: "A prompt with elicited context",
				Messages: []sdk.PromptMessage{sdk.UserMessage(sdk.Text("Context: " + ctx))}}, nil
		})
}

// nap sleeps d in 50 ms steps: a guest blocked in one long sleep is not
// interrupted when its call is cancelled, one between two steps is.
func nap(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(min(50*time.Millisecond, time.Until(end)))
	}
}

// taskTools are the fixtures of the tasks-* scenarios (SEP-2663). A call
// of a tool declaring TaskSupport becomes a task when it is still running
// after the host's grace period (half a second), so the tools that must
// become tasks take longer than that before they finish or ask for input.
func taskTools() {
	sdk.AddRawTool(sdk.Tool{Name: "greet", Description: "Says hello to name (sync only).", InputSchema: `{"type":"object","properties":{"name":{"type":"string"}}}`}, func(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
		var in struct{ Name string }
		_ = json.Unmarshal(args, &in)
		return text("Hello, " + in.Name + "!")
	})
	sdk.AddRawTool(sdk.Tool{Name: "slow_compute", Description: "Sleeps seconds seconds, then answers (task-capable).", TaskSupport: "optional",
		InputSchema: `{"type":"object","properties":{"seconds":{"type":"number"},"label":{"type":"string"}}}`},
		func(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			var in struct {
				Seconds float64
				Label   string
			}
			_ = json.Unmarshal(args, &in)
			nap(time.Duration(in.Seconds * float64(time.Second)))
			return text(fmt.Sprintf("computed %s after %gs", in.Label, in.Seconds))
		})
	sdk.AddRawTool(sdk.Tool{Name: "failing_job", Description: "Fails as a tool result after a second (task required).", TaskSupport: "required", InputSchema: noArgs},
		func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
			nap(time.Second)
			return sdk.ErrorResult("failing_job failed, as it always does"), nil
		})
	sdk.AddRawTool(sdk.Tool{Name: "protocol_error_job", Description: "Ends with a protocol error after a second (task-capable).", TaskSupport: "optional", InputSchema: noArgs},
		func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
			nap(time.Second)
			return nil, &sdk.RPCError{Code: sdk.CodeInternalError, Message: "protocol_error_job: internal failure"}
		})
	sdk.AddRawTool(sdk.Tool{Name: "confirm_delete", Description: "Asks to confirm deleting filename, then answers (task-capable).", TaskSupport: "optional",
		InputSchema: `{"type":"object","properties":{"filename":{"type":"string"}}}`},
		func(c *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
			var in struct{ Filename string }
			_ = json.Unmarshal(args, &in)
			nap(time.Second)
			r, err := c.Elicit("confirm", "Delete "+in.Filename+"?", `{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)
			if err != nil {
				return nil, err
			}
			return text("confirm_delete " + in.Filename + ": " + r.Action)
		})
	sdk.AddRawTool(sdk.Tool{Name: "multi_input", Description: "Asks two questions at once, then answers (task-capable).", TaskSupport: "optional", InputSchema: noArgs},
		func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
			nap(time.Second)
			a, err := c.Input(sdk.Elicitation("first", "First name?", nameSchema), sdk.Elicitation("second", "Second name?", nameSchema))
			if err != nil {
				return nil, err
			}
			var names []string
			for _, k := range []string{"first", "second"} {
				if e, _ := a.Elicit(k); e != nil {
					n, _ := e.Content["name"].(string)
					names = append(names, n)
				}
			}
			return text("multi_input: " + strings.Join(names, " and "))
		})
	sdk.AddRawTool(sdk.Tool{Name: "test_tool_with_task", Description: "Asks the caller's name (MRTR), then works on as a task.", TaskSupport: "required", InputSchema: noArgs},
		func(c *sdk.Ctx, _ json.RawMessage) (*sdk.Result, error) {
			name, err := askName(c, "user_name", "What is your name?")
			if err != nil {
				return nil, err
			}
			nap(time.Second)
			return text("Hello, " + name + ", from a task!")
		})
}
