// Package composite is the catalogue aiod serves when upstream MCP servers
// are registered: the plugin registry's, with the upstreams' tools after
// its own. The composition root builds it; host/mcp sees only mcp.Catalog.
package composite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/tenant"
	"github.com/aiodhq/aiod/host/upstream"
)

// Catalog is what the protocol layer serves when upstream MCP servers are
// registered: the plugin registry (built-ins, then the other plugins) and,
// after its tools, the upstreams' tools (host/upstream), in registration
// order, each in its upstream's order. A plugin's name wins a collision (the
// set excludes the registry's names). Prompts, resources and resource
// templates are the registry's, then the upstreams' (surface.go).
type Catalog struct {
	*plugin.Registry
	ups *upstream.Set
}

// New composes reg and ups (ups excludes the registry's names itself).
func New(reg *plugin.Registry, ups *upstream.Set) *Catalog { return &Catalog{Registry: reg, ups: ups} }

var (
	_ mcp.Catalog       = (*Catalog)(nil)
	_ mcp.ToolLister    = (*Catalog)(nil)
	_ mcp.ToolsNotifier = (*Catalog)(nil)
)

// OnToolsChanged is mcp.ToolsNotifier: f runs once for each change an
// upstream makes to the published tools (its list_changed, or a refresh that
// finds a difference). A plugin swap tells clients itself (the registry's
// OnSwap) and rebases the set, so the names it takes from an upstream are not
// announced a second time.
func (c *Catalog) OnToolsChanged(f func()) {
	c.ups.OnChange(f)
	c.Registry.OnSwap(func(*mcp.Snapshot) { c.ups.Rebase() })
}

// ListTools is tools/list: the registry's rendering with the upstreams'
// definitions appended, as the upstreams wrote them.
func (c *Catalog) ListTools(ctx context.Context) []byte {
	own := c.Registry.Catalog().ToolsJSON()
	tools := c.ups.Tools(ctx)
	// A tenant sees the tools of the upstreams its allow-list names only.
	if t := tenant.FromContext(ctx); t != nil {
		kept := tools[:0:0]
		for _, u := range tools {
			if t.UpstreamAllowed(u.Server) {
				kept = append(kept, u)
			}
		}
		tools = kept
	}
	if len(tools) == 0 {
		return own
	}
	n := len(own)
	for _, t := range tools {
		n += len(t.Definition) + 1
	}
	b := make([]byte, 0, n+2)
	own = bytes.TrimSpace(own)
	if len(own) >= 2 && own[0] == '[' && own[len(own)-1] == ']' {
		b = append(b, own[:len(own)-1]...) // without the ']'
	} else {
		b = append(b, '[')
	}
	for _, t := range tools {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, t.Definition...)
	}
	return append(b, ']')
}

// UpstreamVisible reports whether the tenant of ctx sees name as far as the
// upstreams go: true for a name no upstream publishes (a plugin's), else
// whether its allow-list names the upstream that does.
func (c *Catalog) UpstreamVisible(ctx context.Context, name string) bool {
	if c.Registry.Catalog().Lookup(name) != nil {
		return true
	}
	server, _, ok := c.ups.Route(name)
	return !ok || tenant.FromContext(ctx).UpstreamAllowed(server)
}

// CallTool runs a plugin tool, or forwards the call to the upstream that
// publishes the name. An upstream's answer comes back as it wrote it,
// without its hop's envelope (host/upstream's Set.Call); a
// server that is down answers an isError result naming it; a JSON-RPC error
// of the upstream is relayed as one. Progress and log notifications of the
// upstream reach the client when the client asked for them (req.Notify is
// set only then); cancelling ctx cancels the upstream call.
func (c *Catalog) CallTool(ctx context.Context, req plugin.CallRequest) ([]byte, error) {
	res, err := c.Registry.CallTool(ctx, req)
	if !errors.Is(err, plugin.ErrUnknownTool) {
		return res, err
	}
	if server, _, ok := c.ups.Route(req.Name); ok && !tenant.FromContext(ctx).UpstreamAllowed(server) {
		return nil, plugin.ErrUnknownTool // another tenant's upstream does not exist for this one
	}
	server, _, _ := c.ups.Route(req.Name)
	res, err = c.ups.CallAsking(ctx, req.Name, req.Args, relayNotify(req.Notify), asker(server, req.Client))
	var re *upstream.RPCError
	var ie *inputError
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, hostfn.ErrClientInputRequired):
		return nil, plugin.ErrInputRequired
	case errors.As(err, &ie):
		return errorResult(ie.Error()), nil
	case errors.Is(err, upstream.ErrUnknownTool):
		return nil, plugin.ErrUnknownTool
	case errors.As(err, &re):
		body, merr := json.Marshal(struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		}{re.Code, re.Message, re.Data})
		if merr != nil { // data that is not JSON: relay without it
			body, _ = json.Marshal(struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			}{re.Code, re.Message})
		}
		return nil, &plugin.RPCError{Body: body}
	}
	return nil, err
}

// relayNotify adapts the protocol layer's notify function (which takes the
// params as a map, puts its client's progress token in and filters log
// messages by the client's level) to host/upstream's raw params.
func relayNotify(notify func(kind string, params any)) func(string, json.RawMessage) {
	if notify == nil {
		return nil
	}
	return func(method string, params json.RawMessage) {
		dec := json.NewDecoder(bytes.NewReader(params))
		dec.UseNumber() // progress values keep their digits
		var m map[string]any
		if dec.Decode(&m) == nil && m != nil {
			notify(method, m)
		}
	}
}

// errorResult is a CallToolResult with isError and one text item.
func errorResult(text string) []byte {
	b, _ := json.Marshal(struct {
		Content []map[string]string `json:"content"`
		IsError bool                `json:"isError"`
	}{[]map[string]string{{"type": "text", "text": text}}, true})
	return b
}
