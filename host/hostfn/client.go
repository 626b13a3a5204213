package hostfn

import (
	"context"

	"github.com/aiodhq/aiod/sdk/abi"
)

// Client is the MCP client behind the running request, as a plugin reaches
// it through aiod:core (spec/abi/v1.md, "The client"). host/mcp implements
// it per request, for the request's protocol era.
type Client interface {
	// Info describes the request as JSON: {"era", "protocolVersion",
	// "clientCapabilities", "clientInfo"}.
	Info() []byte
	// Input asks the client for input. req is a JSON object of input
	// requests by key, {"<key>": {"method": "elicitation/create" |
	// "sampling/createMessage" | "roots/list", "params": {...}}}; the
	// response is the client's results by the same keys. Legacy era: the
	// requests go to the client over the request's event stream and Input
	// waits for the answers. 2026-07-28: answers come from the request's
	// inputResponses; a missing one ends the call with an *Error of code
	// abi.InputRequired, after which the host answers input_required.
	Input(ctx context.Context, req []byte) ([]byte, error)
	// Notify sends a server notification that is not about this request
	// ({"method": "notifications/tools/list_changed" | ".../prompts/list_changed"
	// | ".../resources/list_changed" | "notifications/resources/updated",
	// "params": {...}}) to every client listening for it.
	Notify(ctx context.Context, req []byte) error
}

var (
	clientInfoDef = ReqResp(abi.ModuleCore, "client_info", func(_ context.Context, c *Call, _ []byte) ([]byte, error) {
		if c.Client == nil {
			return []byte(`{"era":"none","clientCapabilities":{}}`), nil
		}
		return c.Client.Info(), nil
	})
	clientInputDef = ReqResp(abi.ModuleCore, "client_input", func(ctx context.Context, c *Call, req []byte) ([]byte, error) {
		if c.Client == nil {
			return nil, Errorf(abi.Unavailable, "this call has no MCP client to ask for input")
		}
		return c.Client.Input(ctx, req)
	})
	notifyDef = ReqResp(abi.ModuleCore, "notify", func(ctx context.Context, c *Call, req []byte) ([]byte, error) {
		if c.Client == nil {
			return nil, Errorf(abi.Unavailable, "this call has no MCP server to notify through")
		}
		return nil, c.Client.Notify(ctx, req)
	})
)
