// Package upstream is the aiod:upstream host function family
// (spec/abi/v1/upstream.md), over host/upstream.
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Family is the aiod:upstream family (spec/abi/v1/upstream.md):
// list and call over the host's upstream MCP servers, each function scoped
// to the servers the plugin's grant names.
type Family struct {
	set *upstream.Set // nil: no upstream servers are registered
}

// New returns the upstream family over set (nil when the host has
// no upstream servers: every granted name is then not_found).
func New(set *upstream.Set) hostfn.Family { return &Family{set: set} }

// Name is abi.FamilyUpstream.
func (*Family) Name() abi.Family { return abi.FamilyUpstream }

// Defs are the functions of aiod:upstream.
func (f *Family) Defs() []hostfn.Def {
	return []hostfn.Def{
		hostfn.ReqResp(abi.ModuleUpstream, "list", hostfn.StrictJSON(f.list)),
		hostfn.ReqResp(abi.ModuleUpstream, "call", f.call),
	}
}

// allowed checks the grant first, so a plugin learns nothing about servers
// it was not granted: an ungranted name is denied whether it is registered
// or not.
func (f *Family) allowed(c *hostfn.Call, server string) error {
	switch {
	case server == "":
		return hostfn.Errorf(abi.Invalid, "server is required")
	case c.Grant == nil || !c.Grant.Has(abi.FamilyUpstream) || !c.Grant.UpstreamAllowed(server):
		return &hostfn.Error{Code: abi.Denied, Message: "upstream MCP server " + quote(server) + " is not granted to this plugin", Detail: map[string]any{"server": server}}
	case f.set == nil:
		return notFound(server)
	}
	return nil
}

func notFound(server string) error {
	return &hostfn.Error{Code: abi.NotFound, Message: "no upstream MCP server " + quote(server) + " is registered", Detail: map[string]any{"server": server}}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (f *Family) list(ctx context.Context, c *hostfn.Call, req *abi.UpstreamListRequest) (*abi.UpstreamListResponse, error) {
	if err := f.allowed(c, req.Server); err != nil {
		return nil, err
	}
	tools, reachable, err := f.set.ServerTools(ctx, req.Server)
	if errors.Is(err, upstream.ErrUnknownServer) {
		return nil, notFound(req.Server)
	} else if err != nil {
		return nil, err
	}
	if tools == nil {
		tools = []json.RawMessage{}
	}
	return &abi.UpstreamListResponse{Tools: tools, Reachable: reachable}, nil
}

// call answers the upstream's CallToolResult bytes as they came (not
// re-encoded, which would change them).
func (f *Family) call(ctx context.Context, c *hostfn.Call, raw []byte) ([]byte, error) {
	var req abi.UpstreamCallRequest
	if err := hostfn.DecodeRequest(raw, &req); err != nil {
		return nil, hostfn.Errorf(abi.Invalid, "bad request: %v", err)
	}
	if err := f.allowed(c, req.Server); err != nil {
		return nil, err
	}
	if req.Tool == "" {
		return nil, hostfn.Errorf(abi.Invalid, "tool is required")
	}
	args := bytes.TrimSpace(req.Arguments)
	if len(args) > 0 && string(args) != "null" && args[0] != '{' {
		return nil, hostfn.Errorf(abi.Invalid, "arguments must be an object")
	}
	var notify func(string, json.RawMessage)
	if c.Notify != nil {
		notify = func(method string, params json.RawMessage) {
			dec := json.NewDecoder(bytes.NewReader(params))
			dec.UseNumber()
			var m map[string]any
			if dec.Decode(&m) == nil && m != nil {
				c.Notify(method, m)
			}
		}
	}
	res, err := f.set.CallServer(ctx, req.Server, req.Tool, args, notify)
	var re *upstream.RPCError
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, upstream.ErrUnknownServer):
		return nil, notFound(req.Server)
	case errors.As(err, &re):
		d := map[string]any{"rpc_code": re.Code, "server": req.Server}
		if len(re.Data) > 0 && json.Valid(re.Data) {
			d["rpc_data"] = json.RawMessage(re.Data)
		}
		return nil, &hostfn.Error{Code: abi.Invalid, Message: re.Error(), Detail: d}
	case ctx.Err() != nil:
		return nil, hostfn.Errorf(abi.Timeout, "upstream MCP server %s: %v", quote(req.Server), ctx.Err())
	}
	return nil, hostfn.Errorf(abi.Unavailable, "upstream MCP server %s: %v", quote(req.Server), err)
}
