package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/skills"
)

// Middleware puts the request's tenant in its context, for what runs
// after it: the audit log, the metrics, Filter, the upstream catalogue.
// It must be the outermost of them.
func (s *Set) Middleware() mcp.Middleware {
	return func(next mcp.Handler) mcp.Handler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			return next(req.WithValue(ctx, ctxKey{}, s.ForOwner(req.Principal.Owner)), req)
		}
	}
}

// Filter removes from every list what the request's tenant (from the
// context Middleware set) may not use: tools and prompts by name,
// resources by URI, resource templates by URI template, skills (the
// skills extension) by their SKILL.md URI; and it answers a skills
// request for a skill:// URI the tenant may not use as one for a skill
// that does not exist (hiddenSkill). It goes innermost,
// so that the audit log and the metrics see the lists as sent. Calls of
// hidden names are refused by Catalog, as names that do not exist.
func (s *Set) Filter() mcp.Middleware { return s.FilterExcept(nil) }

// FilterExcept is Filter keeping in tools/list, whatever the allow-list,
// the tools listed reports for the request: the tool search tools while
// tool search is on for its tenant (host/internal/toolsearch), which the
// catalogue answers before the allow-list applies. Nil: none.
func (s *Set) FilterExcept(listed func(ctx context.Context, name string) bool) mcp.Middleware {
	return func(next mcp.Handler) mcp.Handler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			t := FromContext(ctx)
			if t == nil {
				t = s.ForOwner(req.Principal.Owner)
			}
			if !t.Unrestricted {
				if e := hiddenSkill(req, t); e != nil {
					return nil, e
				}
			}
			res, err := next(ctx, req)
			if err != nil || t.Unrestricted {
				return res, err
			}
			switch req.Method {
			case "skills/list":
				return filterList(res, "skills", "uri", t.Allowed)
			case "tools/list":
				if listed != nil {
					return filterList(res, "tools", "name", func(name string) bool { return t.Allowed(name) || listed(ctx, name) })
				}
				return filterList(res, "tools", "name", t.Allowed)
			case "prompts/list":
				return filterList(res, "prompts", "name", t.Allowed)
			case "resources/list":
				return filterList(res, "resources", "uri", t.Allowed)
			case "resources/templates/list":
				return filterList(res, "resourceTemplates", "uriTemplate", t.Allowed)
			}
			return res, nil
		}
	}
}

// hiddenSkill answers a request of the skills extension for a skill://
// URI the tenant may not use (its tools globs name skill URIs as they name
// resources) exactly as the protocol layer answers one for a skill that
// does not exist (host/mcp/skills.go; TestSkillsFollowAllowList compares
// the two answers); nil when the request is not one.
func hiddenSkill(req *mcp.Request, t *Tenant) *mcp.Error {
	uri := req.Name
	if !strings.HasPrefix(uri, skills.Scheme) {
		return nil
	}
	data := map[string]string{"uri": uri}
	switch req.Method {
	case "resources/read":
		if t.Allowed(uri) {
			return nil
		}
		code := mcp.CodeInvalidParams
		if req.Era == mcp.Legacy {
			code = mcp.CodeLegacyNotFound
		}
		return &mcp.Error{Code: code, Message: "Resource not found: " + uri, Data: data}
	case "skills/get":
		if t.Allowed(uri) {
			return nil
		}
		return &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: unknown skill " + uri, Data: data}
	case "resources/directory/read":
		// a directory is the tenant's when what is under it is
		if t.Allowed(strings.TrimSuffix(uri, "/") + "/") {
			return nil
		}
		return &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: " + uri + " is not a served directory", Data: data}
	}
	return nil
}

// filterList keeps the items of list result res whose field allowed
// admits; every other member of the result is kept as it was.
func filterList(res json.RawMessage, key, field string, allowed func(string) bool) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(res, &obj); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(obj[key], &items); err != nil {
		return nil, err
	}
	kept := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		var m map[string]json.RawMessage
		var name string
		if json.Unmarshal(it, &m) == nil && json.Unmarshal(m[field], &name) == nil && allowed(name) {
			kept = append(kept, it)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	obj[key] = b
	return json.Marshal(obj)
}

// Catalog wraps cat so that a tenant's calls of names it may not use are
// answered as the names not existing: the protocol layer then renders the
// exact answer it gives for a missing tool, prompt or resource. It keeps
// cat's tools/list (mcp.ToolLister) when cat has one.
func (s *Set) Catalog(cat mcp.Catalog) mcp.Catalog {
	c := &catalog{inner: cat, s: s}
	if l, ok := cat.(mcp.ToolLister); ok {
		return &listingCatalog{catalog: c, l: l}
	}
	return c
}

type catalog struct {
	inner mcp.Catalog
	s     *Set
}

func (c *catalog) Snapshot() *mcp.Snapshot      { return c.inner.Snapshot() }
func (c *catalog) OnSwap(f func(*mcp.Snapshot)) { c.inner.OnSwap(f) }

type listingCatalog struct {
	*catalog
	l mcp.ToolLister
}

func (c *listingCatalog) ListTools(ctx context.Context) []byte { return c.l.ListTools(ctx) }

// List and OnListChanged pass mcp.Lister and mcp.ListNotifier through (the
// upstreams' prompts and resources).
func (c *listingCatalog) List(ctx context.Context, key string) ([]byte, bool) {
	if l, ok := c.inner.(mcp.Lister); ok {
		return l.List(ctx, key)
	}
	return nil, false
}

func (c *listingCatalog) OnListChanged(f func(kind string)) {
	if n, ok := c.inner.(mcp.ListNotifier); ok {
		n.OnListChanged(f)
	}
}

// OnToolsChanged passes mcp.ToolsNotifier through (the upstreams' changes).
func (c *listingCatalog) OnToolsChanged(f func()) {
	if n, ok := c.inner.(mcp.ToolsNotifier); ok {
		n.OnToolsChanged(f)
	}
}

func (c *catalog) CallTool(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	if !c.s.ForOwner(req.Owner).Allowed(req.Name) {
		return nil, mcp.ErrUnknownTool
	}
	return c.inner.CallTool(ctx, req)
}

func (c *catalog) GetPrompt(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	if !c.s.ForOwner(req.Owner).Allowed(req.Name) {
		return nil, mcp.ErrUnknownPrompt
	}
	return c.inner.GetPrompt(ctx, req)
}

func (c *catalog) ReadResource(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	if !c.s.ForOwner(req.Owner).Allowed(req.Name) {
		return nil, mcp.ErrUnknownResource
	}
	return c.inner.ReadResource(ctx, req)
}

// Complete refuses a reference to a prompt or resource template the
// tenant may not use as a reference to nothing known.
func (c *catalog) Complete(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	var p struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if err := json.Unmarshal(req.Args, &p); err != nil {
		return nil, errors.Join(mcp.ErrUnknownPrompt, err)
	}
	name := p.Ref.Name
	if p.Ref.Type == "ref/resource" {
		name = p.Ref.URI
	}
	if !c.s.ForOwner(req.Owner).Allowed(name) {
		return nil, mcp.ErrUnknownPrompt
	}
	return c.inner.Complete(ctx, req)
}
