package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/aiodhq/aiod/host/mcp/catalog"
	"github.com/aiodhq/aiod/sdk/abi"
)

// The errors a call ends with, and the JSON-RPC error a plugin may answer
// with, are the protocol layer's (host/mcp/catalog).
var (
	ErrUnknownPrompt   = catalog.ErrUnknownPrompt
	ErrUnknownResource = catalog.ErrUnknownResource
	ErrInputRequired   = catalog.ErrInputRequired
)

// RPCError is a JSON-RPC error a plugin chose to answer with.
type RPCError = catalog.RPCError

// Prompt, Resource and Template are catalogue entries of the server
// surface beyond tools.
type (
	Prompt struct {
		Decl   abi.Prompt
		Plugin *Plugin
	}
	Resource struct {
		Decl   abi.Resource
		Plugin *Plugin
	}
	Template struct {
		Decl   abi.ResourceTemplate
		Plugin *Plugin
		re     *regexp.Regexp
		vars   []string
	}
)

// surface is the part of a Catalog beyond tools.
type surface struct {
	Prompts       []*Prompt
	Resources     []*Resource
	Templates     []*Template
	promptByName  map[string]*Prompt
	resourceByURI map[string]*Resource
}

// PromptsJSON, ResourcesJSON and TemplatesJSON are the pre-rendered JSON
// arrays of the declarations, in catalogue order.
func (c *Catalog) PromptsJSON() []byte   { return c.snap.PromptsJSON() }
func (c *Catalog) ResourcesJSON() []byte { return c.snap.ResourcesJSON() }
func (c *Catalog) TemplatesJSON() []byte { return c.snap.TemplatesJSON() }

// addSurface adds p's prompts, resources and templates to the catalogue
// being built; on a name or URI clash the first plugin keeps it.
func (c *Catalog) addSurface(p *Plugin, warn func(msg string, args ...any)) {
	if c.promptByName == nil {
		c.promptByName = map[string]*Prompt{}
		c.resourceByURI = map[string]*Resource{}
	}
	m := p.Manifest
	for _, d := range m.Prompts {
		if prev, clash := c.promptByName[d.Name]; clash {
			warn("prompt refused: name already taken", "prompt", d.Name, "plugin", m.Name, "kept", prev.Plugin.Manifest.Name)
			continue
		}
		e := &Prompt{Decl: d, Plugin: p}
		c.promptByName[d.Name] = e
		c.Prompts = append(c.Prompts, e)
	}
	for _, d := range m.Resources {
		if prev, clash := c.resourceByURI[d.URI]; clash {
			warn("resource refused: uri already taken", "uri", d.URI, "plugin", m.Name, "kept", prev.Plugin.Manifest.Name)
			continue
		}
		e := &Resource{Decl: d, Plugin: p}
		c.resourceByURI[d.URI] = e
		c.Resources = append(c.Resources, e)
	}
	for _, d := range m.ResourceTemplates {
		re, vars, err := compileTemplate(d.URITemplate)
		if err != nil {
			warn("resource template refused", "uriTemplate", d.URITemplate, "plugin", m.Name, "err", err)
			continue
		}
		c.Templates = append(c.Templates, &Template{Decl: d, Plugin: p, re: re, vars: vars})
	}
}

// Changed reports which client-visible lists differ between prev and c:
// the tools, the prompts, and the resources or templates. A nil prev
// differs in every list.
func (c *Catalog) Changed(prev *Catalog) (tools, prompts, resources bool) {
	if prev == nil {
		return c.snap.Changed(nil)
	}
	return c.snap.Changed(prev.snap)
}

// renderSurface renders the JSON arrays of c's prompts, resources and
// resource templates.
func (c *Catalog) renderSurface() (prompts, resources, templates []byte, err error) {
	list := func(n int, at func(i int) any) []byte {
		if err != nil {
			return nil
		}
		v := make([]any, n)
		for i := range v {
			v[i] = at(i)
		}
		var b []byte
		b, err = json.Marshal(v)
		return b
	}
	prompts = list(len(c.Prompts), func(i int) any { return c.Prompts[i].Decl })
	resources = list(len(c.Resources), func(i int) any { return c.Resources[i].Decl })
	templates = list(len(c.Templates), func(i int) any { return c.Templates[i].Decl })
	return prompts, resources, templates, err
}

// compileTemplate turns an RFC 6570 template into a matcher: {var} and
// {+var} (reserved expansion) are supported; {var} does not cross '/'.
func compileTemplate(t string) (*regexp.Regexp, []string, error) {
	var b strings.Builder
	var vars []string
	b.WriteString("^")
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(t))
			break
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return nil, nil, errors.New("unbalanced braces")
		}
		b.WriteString(regexp.QuoteMeta(t[:i]))
		name := t[i+1 : i+j]
		pat := `([^/]+)`
		if strings.HasPrefix(name, "+") {
			name, pat = name[1:], `(.+)`
		}
		if name == "" || strings.ContainsAny(name, ",?#/&;.*") {
			return nil, nil, errors.New("unsupported expression {" + name + "}")
		}
		vars = append(vars, name)
		b.WriteString(pat)
		t = t[i+j+1:]
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return re, vars, err
}

// matchResource finds the plugin serving uri: a declared resource, else
// the first template that matches.
func (c *Catalog) matchResource(uri string) (p *Plugin, name string, vars map[string]string) {
	if r := c.resourceByURI[uri]; r != nil {
		return r.Plugin, r.Decl.URI, nil
	}
	for _, t := range c.Templates {
		if m := t.re.FindStringSubmatch(uri); m != nil {
			vars = make(map[string]string, len(t.vars))
			for i, v := range t.vars {
				vars[v] = m[i+1]
			}
			return t.Plugin, t.Decl.URITemplate, vars
		}
	}
	return nil, "", nil
}

// GetPrompt renders a prompt: req.Name is the prompt name and req.Args the
// arguments object. The result is the plugin's GetPromptResult JSON.
func (r *Registry) GetPrompt(ctx context.Context, req CallRequest) ([]byte, error) {
	return r.invokeCurrent(ctx, abi.OpPromptGet, func(cat *Catalog) (*Plugin, CallRequest, error) {
		pr := cat.promptByName[req.Name]
		if pr == nil {
			return nil, req, ErrUnknownPrompt
		}
		return pr.Plugin, req, nil
	})
}

// ReadResource reads the resource at req.Name (the URI). The result is
// the plugin's ReadResourceResult JSON.
func (r *Registry) ReadResource(ctx context.Context, req CallRequest) ([]byte, error) {
	return r.invokeCurrent(ctx, abi.OpResourceRead, func(cat *Catalog) (*Plugin, CallRequest, error) {
		p, name, vars := cat.matchResource(req.Name)
		if p == nil {
			return nil, req, ErrUnknownResource
		}
		args, _ := json.Marshal(struct {
			URI       string            `json:"uri"`
			Variables map[string]string `json:"variables,omitempty"`
		}{req.Name, vars})
		rq := req
		rq.Name, rq.Args = name, args
		return p, rq, nil
	})
}

// Complete asks the plugin owning the referenced prompt or resource
// template for completions. req.Args is the completion/complete params
// object; the result is the plugin's CompleteResult JSON. A reference to
// nothing known answers no values.
func (r *Registry) Complete(ctx context.Context, req CallRequest) ([]byte, error) {
	var ref struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if err := json.Unmarshal(req.Args, &ref); err != nil {
		return nil, err
	}
	out, err := r.invokeCurrent(ctx, abi.OpComplete, func(cat *Catalog) (*Plugin, CallRequest, error) {
		rq := req
		var p *Plugin
		switch ref.Ref.Type {
		case "ref/prompt":
			if pr := cat.promptByName[ref.Ref.Name]; pr != nil {
				p, rq.Name = pr.Plugin, "ref/prompt:"+ref.Ref.Name
			}
		case "ref/resource":
			for _, t := range cat.Templates {
				if t.Decl.URITemplate == ref.Ref.URI {
					p, rq.Name = t.Plugin, "ref/resource:"+ref.Ref.URI
					break
				}
			}
			if rs := cat.resourceByURI[ref.Ref.URI]; p == nil && rs != nil {
				p, rq.Name = rs.Plugin, "ref/resource:"+ref.Ref.URI
			}
		}
		if p == nil {
			return nil, rq, ErrUnknownPrompt
		}
		return p, rq, nil
	})
	if err != nil && errors.Is(err, errUnknownOp) {
		return []byte(`{"completion":{"values":[]}}`), nil
	}
	return out, err
}

var errUnknownOp = errors.New("plugin does not implement this operation")
