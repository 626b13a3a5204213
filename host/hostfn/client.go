package hostfn

import (
	"context"
	"errors"
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
	// inputResponses; a missing one ends the call with ErrClientInputRequired,
	// after which the host answers input_required.
	Input(ctx context.Context, req []byte) ([]byte, error)
	// Notify sends a server notification that is not about this request
	// ({"method": "notifications/tools/list_changed" | ".../prompts/list_changed"
	// | ".../resources/list_changed" | "notifications/resources/updated",
	// "params": {...}}) to every client listening for it.
	Notify(ctx context.Context, req []byte) error
}

// The kinds of error a Client returns. A Client wraps one of them (with %w,
// or in a *ClientError to carry detail fields) and never chooses an ABI
// code itself: the core family (host/hostfn/core) maps them to codes,
// there and only there.
var (
	ErrClientInvalid       = errors.New("invalid request to the client")  // invalid
	ErrClientUnavailable   = errors.New("the client cannot do this")      // unavailable
	ErrClientTimeout       = errors.New("no answer from the client")      // timeout
	ErrClientInputRequired = errors.New("input required from the client") // input_required
)

// ClientError is a Client failure of a given kind with detail fields that
// reach the guest in the error object (e.g. requiredCapabilities).
type ClientError struct {
	Kind    error // one of the ErrClient* kinds
	Message string
	Detail  map[string]any
}

func (e *ClientError) Error() string { return e.Message }
func (e *ClientError) Unwrap() error { return e.Kind }
