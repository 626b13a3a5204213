// Package toolsearch is tool search (--tool-search; spec/protocol.md, "Tool
// search"): for a tenant it is on for, tools/list publishes a small fixed
// set (a search tool, a describe tool and the operator's pinned tools)
// instead of the whole catalogue, and the search tool ranks the catalogue's
// tools for a query with a lexical BM25 index (index.go). Every tool stays
// callable by its name.
//
// It is an mcp.Catalog over the catalogue the host serves, outermost (so
// that its two tools are answered before a tenant's allow-list refuses
// their names as unknown). It sees the catalogue only through host/mcp's
// interfaces and the functions of Options: who a tenant is, and what it may
// see, are the host's to say.
package toolsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aiodhq/aiod/host/mcp"
)

// The names of the two tools tool search publishes. While tool search is on
// for a tenant they are its, whatever else the catalogue holds.
const (
	SearchTool   = "aiod_tool_search"
	DescribeTool = "aiod_tool_describe"
)

// Search limits: the default and the largest limit, and the most names one
// describe takes.
const (
	DefaultLimit = 10
	MaxLimit     = 50
	MaxNames     = 50
)

// Options configure a Catalog.
type Options struct {
	// Enabled reports whether tool search is on for the request (ctx, as
	// the protocol layer's middleware left it, and the call's owner; owner
	// is "" for tools/list). Nil: on for every request.
	Enabled func(ctx context.Context, owner string) bool
	// Visible reports whether the request's tenant may see and call the
	// tool name: what its tools/list would list without tool search. Nil:
	// every tool.
	Visible func(ctx context.Context, name string) bool
	// Pinned are the names listed beside the two tools, in this order (a
	// name the catalogue does not hold, or that the tenant may not see, is
	// left out).
	Pinned []string
	// FullPins lists the pinned tools exactly as tools/list gives them;
	// false (the default) lists their short form (shortDef), which keeps
	// a pinned tool callable and leaves the rest to aiod_tool_describe.
	FullPins bool
	// Source is the whole catalogue's tools/list rendering, every tenant's
	// tools (a JSON array of tool objects), what the index is built from.
	// Nil: the catalogue's ListTools when it has one, else its snapshot's
	// ToolsJSON.
	Source func(ctx context.Context) []byte
}

// Catalog is tool search over a catalogue: mcp.Catalog, mcp.ToolLister and
// mcp.ToolsNotifier.
type Catalog struct {
	inner mcp.Catalog
	o     Options

	cur     atomic.Pointer[index]
	buildMu sync.Mutex // one build at a time
	builds  atomic.Int64
}

var (
	_ mcp.Catalog       = (*Catalog)(nil)
	_ mcp.ToolLister    = (*Catalog)(nil)
	_ mcp.ToolsNotifier = (*Catalog)(nil)
)

// New returns tool search over inner. The index is built on first use and
// again whenever the catalogue's listing differs from the one it was built
// from; a swap of inner's snapshot and an upstream change rebuild it at
// once, in the background, so that the next search finds it ready (once
// one was built: until then nothing is).
func New(inner mcp.Catalog, o Options) *Catalog {
	c := &Catalog{inner: inner, o: o}
	inner.OnSwap(func(*mcp.Snapshot) { go c.refresh() })
	if n, ok := inner.(mcp.ToolsNotifier); ok {
		n.OnToolsChanged(func() { go c.refresh() })
	}
	return c
}

// Snapshot, OnSwap, GetPrompt, ReadResource and Complete are inner's.
func (c *Catalog) Snapshot() *mcp.Snapshot      { return c.inner.Snapshot() }
func (c *Catalog) OnSwap(f func(*mcp.Snapshot)) { c.inner.OnSwap(f) }
func (c *Catalog) GetPrompt(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	return c.inner.GetPrompt(ctx, req)
}
func (c *Catalog) ReadResource(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	return c.inner.ReadResource(ctx, req)
}
func (c *Catalog) Complete(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	return c.inner.Complete(ctx, req)
}

// OnToolsChanged passes inner's mcp.ToolsNotifier through (nothing when it
// has none): a change of the searchable tools is told as before.
func (c *Catalog) OnToolsChanged(f func()) {
	if n, ok := c.inner.(mcp.ToolsNotifier); ok {
		n.OnToolsChanged(f)
	}
}

// List and OnListChanged pass inner's mcp.Lister and mcp.ListNotifier
// through (the upstreams' prompts and resources).
func (c *Catalog) List(ctx context.Context, key string) ([]byte, bool) {
	if l, ok := c.inner.(mcp.Lister); ok {
		return l.List(ctx, key)
	}
	return nil, false
}

func (c *Catalog) OnListChanged(f func(kind string)) {
	if n, ok := c.inner.(mcp.ListNotifier); ok {
		n.OnListChanged(f)
	}
}

// Builds counts the indexes built so far (tests).
func (c *Catalog) Builds() int64 { return c.builds.Load() }

func (c *Catalog) enabled(ctx context.Context, owner string) bool {
	return c.o.Enabled == nil || c.o.Enabled(ctx, owner)
}

func (c *Catalog) visible(ctx context.Context) func(string) bool {
	if c.o.Visible == nil {
		return nil
	}
	return func(name string) bool { return c.o.Visible(ctx, name) }
}

// innerList is inner's tools/list for the request.
func (c *Catalog) innerList(ctx context.Context) []byte {
	if l, ok := c.inner.(mcp.ToolLister); ok {
		return l.ListTools(ctx)
	}
	return c.inner.Snapshot().ToolsJSON()
}

// source is the whole catalogue's listing.
func (c *Catalog) source(ctx context.Context) []byte {
	if c.o.Source != nil {
		return c.o.Source(ctx)
	}
	return c.innerList(ctx)
}

// index is the index of the catalogue as it is now: the current one when
// the listing has not changed since it was built, else a new one.
func (c *Catalog) index(ctx context.Context) *index {
	src := c.source(ctx)
	if ix := c.cur.Load(); ix != nil && bytes.Equal(ix.src, src) {
		return ix
	}
	c.buildMu.Lock()
	defer c.buildMu.Unlock()
	// The catalogue again, under the lock: a build from what was read
	// before waiting could replace a newer one built meanwhile.
	src = c.source(ctx)
	if ix := c.cur.Load(); ix != nil && bytes.Equal(ix.src, src) {
		return ix // built meanwhile
	}
	ix, err := buildIndex(src)
	if err != nil {
		ix = &index{src: src, byName: map[string]int{}, terms: map[string][]posting{}}
	}
	c.builds.Add(1)
	c.cur.Store(ix)
	return ix
}

// refresh rebuilds the index when the catalogue changed, once it has been
// used (a host whose tenants never search builds none).
func (c *Catalog) refresh() {
	if c.cur.Load() != nil {
		c.index(context.Background())
	}
}

// ListTools is tools/list: with tool search on, the two tools and the
// pinned tools the tenant may see; else inner's list.
func (c *Catalog) ListTools(ctx context.Context) []byte {
	if !c.enabled(ctx, "") {
		return c.innerList(ctx)
	}
	ix := c.index(ctx)
	keep := c.visible(ctx)
	b := make([]byte, 0, len(searchDef)+len(describeDef)+1024)
	b = append(b, '[')
	b = append(b, searchDef...)
	b = append(b, ',')
	b = append(b, describeDef...)
	for _, name := range c.o.Pinned {
		i, ok := ix.byName[name]
		if !ok || name == SearchTool || name == DescribeTool || (keep != nil && !keep(name)) {
			continue
		}
		b = append(b, ',')
		if c.o.FullPins {
			b = append(b, ix.tools[i].def...)
		} else {
			b = append(b, ix.shortDef(i)...)
		}
	}
	return append(b, ']')
}

// CallTool answers the two tools when tool search is on for the caller,
// and passes every other call (and theirs when it is off) to inner.
func (c *Catalog) CallTool(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	if (req.Name == SearchTool || req.Name == DescribeTool) && c.enabled(ctx, req.Owner) {
		if req.Name == SearchTool {
			return c.search(ctx, req.Args), nil
		}
		return c.describe(ctx, req.Args), nil
	}
	return c.inner.CallTool(ctx, req)
}

// Result is one search result (the search tool's structuredContent holds
// them as "results").
type Result struct {
	Name        string  `json:"name"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

// search is the search tool's CallToolResult for args.
func (c *Catalog) search(ctx context.Context, args json.RawMessage) []byte {
	var a struct {
		Query *string          `json:"query"`
		Limit *json.RawMessage `json:"limit"`
	}
	if msg := decodeArgs(args, &a, "query", "limit"); msg != "" {
		return toolError(msg)
	}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return toolError("query must be a non-empty string: a few words of what the tool should do")
	}
	limit := DefaultLimit
	if a.Limit != nil {
		var f float64
		if json.Unmarshal(*a.Limit, &f) != nil || f != math.Trunc(f) || f < 1 || f > MaxLimit {
			return toolError("limit must be an integer from 1 to 50")
		}
		limit = int(f)
	}
	ix := c.index(ctx)
	hits := ix.search(*a.Query, limit, c.visible(ctx))
	out := struct {
		Results []Result `json:"results"`
	}{Results: make([]Result, 0, len(hits))}
	for _, h := range hits {
		t := ix.tools[h.doc]
		out.Results = append(out.Results, Result{Name: t.name, Title: t.title, Description: t.line, Score: math.Round(h.score*1000) / 1000})
	}
	return structured(out)
}

// describe is the describe tool's CallToolResult for args: the definitions
// of the names the tenant may see, in the order asked; every other name,
// hidden or missing alike, under "unknown".
func (c *Catalog) describe(ctx context.Context, args json.RawMessage) []byte {
	var a struct {
		Names *json.RawMessage `json:"names"`
	}
	if msg := decodeArgs(args, &a, "names"); msg != "" {
		return toolError(msg)
	}
	var names []string
	if a.Names == nil || json.Unmarshal(*a.Names, &names) != nil || names == nil {
		return toolError("names must be an array of tool names (strings), as aiod_tool_search returns them")
	}
	if len(names) == 0 || len(names) > MaxNames {
		return toolError("names must hold from 1 to 50 tool names")
	}
	ix := c.index(ctx)
	keep := c.visible(ctx)
	out := struct {
		Tools   []json.RawMessage `json:"tools"`
		Unknown []string          `json:"unknown,omitempty"`
	}{Tools: []json.RawMessage{}}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if i, ok := ix.byName[n]; ok && (keep == nil || keep(n)) {
			out.Tools = append(out.Tools, ix.tools[i].def)
		} else {
			out.Unknown = append(out.Unknown, n)
		}
	}
	return structured(out)
}

// decodeArgs decodes a call's arguments (absent: {}) into v, allowing only
// the named properties; it returns what is wrong, "" when nothing is.
func decodeArgs(args json.RawMessage, v any, allowed ...string) string {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return "arguments must be a JSON object"
	}
	for k := range m {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return "unknown argument " + strconv.Quote(k) + " (the arguments are " + strings.Join(allowed, ", ") + ")"
		}
	}
	if err := json.Unmarshal(args, v); err != nil {
		return "arguments: " + err.Error()
	}
	return ""
}

// structured is a CallToolResult whose structuredContent is v and whose
// one text block is v as JSON.
func structured(v any) []byte {
	sc, _ := json.Marshal(v)
	res, _ := json.Marshal(struct {
		Content           []textBlock     `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}{Content: []textBlock{{Type: "text", Text: string(sc)}}, StructuredContent: sc})
	return res
}

// toolError is a CallToolResult with isError set and msg as its text.
func toolError(msg string) []byte {
	res, _ := json.Marshal(struct {
		Content []textBlock `json:"content"`
		IsError bool        `json:"isError"`
	}{Content: []textBlock{{Type: "text", Text: msg}}, IsError: true})
	return res
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// The two tools' definitions, as tools/list gives them.
var (
	searchDef = compact(`{
  "name": "aiod_tool_search",
  "title": "Search the tools",
  "description": "Find this server's tools for a task: tools/list shows only a few of them, and every other tool is found here. Give a few words of what to do (\"create a pull request\", \"query postgres\"); the results are the best matching tools, best first. Get the input schemas of those you want with aiod_tool_describe, then call them by name.",
  "inputSchema": {
    "type": "object",
    "properties": {
      "query": {"type": "string", "minLength": 1, "description": "What the tool should do, in a few words."},
      "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "The most results to return."}
    },
    "required": ["query"],
    "additionalProperties": false
  },
  "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
}`)
	describeDef = compact(`{
  "name": "aiod_tool_describe",
  "title": "Describe tools",
  "description": "Get the full definitions of tools (title, description, inputSchema, outputSchema, annotations), as tools/list would list them. Names this server does not know are returned under \"unknown\".",
  "inputSchema": {
    "type": "object",
    "properties": {
      "names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50, "description": "The names of the tools to describe."}
    },
    "required": ["names"],
    "additionalProperties": false
  },
  "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
}`)
)

func compact(s string) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(err)
	}
	return b.Bytes()
}
