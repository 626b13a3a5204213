package composite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/tenant"
	"github.com/aiodhq/aiod/host/upstream"
)

// The upstreams' prompts, resources and resource templates after the
// registry's, their prompts/get, resources/read and completion/complete, and
// the way their input requests reach the client of the request under way.

var (
	_ mcp.Lister       = (*Catalog)(nil)
	_ mcp.ListNotifier = (*Catalog)(nil)
)

// List implements mcp.Lister: the registry's items of key, then the
// upstreams' the request's tenant may use.
func (c *Catalog) List(ctx context.Context, key string) ([]byte, bool) {
	snap := c.Registry.Snapshot()
	var own []byte
	switch key {
	case upstream.KindPrompts:
		own = snap.PromptsJSON()
	case upstream.KindResources:
		own = snap.ResourcesJSON()
	case upstream.KindTemplates:
		own = snap.TemplatesJSON()
	default:
		return nil, false
	}
	items := c.ups.List(ctx, key)
	t := tenant.FromContext(ctx)
	taken := ownKeys(own, key)
	defs := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		if (t == nil || t.UpstreamAllowed(it.Server)) && !taken[it.Key] { // a plugin's name wins
			defs = append(defs, it.Definition)
		}
	}
	return appendItems(own, defs), true
}

// ownKeys are the names (prompts) or URIs of the registry's items.
func ownKeys(own []byte, key string) map[string]bool {
	var items []map[string]json.RawMessage
	if json.Unmarshal(own, &items) != nil {
		return nil
	}
	field := map[string]string{upstream.KindPrompts: "name", upstream.KindResources: "uri", upstream.KindTemplates: "uriTemplate"}[key]
	out := make(map[string]bool, len(items))
	for _, it := range items {
		var k string
		if json.Unmarshal(it[field], &k) == nil {
			out[k] = true
		}
	}
	return out
}

// appendItems appends defs to the JSON array own.
func appendItems(own []byte, defs []json.RawMessage) []byte {
	if len(defs) == 0 {
		return own
	}
	own = bytes.TrimSpace(own)
	b := make([]byte, 0, len(own)+64*len(defs))
	if len(own) >= 2 && own[0] == '[' && own[len(own)-1] == ']' {
		b = append(b, own[:len(own)-1]...)
	} else {
		b = append(b, '[')
	}
	for _, d := range defs {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, d...)
	}
	return append(b, ']')
}

// OnListChanged implements mcp.ListNotifier (the upstreams' changes).
func (c *Catalog) OnListChanged(f func(kind string)) { c.ups.OnListChanged(f) }

// allowed reports whether the request's tenant may use server.
func allowed(ctx context.Context, server string) bool {
	return server == "" || tenant.FromContext(ctx).UpstreamAllowed(server)
}

// GetPrompt is the registry's prompt, else an upstream's.
func (c *Catalog) GetPrompt(ctx context.Context, req plugin.CallRequest) ([]byte, error) {
	res, err := c.Registry.GetPrompt(ctx, req)
	if !errors.Is(err, plugin.ErrUnknownPrompt) {
		return res, err
	}
	server, ok := c.ups.RoutePrompt(req.Name)
	if !ok || !allowed(ctx, server) {
		return nil, plugin.ErrUnknownPrompt
	}
	res, err = c.ups.GetPrompt(ctx, req.Name, req.Args, asker(server, req.Client))
	return c.outcome(res, err, plugin.ErrUnknownPrompt)
}

// ReadResource is the registry's resource, else an upstream's.
func (c *Catalog) ReadResource(ctx context.Context, req plugin.CallRequest) ([]byte, error) {
	res, err := c.Registry.ReadResource(ctx, req)
	if !errors.Is(err, plugin.ErrUnknownResource) {
		return res, err
	}
	server, _, ok := c.ups.RouteURI(req.Name)
	if !ok || !allowed(ctx, server) {
		return nil, plugin.ErrUnknownResource
	}
	res, err = c.ups.ReadResource(ctx, req.Name, asker(server, req.Client))
	return c.outcome(res, err, plugin.ErrUnknownResource)
}

// Complete is the registry's completion, else an upstream's when the
// reference names an upstream's prompt or resource template.
func (c *Catalog) Complete(ctx context.Context, req plugin.CallRequest) ([]byte, error) {
	res, err := c.Registry.Complete(ctx, req)
	if !errors.Is(err, plugin.ErrUnknownPrompt) {
		return res, err
	}
	var p struct {
		Ref struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if json.Unmarshal(req.Args, &p) != nil {
		return nil, plugin.ErrUnknownPrompt
	}
	server := c.ups.ServerOf(p.Ref.Name + p.Ref.URI)
	if server == "" || !allowed(ctx, server) {
		return nil, plugin.ErrUnknownPrompt
	}
	res, err = c.ups.Complete(ctx, req.Args)
	return c.outcome(res, err, plugin.ErrUnknownPrompt)
}

// outcome maps an upstream request's error to the catalogue's.
func (c *Catalog) outcome(res []byte, err error, unknown error) ([]byte, error) {
	var re *upstream.RPCError
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, upstream.ErrUnknownItem):
		return nil, unknown
	case errors.Is(err, hostfn.ErrClientInputRequired):
		return nil, plugin.ErrInputRequired
	case errors.As(err, &re):
		return nil, rpcError(re.Code, re.Message, re.Data)
	case errors.Is(err, context.Canceled):
		return nil, err
	}
	return nil, rpcError(-32603, err.Error(), nil)
}

func rpcError(code int64, msg string, data json.RawMessage) *plugin.RPCError {
	body, err := json.Marshal(struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{code, msg, data})
	if err != nil { // data that is not JSON: relay without it
		body, _ = json.Marshal(struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}{code, msg})
	}
	return &plugin.RPCError{Body: body}
}

// asker relays an upstream's input requests to the client of the request
// under way, in its era (host/mcp: a legacy client is sent the request on
// the call's stream and its answer awaited; a 2026-07-28 client gets
// input_required, and the request runs again with the answers). Nil
// without a client.
func asker(server string, cl hostfn.Client) upstream.Asker {
	if cl == nil {
		return nil
	}
	return func(ctx context.Context, key, method string, params json.RawMessage) (json.RawMessage, error) {
		req, err := json.Marshal(map[string]any{key: map[string]any{"method": method, "params": params}})
		if err != nil {
			return nil, err
		}
		out, err := cl.Input(ctx, req)
		if err != nil {
			var ce *hostfn.ClientError
			if errors.As(err, &ce) && errors.Is(ce.Kind, hostfn.ErrClientInputRequired) {
				return nil, err // answered in a later round
			}
			return nil, &inputError{server: server, method: method, err: err}
		}
		var answers map[string]json.RawMessage
		if err := json.Unmarshal(out, &answers); err != nil || answers[key] == nil {
			return nil, &inputError{server: server, method: method, err: errors.New("no answer")}
		}
		return answers[key], nil
	}
}

// inputError is an input request the client could not answer: the call
// fails with it.
type inputError struct {
	server, method string
	err            error
}

func (e *inputError) Error() string {
	return fmt.Sprintf("upstream MCP server %q asked the client for input (%s), and the client cannot answer: %v", e.server, e.method, e.err)
}

func (e *inputError) Unwrap() error { return e.err }
