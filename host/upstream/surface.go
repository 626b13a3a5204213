package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What upstreams offer besides tools: prompts, resources and resource
// templates, published like their tools (prefixed names, URIs under the
// upstream scheme), pinned the same way, with prompts/get, resources/read and
// completion/complete forwarded.

// Kinds of list an upstream publishes besides its tools.
const (
	KindPrompts   = "prompts"
	KindResources = "resources"
	KindTemplates = "resourceTemplates"
)

// URIScheme starts every published upstream resource URI:
// "upstream://<server>/<the upstream's URI>" (templates alike). The
// server's name, not its prefix, names it: names are unique and never empty.
const URIScheme = "upstream://"

// Item is one published prompt, resource or resource template.
type Item struct {
	// Key is its published name (prompts) or URI (resources) or URI
	// template (templates).
	Key    string
	Server string
	// Definition is the upstream's object as it wrote it with only its
	// name or URI replaced.
	Definition json.RawMessage
}

// kindCache is one upstream's cached list of one kind.
type kindCache struct {
	mu      sync.Mutex
	items   []upItem
	have    bool
	failed  bool // the last fetch failed (retried once the cache would be stale)
	fetched time.Time
	stale   bool
	busy    bool // a refresh is on its way
	again   bool // a list_changed arrived during it
}

type upItem struct {
	key string          // the upstream's name, URI or URI template
	pub string          // the published one
	def json.RawMessage // with the published key
	raw json.RawMessage // as the upstream wrote it
}

// keyField is the member of an item that names it, by kind.
func keyField(kind string) string {
	switch kind {
	case KindPrompts:
		return "name"
	case KindResources:
		return "uri"
	}
	return "uriTemplate"
}

// pinKey is the key of a prompt's or template's pin in the pin file: a
// tool name cannot hold ':' so these never meet a tool's.
func pinKey(kind, key string) string {
	if kind == KindPrompts {
		return "prompt:" + key
	}
	return "resourceTemplate:" + key
}

func (u *upstream) cache(kind string) *kindCache {
	switch kind {
	case KindPrompts:
		return &u.prompts
	case KindResources:
		return &u.resources
	}
	return &u.templates
}

// publishItem computes an item's published key and definition.
func (u *upstream) publishItem(kind string, raw json.RawMessage) (upItem, bool) {
	var head map[string]json.RawMessage
	if json.Unmarshal(raw, &head) != nil {
		return upItem{}, false
	}
	var key string
	if json.Unmarshal(head[keyField(kind)], &key) != nil || key == "" {
		return upItem{}, false
	}
	it := upItem{key: key, raw: raw}
	if kind == KindPrompts {
		switch {
		case u.srv.Prefix != "":
			it.pub = u.srv.Prefix + "_" + key
		case strings.HasPrefix(key, u.srv.Name+"_") && len(key) > len(u.srv.Name)+1:
			it.pub = key
		default:
			return it, true // no route: dropped when published
		}
	} else {
		it.pub = URIScheme + u.srv.Name + "/" + key
	}
	d, err := setMember(raw, keyField(kind), it.pub)
	if err != nil {
		return upItem{}, false
	}
	it.def = d
	return it, true
}

// listKind fetches every page of one kind.
func (u *upstream) listKind(ctx context.Context, kind string) ([]upItem, error) {
	if !u.srv.FromPolicy {
		return nil, nil // EXTRA_MCP_SERVERS: tools only
	}
	cs, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	ir := cs.InitializeResult()
	if ir != nil && ir.Capabilities != nil {
		c := ir.Capabilities
		if (kind == KindPrompts && c.Prompts == nil) || (kind != KindPrompts && c.Resources == nil) {
			return nil, nil // it offers none
		}
	}
	var out []upItem
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("%s/list: more than %d pages", kind, maxPages)
		}
		method := map[string]string{KindPrompts: "prompts/list", KindResources: "resources/list", KindTemplates: "resources/templates/list"}[kind]
		sl := &slot{method: method}
		sctx := withSlot(ctx, sl)
		var next string
		switch kind {
		case KindPrompts:
			var r *mcp.ListPromptsResult
			if r, err = cs.ListPrompts(sctx, &mcp.ListPromptsParams{Cursor: cursor}); err == nil {
				next = r.NextCursor
			}
		case KindResources:
			var r *mcp.ListResourcesResult
			if r, err = cs.ListResources(sctx, &mcp.ListResourcesParams{Cursor: cursor}); err == nil {
				next = r.NextCursor
			}
		default:
			var r *mcp.ListResourceTemplatesResult
			if r, err = cs.ListResourceTemplates(sctx, &mcp.ListResourceTemplatesParams{Cursor: cursor}); err == nil {
				next = r.NextCursor
			}
		}
		raw, gerr := sl.get()
		if gerr != nil {
			err = gerr
		}
		if err != nil {
			if transportFailure(ctx, err) || u.retryable(err) {
				u.drop(cs)
			}
			return nil, err
		}
		if raw == nil {
			return nil, fmt.Errorf("%s: no answer captured", method)
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(r[kind], &items); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		for _, d := range items {
			if it, ok := u.publishItem(kind, d); ok {
				out = append(out, it)
			}
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// kindSnapshot returns one kind's list: the cache while it is fresh, else a
// fetch (waited for at most the list timeout; one that fails leaves the
// upstream without items of that kind).
func (u *upstream) kindSnapshot(ctx context.Context, kind string) []upItem {
	c := u.cache(kind)
	c.mu.Lock()
	if (c.have || c.failed) && !c.stale && time.Since(c.fetched) < u.set.opts.DefaultTTL {
		it := c.items
		c.mu.Unlock()
		return it
	}
	c.mu.Unlock()
	u.refreshKind(ctx, kind, false)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items
}

// refreshKind fetches one kind again. Refreshes of a kind never overlap: a
// list_changed during one makes it run once more, so a flood of them costs
// at most one list request on the way and one after it.
func (u *upstream) refreshKind(ctx context.Context, kind string, notify bool) {
	c := u.cache(kind)
	c.mu.Lock()
	if c.busy {
		c.again = true
		c.mu.Unlock()
		return
	}
	c.busy = true
	c.mu.Unlock()
	for {
		lctx, cancel := context.WithTimeout(ctx, u.set.opts.ListTimeout)
		start := time.Now()
		items, err := u.listKind(lctx, kind)
		cancel()
		c.mu.Lock()
		if err == nil {
			c.items, c.have, c.failed, c.fetched, c.stale = items, true, false, start, false
		} else {
			// absent; not asked again (nor waited for) until the cache
			// would be stale
			c.items, c.have, c.failed, c.fetched = nil, false, true, start
			if u.set.ctx.Err() == nil {
				u.set.warnOnce(u.srv.Name+"\x00down\x00"+kind, "upstream MCP server %q does not answer %s/list: %v", u.srv.Name, kind, err)
			}
		}
		again := c.again && u.set.ctx.Err() == nil
		c.again = false
		if !again {
			c.busy = false
		}
		c.mu.Unlock()
		u.set.recheckKind(kind, notify || again)
		if !again {
			return
		}
		notify = true
		// Changes that keep coming are taken at most once a gap: a server
		// that floods list_changed costs one list a gap, and its clients
		// one notification.
		select {
		case <-time.After(listChangeGap):
		case <-u.set.ctx.Done():
			c.mu.Lock()
			c.busy = false
			c.mu.Unlock()
			return
		}
	}
}

// listChangeGap is the least time between two refreshes of one kind that
// list_changed notifications started.
const listChangeGap = 250 * time.Millisecond

// kindChanged handles an upstream's prompts or resources list_changed:
// refresh in the background and tell aiod's clients when what is
// published changed.
func (u *upstream) kindChanged(kind string) {
	c := u.cache(kind)
	c.mu.Lock()
	c.stale = true
	if c.busy {
		c.again = true // the running refresh goes once more
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	u.set.wg.Add(1)
	go func() {
		defer u.set.wg.Done()
		u.refreshKind(u.set.ctx, kind, true)
		if kind == KindResources {
			u.refreshKind(u.set.ctx, KindTemplates, true)
		}
	}()
}

// List returns the published items of one kind (KindPrompts, KindResources
// or KindTemplates): the upstreams in registration order, each in its own.
// A prompt name that Exclude reports, or an earlier upstream's, is dropped;
// so is a prompt of a server without a prefix whose name does not start with
// "<server>_", and a prompt or template that the pins withhold.
func (s *Set) List(ctx context.Context, kind string) []Item {
	snaps := make([][]upItem, len(s.ups))
	var wg sync.WaitGroup
	for i, u := range s.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i] = u.kindSnapshot(ctx, kind)
		}()
	}
	wg.Wait()
	return s.publishKind(kind, snaps)
}

func (s *Set) publishKind(kind string, snaps [][]upItem) []Item {
	var out []Item
	owner := map[string]bool{}
	if s.opts.Pins != nil {
		s.opts.Pins.refresh(s.logf)
	}
	for i, u := range s.ups {
		for _, it := range snaps[i] {
			switch {
			case it.pub == "":
				s.warnOnce(u.srv.Name+"\x00noprefix\x00prompt\x00"+it.key, "upstream MCP server %q has no prefix and its prompt %q does not start with %q: dropped", u.srv.Name, it.key, u.srv.Name+"_")
				continue
			case kind == KindPrompts && s.opts.ExcludePrompt != nil && s.opts.ExcludePrompt(it.pub):
				s.warnOnce(u.srv.Name+"\x00builtin\x00prompt\x00"+it.pub, "upstream MCP server %q: prompt %q collides with a plugin's prompt: dropped", u.srv.Name, it.pub)
				continue
			case s.itemWithheld(u, kind, it):
				continue
			case owner[it.pub]:
				continue
			}
			owner[it.pub] = true
			out = append(out, Item{Key: it.pub, Server: u.srv.Name, Definition: it.def})
		}
	}
	return out
}

// itemWithheld reports whether the pins withhold a prompt or template
// (resources themselves are not pinned: they are what a server holds, and
// come and go; a template is what it offers to read).
func (s *Set) itemWithheld(u *upstream, kind string, it upItem) bool {
	if s.opts.Pins == nil || kind == KindResources {
		return false
	}
	ok, why := s.opts.Pins.checkItem(u.srv.Name, pinKey(kind, it.key), it.raw, kind)
	if !ok {
		what := "prompt"
		if kind == KindTemplates {
			what = "resource template"
		}
		s.warnOnce(u.srv.Name+"\x00pin\x00"+pinKey(kind, it.key)+"\x00"+string(it.raw), "upstream MCP server %q: %s %q is withheld until an operator accepts it (aiod upstream review): %s", u.srv.Name, what, it.key, why)
	}
	return !ok
}

// OnListChanged registers f, called with KindPrompts or KindResources
// (templates are told as resources) when what List publishes of that kind
// changed after an upstream's list_changed. f must not block.
func (s *Set) OnListChanged(f func(kind string)) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.onKind = append(s.onKind, f)
}

// recheckKind recomputes one kind's published list from the caches and,
// with notify, tells the OnListChanged functions when it differs from the
// last one (an upstream's first answer is not a change).
func (s *Set) recheckKind(kind string, notify bool) {
	snaps := make([][]upItem, len(s.ups))
	for i, u := range s.ups {
		c := u.cache(kind)
		c.mu.Lock()
		snaps[i] = c.items
		c.mu.Unlock()
	}
	out := s.publishKind(kind, snaps)
	h := sha256.New()
	for _, it := range out {
		h.Write(it.Definition)
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	s.pubMu.Lock()
	if s.kindSum == nil {
		s.kindSum = map[string][sha256.Size]byte{}
	}
	old, seen := s.kindSum[kind]
	s.kindSum[kind] = sum
	fs := s.onKind
	s.pubMu.Unlock()
	if !notify || !seen || old == sum || s.ctx.Err() != nil {
		return
	}
	told := kind
	if kind == KindTemplates {
		told = KindResources
	}
	for _, f := range fs {
		f(told)
	}
}

// ErrUnknownItem is returned for a prompt name or resource URI that routes to
// no upstream, or that the pins withhold.
var ErrUnknownItem = errors.New("unknown prompt or resource")

// routePrompt finds the upstream and its own name of a published prompt.
func (s *Set) routePrompt(name string) (*upstream, string, bool) {
	if s.opts.ExcludePrompt != nil && s.opts.ExcludePrompt(name) {
		return nil, "", false
	}
	for _, u := range s.ups {
		if !u.srv.FromPolicy {
			continue
		}
		if u.srv.Prefix != "" {
			if t, ok := strings.CutPrefix(name, u.srv.Prefix+"_"); ok && t != "" {
				return u, t, true
			}
		} else if len(name) > len(u.srv.Name)+1 && strings.HasPrefix(name, u.srv.Name+"_") {
			return u, name, true
		}
	}
	return nil, "", false
}

// RouteURI reports which server a published resource URI goes to and the
// upstream's own URI.
func (s *Set) RouteURI(uri string) (server, own string, ok bool) {
	rest, ok := strings.CutPrefix(uri, URIScheme)
	if !ok {
		return "", "", false
	}
	name, own, ok := strings.Cut(rest, "/")
	if !ok || own == "" {
		return "", "", false
	}
	if u, err := s.server(name); err != nil || !u.srv.FromPolicy {
		return "", "", false
	}
	return name, own, true
}

// RoutePrompt reports which server a published prompt name goes to.
func (s *Set) RoutePrompt(name string) (server string, ok bool) {
	u, _, ok := s.routePrompt(name)
	if !ok {
		return "", false
	}
	return u.srv.Name, true
}

// promptCallable checks a prompts/get against the pins: only a prompt in the
// server's current list whose definition matches its pin may be got.
func (s *Set) promptCallable(ctx context.Context, u *upstream, name string) bool {
	if s.opts.Pins == nil {
		return true
	}
	for _, it := range u.kindSnapshot(ctx, KindPrompts) {
		if it.key == name {
			return !s.itemWithheld(u, KindPrompts, it)
		}
	}
	return false
}

// GetPrompt forwards a prompts/get of a published prompt name with its
// arguments (a JSON object of strings) and returns the upstream's
// GetPromptResult as it wrote it, without its hop's envelope. in (may be
// nil) answers the upstream's input requests during the call (input.go).
func (s *Set) GetPrompt(ctx context.Context, name string, args json.RawMessage, in Asker) (json.RawMessage, error) {
	u, own, ok := s.routePrompt(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownItem, name)
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	if !s.promptCallable(ctx, u, own) {
		return nil, fmt.Errorf("%w: %s (withheld until an operator accepts it)", ErrUnknownItem, name)
	}
	p := &mcp.GetPromptParams{Name: own}
	if a := bytes.TrimSpace(args); len(a) > 0 && string(a) != "null" {
		if err := json.Unmarshal(a, &p.Arguments); err != nil {
			return nil, &RPCError{Server: u.srv.Name, Code: -32602, Message: "Invalid params: prompt arguments must be strings"}
		}
	}
	return u.request(ctx, "prompts/get", in, func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := cs.GetPrompt(ctx, p)
		return err
	})
}

// ReadResource forwards a resources/read of a published URI; the contents'
// URIs come back published too.
func (s *Set) ReadResource(ctx context.Context, uri string, in Asker) (json.RawMessage, error) {
	name, own, ok := s.RouteURI(uri)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownItem, uri)
	}
	u, _ := s.server(name)
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	res, err := u.request(ctx, "resources/read", in, func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: own})
		return err
	})
	if err != nil {
		return nil, err
	}
	return u.publishContents(res), nil
}

// publishContents rewrites each contents[].uri of a ReadResourceResult to
// its published URI, every other member kept as written.
func (u *upstream) publishContents(res json.RawMessage) json.RawMessage {
	var r map[string]json.RawMessage
	if json.Unmarshal(res, &r) != nil {
		return res
	}
	var cs []json.RawMessage
	if json.Unmarshal(r["contents"], &cs) != nil {
		return res
	}
	for i, c := range cs {
		var h struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(c, &h) == nil && h.URI != "" {
			if d, err := setMember(c, "uri", URIScheme+u.srv.Name+"/"+h.URI); err == nil {
				cs[i] = d
			}
		}
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return res
	}
	out, err := setMember(res, "contents", string(b), true)
	if err != nil {
		return res
	}
	return out
}

// Complete forwards a completion/complete whose ref names a published prompt
// or resource template (params as the client sent them).
func (s *Set) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(params, &p); err != nil || p.Ref == nil {
		return nil, fmt.Errorf("%w: completion reference", ErrUnknownItem)
	}
	p.Meta = nil // the client's _meta is of its hop (its era's keys), not the upstream's
	var u *upstream
	switch p.Ref.Type {
	case "ref/prompt":
		up, own, ok := s.routePrompt(p.Ref.Name)
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnknownItem, p.Ref.Name)
		}
		u, p.Ref.Name = up, own
	case "ref/resource":
		name, own, ok := s.RouteURI(p.Ref.URI)
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnknownItem, p.Ref.URI)
		}
		u, _ = s.server(name)
		p.Ref.URI = own
	default:
		return nil, fmt.Errorf("%w: completion reference of type %q", ErrUnknownItem, p.Ref.Type)
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()
	return u.request(ctx, "completion/complete", nil, func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := cs.Complete(ctx, &p)
		return err
	})
}

// ServerOf names the server of a published prompt name or resource URI
// ("" when it routes to none).
func (s *Set) ServerOf(key string) string {
	if name, _, ok := s.RouteURI(key); ok {
		return name
	}
	if name, ok := s.RoutePrompt(key); ok {
		return name
	}
	return ""
}

func (s *Set) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, has := ctx.Deadline(); !has {
		return context.WithTimeout(ctx, s.opts.CallTimeout)
	}
	return context.WithCancel(ctx)
}

// request runs one request of method on u's session (reconnecting once when
// the upstream forgot it) and returns its raw result without the envelope
// of its hop; a JSON-RPC error is an *RPCError, anything else an error naming
// the server.
func (u *upstream) request(ctx context.Context, method string, in Asker, do func(context.Context, *mcp.ClientSession) error) (json.RawMessage, error) {
	ctx, done := u.asking(ctx, in)
	defer done()
	for attempt := 0; ; attempt++ {
		cs, err := u.session(ctx)
		if err != nil {
			return nil, fmt.Errorf("upstream MCP server %q is not reachable: %w", u.srv.Name, err)
		}
		sl := &slot{method: method}
		err = do(withSlot(ctx, sl), cs)
		if ierr := inputError(ctx); ierr != nil {
			return nil, ierr
		}
		raw, gerr := sl.get()
		switch {
		case gerr != nil:
			return nil, fmt.Errorf("upstream MCP server %q: %w", u.srv.Name, gerr)
		case raw != nil && err == nil:
			// the caching hints are of the hop too: aiod gives its own
			return dropMembers(u.answer(raw), "ttlMs", "cacheScope"), nil
		case err == nil:
			return nil, fmt.Errorf("upstream MCP server %q: no result captured", u.srv.Name)
		}
		if u.retryable(err) && attempt == 0 {
			u.drop(cs)
			continue
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return nil, &RPCError{Server: u.srv.Name, Code: je.Code, Message: je.Message, Data: je.Data}
		}
		if transportFailure(ctx, err) {
			u.drop(cs)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("upstream MCP server %q did not answer before the deadline: %w", u.srv.Name, ctx.Err())
		}
		return nil, fmt.Errorf("upstream MCP server %q: %w", u.srv.Name, err)
	}
}

// ServerItems returns the prompts or resource templates (kind) of the
// registered server name as it wrote them, in its order, under the cache
// rules of List (what `aiod upstream review` pins).
func (s *Set) ServerItems(ctx context.Context, name, kind string) ([]json.RawMessage, error) {
	u, err := s.server(name)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, it := range u.kindSnapshot(ctx, kind) {
		out = append(out, it.raw)
	}
	return out, nil
}

// dropMembers removes the top-level members keys of a JSON object, every
// other member kept as written, in order (an object without them, or not an
// object, is returned as it is).
func dropMembers(obj json.RawMessage, keys ...string) json.RawMessage {
	ms, ok := members(obj)
	if !ok {
		return obj
	}
	kept := ms[:0:0]
	for _, m := range ms {
		drop := false
		for _, k := range keys {
			drop = drop || m.Key == k
		}
		if !drop {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(ms) {
		return obj
	}
	return join(obj, kept)
}
