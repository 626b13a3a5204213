package sdk

import (
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Prompts, resources, resource templates and completions: the MCP server
// surface besides tools. Handlers may ask the client for input (Ctx.Input)
// like tool handlers.

// Prompt declares a prompt.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptResult is a rendered prompt.
type PromptResult struct {
	Description string
	Messages    []PromptMessage
}

// PromptMessage is one message of a prompt: Role is "user" or "assistant".
type PromptMessage struct {
	Role    string
	Content Content
}

// UserMessage is a user message with one content block.
func UserMessage(c Content) PromptMessage { return PromptMessage{Role: "user", Content: c} }

// Resource declares a resource at a fixed URI.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ResourceTemplate declares resources whose URIs match an RFC 6570
// template such as "file:///logs/{name}" ({var} matches up to a '/',
// {+var} anything).
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ResourceContents is one item of a resource read: Text, or Blob bytes.
type ResourceContents struct {
	URI      string
	MimeType string
	Text     string
	Blob     []byte
}

// ErrResourceNotFound, returned by a resource handler, answers "resource
// not found" (-32602 with the URI in 2026-07-28, -32002 before).
var ErrResourceNotFound = &RPCError{Code: CodeInvalidParams, Message: "resource not found"}

// CompleteRequest is a completion/complete request for an argument of a
// prompt or resource template.
type CompleteRequest struct {
	Ref struct {
		Type string `json:"type"` // ref/prompt or ref/resource
		Name string `json:"name,omitempty"`
		URI  string `json:"uri,omitempty"`
	} `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context struct {
		Arguments map[string]string `json:"arguments,omitempty"`
	} `json:"context"`
}

// Completion is the answer to a completion request.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

type (
	promptEntry struct {
		decl Prompt
		h    func(c *Ctx, args map[string]string) (*PromptResult, error)
	}
	resourceEntry struct {
		decl Resource
		h    func(c *Ctx, uri string) ([]ResourceContents, error)
	}
	templateEntry struct {
		decl ResourceTemplate
		h    func(c *Ctx, uri string, vars map[string]string) ([]ResourceContents, error)
	}
)

var (
	prompts     []*promptEntry
	promptIndex = map[string]*promptEntry{}
	resources   []*resourceEntry
	resIndex    = map[string]*resourceEntry{}
	templates   []*templateEntry
	tplIndex    = map[string]*templateEntry{}
	completers  = map[string]func(c *Ctx, req *CompleteRequest) (*Completion, error){}
)

// AddPrompt registers a prompt.
func AddPrompt(p Prompt, h func(c *Ctx, args map[string]string) (*PromptResult, error)) {
	if _, dup := promptIndex[p.Name]; dup {
		panic("sdk: prompt " + p.Name + " registered twice")
	}
	e := &promptEntry{decl: p, h: h}
	prompts = append(prompts, e)
	promptIndex[p.Name] = e
}

// AddResource registers a resource.
func AddResource(r Resource, h func(c *Ctx, uri string) ([]ResourceContents, error)) {
	if _, dup := resIndex[r.URI]; dup {
		panic("sdk: resource " + r.URI + " registered twice")
	}
	e := &resourceEntry{decl: r, h: h}
	resources = append(resources, e)
	resIndex[r.URI] = e
}

// AddResourceTemplate registers a resource template; the handler gets the
// URI read and the template's variables.
func AddResourceTemplate(t ResourceTemplate, h func(c *Ctx, uri string, vars map[string]string) ([]ResourceContents, error)) {
	if _, dup := tplIndex[t.URITemplate]; dup {
		panic("sdk: resource template " + t.URITemplate + " registered twice")
	}
	e := &templateEntry{decl: t, h: h}
	templates = append(templates, e)
	tplIndex[t.URITemplate] = e
}

// AddPromptCompletion registers argument completion for a prompt.
func AddPromptCompletion(prompt string, h func(c *Ctx, req *CompleteRequest) (*Completion, error)) {
	completers["ref/prompt:"+prompt] = h
}

// AddResourceCompletion registers argument completion for a resource
// template (by its URI template).
func AddResourceCompletion(uriTemplate string, h func(c *Ctx, req *CompleteRequest) (*Completion, error)) {
	completers["ref/resource:"+uriTemplate] = h
}

// describeSurface returns the manifest's prompts, resources and
// resourceTemplates (nil when there are none).
func describeSurface() (ps, rs, ts any) {
	type promptDoc struct {
		Name        string           `json:"name"`
		Title       string           `json:"title,omitempty"`
		Description string           `json:"description,omitempty"`
		Arguments   []PromptArgument `json:"arguments,omitempty"`
	}
	if len(prompts) > 0 {
		v := make([]promptDoc, len(prompts))
		for i, p := range prompts {
			v[i] = promptDoc{p.decl.Name, p.decl.Title, p.decl.Description, p.decl.Arguments}
		}
		ps = v
	}
	if len(resources) > 0 {
		v := make([]Resource, len(resources))
		for i, r := range resources {
			v[i] = r.decl
		}
		rs = v
	}
	if len(templates) > 0 {
		v := make([]ResourceTemplate, len(templates))
		for i, t := range templates {
			v[i] = t.decl
		}
		ts = v
	}
	return
}

// handleSurface serves the operations besides describe and tools/call.
func handleSurface(op int32, name, args []byte) int32 {
	switch op {
	case abi.OpPromptGet:
		e := promptIndex[string(name)]
		if e == nil {
			return abi.RetUnknownName
		}
		var a map[string]string
		if len(args) > 0 {
			if err := json.Unmarshal(args, &a); err != nil {
				return finishRaw(func() ([]byte, error) {
					return nil, &RPCError{Code: CodeInvalidParams, Message: "prompt arguments must be strings: " + err.Error()}
				})
			}
		}
		if a == nil {
			a = map[string]string{}
		}
		for _, pa := range e.decl.Arguments {
			if _, ok := a[pa.Name]; pa.Required && !ok {
				return finishRaw(func() ([]byte, error) {
					return nil, &RPCError{Code: CodeInvalidParams, Message: "missing required argument " + pa.Name}
				})
			}
		}
		return finishRaw(func() ([]byte, error) {
			r, err := e.h(&Ctx{tool: e.decl.Name}, a)
			if err != nil {
				return nil, err
			}
			return appendPromptResult(nil, r), nil
		})
	case abi.OpResourceRead:
		var in struct {
			URI       string            `json:"uri"`
			Variables map[string]string `json:"variables"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return abi.RetBadInput
		}
		var read func(c *Ctx) ([]ResourceContents, error)
		if e := resIndex[string(name)]; e != nil {
			read = func(c *Ctx) ([]ResourceContents, error) { return e.h(c, in.URI) }
		} else if t := tplIndex[string(name)]; t != nil {
			read = func(c *Ctx) ([]ResourceContents, error) { return t.h(c, in.URI, in.Variables) }
		} else {
			return abi.RetUnknownName
		}
		return finishRaw(func() ([]byte, error) {
			c := &Ctx{tool: string(name)}
			cs, err := read(c)
			if errors.Is(err, ErrResourceNotFound) {
				code := CodeInvalidParams
				if c.Client().Era == "legacy" {
					code = -32002 // the legacy revisions' "resource not found"
				}
				data, _ := json.Marshal(map[string]string{"uri": in.URI})
				return nil, &RPCError{Code: code, Message: "Resource not found: " + in.URI, Data: data}
			}
			if err != nil {
				return nil, err
			}
			return appendContents(nil, in.URI, cs), nil
		})
	case abi.OpComplete:
		h := completers[string(name)]
		return finishRaw(func() ([]byte, error) {
			comp := &Completion{}
			if h != nil {
				var req CompleteRequest
				if err := json.Unmarshal(args, &req); err != nil {
					return nil, &RPCError{Code: CodeInvalidParams, Message: "completion request: " + err.Error()}
				}
				var err error
				if comp, err = h(&Ctx{tool: string(name)}, &req); err != nil {
					return nil, err
				}
				if comp == nil {
					comp = &Completion{}
				}
			}
			if comp.Values == nil {
				comp.Values = []string{}
			}
			if len(comp.Values) > 100 {
				comp.Values, comp.HasMore = comp.Values[:100], true
			}
			return json.Marshal(map[string]any{"completion": comp})
		})
	}
	return abi.RetUnknownOp
}

func appendPromptResult(b []byte, r *PromptResult) []byte {
	if r == nil {
		r = &PromptResult{}
	}
	b = append(b, '{')
	if r.Description != "" {
		b = append(b, `"description":`...)
		b = jsonx.AppendString(b, r.Description)
		b = append(b, ',')
	}
	b = append(b, `"messages":[`...)
	for i, m := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		role := m.Role
		if role == "" {
			role = "user"
		}
		b = append(b, `{"role":`...)
		b = jsonx.AppendString(b, role)
		b = append(b, `,"content":`...)
		b = appendContent(b, &m.Content)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendContents(b []byte, uri string, cs []ResourceContents) []byte {
	b = append(b, `{"contents":[`...)
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		u := c.URI
		if u == "" {
			u = uri
		}
		b = append(b, `{"uri":`...)
		b = jsonx.AppendString(b, u)
		if c.MimeType != "" {
			b = append(b, `,"mimeType":`...)
			b = jsonx.AppendString(b, c.MimeType)
		}
		if c.Blob != nil {
			b = append(b, `,"blob":"`...)
			b = base64.StdEncoding.AppendEncode(b, c.Blob)
			b = append(b, '"')
		} else {
			b = append(b, `,"text":`...)
			b = jsonx.AppendString(b, c.Text)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
