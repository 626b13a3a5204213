package core

import (
	"context"
	"errors"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

// The client functions (spec/abi/v1.md, "The client"): client_info,
// client_input and notify reach the request's hostfn.Client.

// clientError maps a Client's error to the ABI error the guest sees.
func clientError(err error) error {
	if err == nil {
		return nil
	}
	code := abi.Internal
	switch {
	case errors.Is(err, hostfn.ErrClientInvalid):
		code = abi.Invalid
	case errors.Is(err, hostfn.ErrClientUnavailable):
		code = abi.Unavailable
	case errors.Is(err, hostfn.ErrClientTimeout):
		code = abi.Timeout
	case errors.Is(err, hostfn.ErrClientInputRequired):
		code = abi.InputRequired
	}
	he := &hostfn.Error{Code: code, Message: err.Error()}
	var ce *hostfn.ClientError
	if errors.As(err, &ce) {
		he.Detail = ce.Detail
	}
	return he
}

var (
	clientInfoDef = hostfn.ReqResp(abi.ModuleCore, "client_info", func(_ context.Context, c *hostfn.Call, _ []byte) ([]byte, error) {
		if c.Client == nil {
			return []byte(`{"era":"none","clientCapabilities":{}}`), nil
		}
		return c.Client.Info(), nil
	})
	clientInputDef = hostfn.ReqResp(abi.ModuleCore, "client_input", func(ctx context.Context, c *hostfn.Call, req []byte) ([]byte, error) {
		if c.Client == nil {
			return nil, hostfn.Errorf(abi.Unavailable, "this call has no MCP client to ask for input")
		}
		resp, err := c.Client.Input(ctx, req)
		return resp, clientError(err)
	})
	notifyDef = hostfn.ReqResp(abi.ModuleCore, "notify", func(ctx context.Context, c *hostfn.Call, req []byte) ([]byte, error) {
		if c.Client == nil {
			return nil, hostfn.Errorf(abi.Unavailable, "this call has no MCP server to notify through")
		}
		return nil, clientError(c.Client.Notify(ctx, req))
	})
)
