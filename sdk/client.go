package sdk

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// This file is the plugin's way to the MCP client: what the request
// declared, input from the user or the client's model (elicitation,
// sampling, roots), JSON-RPC errors, and change notifications.
//
// Asking for input works the same in both protocol eras, but runs
// differently (spec/protocol.md "Input from the client"):
//
//   - legacy sessions: the request goes to the client on the call's event
//     stream and Input returns its answer;
//   - 2026-07-28: the first time, the call stops and the client gets an
//     input_required result; it answers by sending the request again, and
//     the handler runs again from the start, this time getting the answer.
//
// So everything a handler does before its last Input call may run more
// than once: ask for input first, act after.

// RPCError is a JSON-RPC error. Returned from a handler (or wrapped), it
// is sent as the request's error instead of a result.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// JSON-RPC error codes a plugin may answer with.
const (
	CodeInvalidParams     = -32602
	CodeInternalError     = -32603
	CodeMissingCapability = -32021 // the client did not declare a capability the request needs
)

// ClientInfo is what the request says about its client.
type ClientInfo struct {
	// Era is "legacy" or "modern" (2026-07-28).
	Era             string `json:"era"`
	ProtocolVersion string `json:"protocolVersion"`
	// Capabilities are the client's declared capabilities by name
	// ("elicitation", "sampling", "roots", ...).
	Capabilities map[string]json.RawMessage `json:"clientCapabilities"`
	// Client is the client's {"name","version"} when it sent one.
	Client json.RawMessage `json:"clientInfo,omitempty"`
	// Session tells a legacy request that came in an initialized session.
	Session bool `json:"session"`
	// InputRound counts the input_required rounds before this run of a
	// 2026-07-28 request, as vouched for by the requestState the host
	// sealed (0 on a first run, or when the client sent no state).
	InputRound int `json:"inputRound"`
}

// Has reports whether the client declared capability name.
func (ci *ClientInfo) Has(name string) bool {
	v, ok := ci.Capabilities[name]
	return ok && string(v) != "null"
}

// Client returns the facts of the running request.
func (c *Ctx) Client() *ClientInfo {
	b, code := guest.ClientInfo()
	ci := &ClientInfo{}
	if abi.Code(code) == abi.OK {
		_ = json.Unmarshal(b, ci)
	}
	return ci
}

// Require fails the request with -32021 (MissingRequiredClientCapability)
// unless the client declared every named capability. Return its error.
func (c *Ctx) Require(capabilities ...string) error {
	ci := c.Client()
	missing := map[string]any{}
	for _, n := range capabilities {
		if !ci.Has(n) {
			missing[n] = map[string]any{}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": missing})
	return &RPCError{Code: CodeMissingCapability, Message: "the client did not declare a capability this request needs", Data: data}
}

// InputRequest is one request for input, under a key the plugin chooses
// (unique within the call; it names the answer across rounds).
type InputRequest struct {
	Key string
	// Method is "elicitation/create", "sampling/createMessage" or
	// "roots/list".
	Method string
	// Params are the method's params (anything that marshals to them).
	Params any
}

// Elicitation, sampling and roots requests.
func Elicitation(key, message string, schema any) InputRequest {
	return InputRequest{Key: key, Method: "elicitation/create",
		Params: map[string]any{"mode": "form", "message": message, "requestedSchema": schemaValue(schema)}}
}

// Sampling asks the client's model; params are the sampling/createMessage
// params, e.g. map[string]any{"messages": ..., "maxTokens": 100}.
func Sampling(key string, params any) InputRequest {
	return InputRequest{Key: key, Method: "sampling/createMessage", Params: params}
}

// Roots asks for the client's roots.
func Roots(key string) InputRequest {
	return InputRequest{Key: key, Method: "roots/list", Params: map[string]any{}}
}

func schemaValue(s any) any {
	switch v := s.(type) {
	case string:
		return json.RawMessage(v)
	case []byte:
		return json.RawMessage(v)
	}
	return s
}

// Answers are the client's results by key.
type Answers map[string]json.RawMessage

// Elicit decodes the elicitation answer under key.
func (a Answers) Elicit(key string) (*ElicitResult, error) {
	var r ElicitResult
	if err := json.Unmarshal(a[key], &r); err != nil {
		return nil, fmt.Errorf("elicitation answer %s: %w", key, err)
	}
	return &r, nil
}

// Sample decodes the sampling answer under key.
func (a Answers) Sample(key string) (*SamplingResult, error) {
	var r SamplingResult
	if err := json.Unmarshal(a[key], &r); err != nil {
		return nil, fmt.Errorf("sampling answer %s: %w", key, err)
	}
	return &r, nil
}

// Roots decodes the roots answer under key.
func (a Answers) Roots(key string) ([]Root, error) {
	var r struct {
		Roots []Root `json:"roots"`
	}
	if err := json.Unmarshal(a[key], &r); err != nil {
		return nil, fmt.Errorf("roots answer %s: %w", key, err)
	}
	return r.Roots, nil
}

// ElicitResult is the user's answer to an elicitation.
type ElicitResult struct {
	Action  string         `json:"action"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
}

// Accepted reports an accepted answer.
func (r *ElicitResult) Accepted() bool { return r != nil && r.Action == "accept" }

// SamplingResult is the client model's answer.
type SamplingResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
}

// Text returns the first text content of the answer.
func (r *SamplingResult) Text() string {
	type tc struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var one tc
	if json.Unmarshal(r.Content, &one) == nil && one.Type == "text" {
		return one.Text
	}
	var many []tc
	if json.Unmarshal(r.Content, &many) == nil {
		for _, c := range many {
			if c.Type == "text" {
				return c.Text
			}
		}
	}
	return ""
}

// Root is one of the client's roots.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// errInputRequired unwinds a handler whose input the client has not given
// yet (2026-07-28); the SDK recovers it and the host answers
// input_required.
type inputRequiredSignal struct{}

// Input asks the client for every request at once and returns the answers.
// In 2026-07-28 a request the client has not answered yet ends the call
// here (the handler runs again with the answers). Asking again under a key
// already answered in this call asks the client anew (use it when an
// answer was not good enough). A capability the client did not declare is
// an *RPCError with -32021: return it to fail the request.
func (c *Ctx) Input(reqs ...InputRequest) (Answers, error) {
	m := make(map[string]any, len(reqs))
	for _, r := range reqs {
		if r.Key == "" {
			return nil, errors.New("sdk: input request without a key")
		}
		m[r.Key] = map[string]any{"method": r.Method, "params": r.Params}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	resp, code := guest.ClientInput(b)
	switch abi.Code(code) {
	case abi.OK:
		var a Answers
		if err := json.Unmarshal(resp, &a); err != nil {
			return nil, err
		}
		return a, nil
	case abi.InputRequired:
		panic(inputRequiredSignal{})
	}
	var he struct {
		Code                 string          `json:"code"`
		Message              string          `json:"message"`
		RequiredCapabilities json.RawMessage `json:"requiredCapabilities"`
	}
	_ = json.Unmarshal(resp, &he)
	if len(he.RequiredCapabilities) > 0 {
		data, _ := json.Marshal(map[string]json.RawMessage{"requiredCapabilities": he.RequiredCapabilities})
		return nil, &RPCError{Code: CodeMissingCapability, Message: he.Message, Data: data}
	}
	return nil, fmt.Errorf("input from the client: %s: %s", he.Code, he.Message)
}

// Elicit asks the user for a form's content (schema: a JSON Schema object
// as a string, json.RawMessage or any value).
func (c *Ctx) Elicit(key, message string, schema any) (*ElicitResult, error) {
	a, err := c.Input(Elicitation(key, message, schema))
	if err != nil {
		return nil, err
	}
	return a.Elicit(key)
}

// Sample asks the client's model (params: sampling/createMessage params).
func (c *Ctx) Sample(key string, params any) (*SamplingResult, error) {
	a, err := c.Input(Sampling(key, params))
	if err != nil {
		return nil, err
	}
	return a.Sample(key)
}

// ListRoots asks for the client's roots.
func (c *Ctx) ListRoots(key string) ([]Root, error) {
	a, err := c.Input(Roots(key))
	if err != nil {
		return nil, err
	}
	return a.Roots(key)
}

func notify(method string, params any) error {
	b, _ := json.Marshal(map[string]any{"method": method, "params": params})
	resp, code := guest.Notify(b)
	if abi.Code(code) != abi.OK {
		return fmt.Errorf("notify %s: %s", method, resp)
	}
	return nil
}

// NotifyToolsChanged tells listening clients that the tools list changed.
func NotifyToolsChanged() error { return notify("notifications/tools/list_changed", map[string]any{}) }

// NotifyPromptsChanged tells listening clients that the prompts changed.
func NotifyPromptsChanged() error {
	return notify("notifications/prompts/list_changed", map[string]any{})
}

// NotifyResourcesChanged tells listening clients that the resources list
// changed.
func NotifyResourcesChanged() error {
	return notify("notifications/resources/list_changed", map[string]any{})
}

// NotifyResourceUpdated tells the clients subscribed to uri that it
// changed.
func NotifyResourceUpdated(uri string) error {
	return notify("notifications/resources/updated", map[string]any{"uri": uri})
}

// finishCall runs a tool's call with args and ends it: the handler's
// result, its JSON-RPC error, or the input_required unwinding. (The call
// and its arguments, not a closure over them: a closure's call is one
// more in the guest's path.)
func finishCall(call func(c *Ctx, args []byte) (*Result, error), args []byte) (ret int32) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(inputRequiredSignal); ok {
				ret = abi.RetInputRequired
				return
			}
			panic(r)
		}
	}()
	res, err := call(&ctx, args)
	if err != nil {
		var re *RPCError
		if errors.As(err, &re) {
			b, _ := json.Marshal(re)
			guest.WriteOutput(b)
			return abi.RetRPCError
		}
		res = ErrorResult(err.Error())
	}
	if res == nil {
		res = &Result{}
	}
	writeResult(res)
	return abi.RetOK
}

// finishRaw is finishCall for the non-tool operations, whose results are
// JSON built by the caller.
func finishRaw(run func() ([]byte, error)) (ret int32) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(inputRequiredSignal); ok {
				ret = abi.RetInputRequired
				return
			}
			panic(r)
		}
	}()
	b, err := run()
	if err != nil {
		re := &RPCError{}
		if !errors.As(err, &re) {
			re = &RPCError{Code: CodeInternalError, Message: err.Error()}
		}
		eb, _ := json.Marshal(re)
		guest.WriteOutput(eb)
		return abi.RetRPCError
	}
	guest.WriteOutput(b)
	return abi.RetOK
}
