package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options tune a Set. The zero value is usable.
type Options struct {
	// Exclude reports names that must not be published or routed (the
	// built-in and plugin tools, which win a collision). Nil excludes none.
	Exclude func(name string) bool
	// ExcludePrompt is Exclude for prompt names (a plugin's prompt wins).
	ExcludePrompt func(name string) bool
	// ListTimeout bounds one upstream's tools/list (connecting included).
	// Default DefaultListTimeout.
	ListTimeout time.Duration
	// DefaultTTL is how long a tool list stays fresh when the upstream gives
	// no ttlMs (legacy upstreams, or a 2026 ttlMs of 0). Default 5 s.
	DefaultTTL time.Duration
	// MaxResultBytes bounds one answer (a JSON body or one SSE event).
	// Default 16 MiB.
	MaxResultBytes int64
	// CallTimeout bounds a call whose context has no deadline. Default 10 min.
	CallTimeout time.Duration
	// Logger receives the rules' one-time messages (a dropped tool, an
	// upstream that does not answer). Default slog.Default().
	Logger *slog.Logger
	// ClientName and ClientVersion are the clientInfo sent to upstreams.
	// Default "aiod" and "dev".
	ClientName, ClientVersion string
	// Transport is the HTTP transport under the client. Default: a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// StdioDir holds the command servers' directories,
	// <StdioDir>/<server>/{workspace,tmp}. Default <user cache
	// dir>/aiod/upstreams.
	StdioDir string
	// RequirePins runs only command servers pinned by sha256 (lockdown).
	RequirePins bool
	// RestartBackoff is the first wait before a command server that
	// exited is started again (doubling, at most 32 times it). Default 1 s.
	RestartBackoff time.Duration
	// Pins, when not nil, withholds every tool whose definition does not
	// match its pin (or that has none): it is not listed, not callable, and
	// not seen by ServerTools (see Pins).
	Pins *Pins
}

// DefaultListTimeout is Options.ListTimeout when zero (and the default of
// aiod's --upstream-list-timeout).
const DefaultListTimeout = 2 * time.Second

const (
	defaultTTL         = 5 * time.Second
	defaultMaxResult   = 16 << 20
	defaultCallTimeout = 10 * time.Minute
)

// Tool is one published upstream tool.
type Tool struct {
	Name         string          // the published name
	Server       string          // the upstream's registered name
	UpstreamName string          // the name the upstream gave it
	Definition   json.RawMessage // the upstream's tool object, with "name" set to Name
}

// RPCError is a JSON-RPC error answered by an upstream to a tools/call (an
// unknown tool, invalid params): the caller relays it as a JSON-RPC error.
type RPCError struct {
	Server  string
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("upstream MCP server %q: %s (code %d)", e.Server, e.Message, e.Code)
}

// ErrUnknownTool is returned by Call for a name that routes to no upstream.
var ErrUnknownTool = errors.New("unknown tool")

// Set aggregates the upstream servers. Its methods are safe for concurrent
// use.
type Set struct {
	opts Options
	ups  []*upstream

	ctx    context.Context // ends at Close: background refreshes stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	routes map[string]route // published name -> where it goes, from the last Tools
	counts map[string]int   // server -> tools it published in the last Tools
	warned map[string]bool  // one-time messages already logged

	pubMu    sync.Mutex        // serialises recheck
	pubSum   [sha256.Size]byte // digest of the published list recheck last saw
	onChange []func()
	kindSum  map[string][sha256.Size]byte // the same for prompts, resources, templates
	onKind   []func(kind string)

	closeOnce sync.Once
}

type route struct {
	u    *upstream
	name string
}

// New returns a Set over servers, in registration order. It connects to
// nothing until the first Tools or Call.
func New(servers []Server, opts Options) *Set {
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = DefaultListTimeout
	}
	if opts.DefaultTTL <= 0 {
		opts.DefaultTTL = defaultTTL
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = defaultMaxResult
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = defaultRestartBackoff
	}
	if opts.ClientName == "" {
		opts.ClientName = "aiod"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	s := &Set{opts: opts, routes: map[string]route{}, warned: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, srv := range servers {
		s.ups = append(s.ups, newUpstream(s, srv))
	}
	return s
}

// Servers returns the registered servers, in registration order.
func (s *Set) Servers() []Server {
	out := make([]Server, len(s.ups))
	for i, u := range s.ups {
		out[i] = u.srv
	}
	return out
}

// Tools returns the published tools: the upstreams in registration order,
// each in its own order. A name that Exclude reports, or that an earlier
// upstream already published, is dropped; so is a tool of a server without a
// prefix whose name does not start with "<server>_". Each drop is logged once.
// An upstream with a fresh cached list costs no round trip; one with a stale
// list is served from it and refreshed in the background; one without waits
// at most the list timeout, and is absent if it does not answer by then.
func (s *Set) Tools(ctx context.Context) []Tool {
	snaps := make([][]upTool, len(s.ups))
	var wg sync.WaitGroup
	for i, u := range s.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i] = u.snapshot(ctx)
		}()
	}
	wg.Wait()
	out, routes := s.publish(snaps)
	counts := make(map[string]int, len(s.ups))
	for _, t := range out {
		counts[t.Server]++
	}
	s.mu.Lock()
	s.routes, s.counts = routes, counts
	s.mu.Unlock()
	return out
}

// publish applies the naming rules to the upstreams' lists (in
// registration order): the published tools and where each name goes.
func (s *Set) publish(snaps [][]upTool) ([]Tool, map[string]route) {
	var (
		out    []Tool
		routes = make(map[string]route)
		owner  = make(map[string]string)
	)
	if s.opts.Pins != nil {
		s.opts.Pins.refresh(s.logf)
	}
	for i, u := range s.ups {
		for _, t := range snaps[i] {
			switch {
			case t.pub == "":
				s.warnOnce(u.srv.Name+"\x00noprefix\x00"+t.name, "upstream MCP server %q has no prefix and its tool %q does not start with %q: dropped", u.srv.Name, t.name, u.srv.Name+"_")
				continue
			case s.opts.Exclude != nil && s.opts.Exclude(t.pub):
				s.warnOnce(u.srv.Name+"\x00builtin\x00"+t.pub, "upstream MCP server %q: tool %q collides with a built-in tool: dropped", u.srv.Name, t.pub)
				continue
			case s.withheld(u, t):
				continue
			case owner[t.pub] != "":
				if owner[t.pub] != u.srv.Name {
					s.warnOnce(u.srv.Name+"\x00dup\x00"+t.pub, "upstream MCP server %q: tool %q is already published by %q: dropped", u.srv.Name, t.pub, owner[t.pub])
				}
				continue
			}
			owner[t.pub] = u.srv.Name
			routes[t.pub] = route{u, t.name}
			out = append(out, Tool{Name: t.pub, Server: u.srv.Name, UpstreamName: t.name, Definition: t.def})
		}
	}
	return out, routes
}

// OnChange registers f to be called once for each change of what Tools
// publishes that an upstream made: its tools/list_changed, or a refresh (the
// ttl ran out, it came up or went down) whose answer changed the published
// list. An upstream's first answer is not a change (the tools/list that
// asked for it waits for it), nor is a refresh that finds the same list. f is
// called from a background goroutine and must not block.
func (s *Set) OnChange(f func()) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.onChange = append(s.onChange, f)
}

// Rebase takes the published list as the upstreams' caches give it now as
// what clients know, without calling the OnChange functions: a plugin swap,
// which tells clients itself, changes the names the set excludes, and the
// next refresh must not report that again.
func (s *Set) Rebase() { s.recheck(false) }

// recheck computes the published list from the caches (no round trip) and,
// when it differs from the last one computed and notify is set, calls the
// OnChange functions.
func (s *Set) recheck(notify bool) {
	s.pubMu.Lock() // held while computing: rechecks of two upstreams must not cross
	snaps := make([][]upTool, len(s.ups))
	for i, u := range s.ups {
		u.mu.Lock()
		snaps[i] = u.tools
		u.mu.Unlock()
	}
	out, _ := s.publish(snaps)
	h := sha256.New()
	for _, t := range out {
		h.Write(t.Definition)
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	changed := sum != s.pubSum
	s.pubSum = sum
	fs := s.onChange
	s.pubMu.Unlock()
	if !changed || !notify || s.ctx.Err() != nil {
		return
	}
	for _, f := range fs {
		f()
	}
}

// Status is one upstream as a tools/list sees it.
type Status struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
	// Command is a command server's command (it has no URL).
	Command string `json:"command,omitempty"`
	Prefix  string `json:"prefix"`
	// Reachable: its last tools/list answered.
	Reachable bool `json:"reachable"`
	// Tools is how many tools it publishes (after the collision rules).
	Tools int `json:"tools"`
}

// Status lists the servers in registration order as a Tools call sees them
// now (it runs one, so it costs what a tools/list costs: nothing with fresh
// caches, at most the list timeout otherwise).
func (s *Set) Status(ctx context.Context) []Status {
	s.Tools(ctx)
	s.mu.Lock()
	counts := s.counts
	s.mu.Unlock()
	out := make([]Status, len(s.ups))
	for i, u := range s.ups {
		u.mu.Lock()
		have := u.have
		u.mu.Unlock()
		out[i] = Status{Name: u.srv.Name, URL: u.srv.URL, Prefix: u.srv.Prefix, Reachable: have, Tools: counts[u.srv.Name]}
		if u.srv.Stdio != nil {
			out[i].Command = u.srv.Stdio.Command
		}
	}
	return out
}

// Route reports which upstream a published name goes to and the upstream's
// own name for the tool. A name published by the last Tools goes where it was
// listed; any other name goes to the first registered server whose prefix (or,
// without one, whose "<server>_") starts it, so that a call to a server that
// is down still names that server.
func (s *Set) Route(name string) (server, tool string, ok bool) {
	r, ok := s.route(name)
	if !ok {
		return "", "", false
	}
	return r.u.srv.Name, r.name, true
}

func (s *Set) route(name string) (route, bool) {
	if s.opts.Exclude != nil && s.opts.Exclude(name) {
		return route{}, false
	}
	s.mu.Lock()
	r, ok := s.routes[name]
	s.mu.Unlock()
	if ok {
		return r, true
	}
	for _, u := range s.ups {
		if u.srv.Prefix != "" {
			if t, ok := strings.CutPrefix(name, u.srv.Prefix+"_"); ok && t != "" {
				return route{u, t}, true
			}
		} else if len(name) > len(u.srv.Name)+1 && strings.HasPrefix(name, u.srv.Name+"_") {
			return route{u, name}, true
		}
	}
	return route{}, false
}

// Call forwards a tools/call of a published name, with the prefix taken off,
// and returns the upstream's answer: its result as it wrote it (content,
// structuredContent, isError, the tool's own _meta, anything else) without
// the envelope of its hop, the "resultType" and the _meta's
// "io.modelcontextprotocol/serverInfo" (the caller's client gets its own
// server's envelope: envelope.go), or:
//
//   - an isError result naming the server when the upstream is down, its
//     answer exceeds the size limit or is not JSON-RPC, it answered a
//     redirect (which is not followed) or a resultType other than
//     "complete", or the deadline passed;
//   - an *RPCError when the upstream answered a JSON-RPC error;
//   - ErrUnknownTool (wrapped) when the name routes to no upstream;
//   - the context's error (wrapped) when ctx was cancelled; the upstream call
//     is cancelled with it.
//
// When notify is not nil the upstream is asked for progress and log messages
// (at every level: the caller filters by its client's level), and each one
// that arrives is passed to notify with the upstream's params (its
// progressToken is aiod's token towards the upstream: the caller puts its
// client's token in its place). notify is called from the goroutine reading
// the answer, in order.
func (s *Set) Call(ctx context.Context, name string, arguments json.RawMessage, notify func(method string, params json.RawMessage)) (json.RawMessage, error) {
	return s.CallAsking(ctx, name, arguments, notify, nil)
}

// CallAsking is Call with in answering the upstream's input requests during
// the call (input.go): an error of in (the client cannot answer, or will in
// a later round) is returned as is, the upstream call abandoned. Without in
// an input request is declined and an upstream that insists answers isError.
func (s *Set) CallAsking(ctx context.Context, name string, arguments json.RawMessage, notify func(method string, params json.RawMessage), in Asker) (json.RawMessage, error) {
	r, ok := s.route(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.CallTimeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx) // ends the answer's stream on return
	defer cancel()
	ctx, sp := startCall(ctx, r.u.srv.Name, r.name)
	if res, ok := s.callable(ctx, r.u, r.name); !ok {
		endCall(sp, res, nil)
		return res, nil
	}
	res, err := r.u.call(ctx, r.name, arguments, notify, in)
	endCall(sp, res, err)
	if err != nil {
		return nil, err
	}
	return r.u.answer(res), nil
}

// withheld reports (and logs once, with the reason) whether the pins
// withhold t.
func (s *Set) withheld(u *upstream, t upTool) bool {
	if s.opts.Pins == nil {
		return false
	}
	ok, why := s.opts.Pins.check(u.srv.Name, t.name, t.raw)
	if !ok {
		s.warnOnce(u.srv.Name+"\x00pin\x00"+t.name+"\x00"+string(t.raw), "upstream MCP server %q: tool %q is withheld until an operator accepts it (aiod upstream review): %s", u.srv.Name, t.name, why)
	}
	return !ok
}

// callable checks a call of tool on u against the pins: with pins, only a
// tool in the server's current list whose definition matches its pin may
// be called; otherwise the isError result to answer.
func (s *Set) callable(ctx context.Context, u *upstream, tool string) (json.RawMessage, bool) {
	if s.opts.Pins == nil {
		return nil, true
	}
	s.opts.Pins.refresh(s.logf)
	for _, t := range u.snapshot(ctx) {
		if t.name == tool {
			if s.withheld(u, t) {
				return errorResult(fmt.Sprintf("upstream MCP server %q: tool %q is withheld until an operator accepts its definition (aiod upstream review)", u.srv.Name, tool)), false
			}
			return nil, true
		}
	}
	return errorResult(fmt.Sprintf("upstream MCP server %q: tool %q is withheld: it is not in the server's current tool list, so its definition cannot be checked against its pin", u.srv.Name, tool)), false
}

// ErrUnknownServer is returned by ServerTools and CallServer for a name
// that is not a registered server.
var ErrUnknownServer = errors.New("no such upstream MCP server")

func (s *Set) server(name string) (*upstream, error) {
	for _, u := range s.ups {
		if u.srv.Name == name {
			return u, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownServer, name)
}

// ServerTools returns the tools of the registered server name under the
// upstream's own names, each as it wrote it, in its order, with the cache
// rules of Tools (no round trip with a fresh list, at most the list timeout
// without one). It is every tool the server lists, including those that
// publish no name (a collision, no prefix). reachable is false when the
// server has not answered; the list is then empty.
func (s *Set) ServerTools(ctx context.Context, name string) (tools []json.RawMessage, reachable bool, err error) {
	u, err := s.server(name)
	if err != nil {
		return nil, false, err
	}
	snap := u.snapshot(ctx)
	u.mu.Lock()
	reachable = u.have
	u.mu.Unlock()
	if s.opts.Pins != nil {
		s.opts.Pins.refresh(s.logf)
	}
	out := make([]json.RawMessage, 0, len(snap))
	for _, t := range snap {
		if !s.withheld(u, t) {
			out = append(out, t.raw)
		}
	}
	return out, reachable, nil
}

// CallServer forwards a tools/call of tool (the upstream's own name) to the
// registered server name, with the outcomes of Call (ErrUnknownServer, wrapped,
// instead of ErrUnknownTool), except that the result is the upstream's as it
// wrote it, envelope included (the aiod:upstream family promises plugins the
// server's CallToolResult byte for byte). It does not consult the published
// names: a tool that publishes none is callable this way.
func (s *Set) CallServer(ctx context.Context, name, tool string, arguments json.RawMessage, notify func(method string, params json.RawMessage)) (json.RawMessage, error) {
	u, err := s.server(name)
	if err != nil {
		return nil, err
	}
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.CallTimeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx, sp := startCall(ctx, u.srv.Name, tool)
	if res, ok := s.callable(ctx, u, tool); !ok {
		endCall(sp, res, nil)
		return res, nil
	}
	res, err := u.call(ctx, tool, arguments, notify, nil)
	endCall(sp, res, err)
	return res, err
}

// Close ends the sessions (a DELETE to each legacy upstream) and stops the
// background refreshes. It is idempotent; after Close, Tools lists nothing and
// Call answers isError.
func (s *Set) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		var wg sync.WaitGroup
		for _, u := range s.ups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u.close()
			}()
		}
		wg.Wait()
		s.wg.Wait()
	})
	return nil
}

func (s *Set) warnOnce(key, format string, args ...any) {
	s.mu.Lock()
	seen := s.warned[key]
	s.warned[key] = true
	s.mu.Unlock()
	if !seen {
		s.opts.Logger.Warn(fmt.Sprintf(format, args...))
	}
}

func (s *Set) logf(format string, args ...any) {
	s.opts.Logger.Info(fmt.Sprintf(format, args...))
}
