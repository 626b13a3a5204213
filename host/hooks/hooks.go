// Package hooks is the one home of the hooks around tool calls
// (spec/hooks.md): a catalogue wrapper every tools/call passes through,
// whatever serves the tool (a plugin, a built-in, an upstream MCP server),
// under both protocol eras, as a plain request or a task. The composition
// root puts it behind the tenants' allow-lists, so it sees only calls the
// tenant may make, and in front of what serves the tools.
//
// The hooks are the policy's: its top-level "hooks" list, then the
// calling tenant's own, in order, each for the tool names its globs match.
// An operator command hook (caps.Hook) runs as a program in the process
// sandbox (Runner) with the event as JSON on its standard input:
//
//   - before-tool: exit 0 lets the call go on; exit 2 blocks it, and what
//     the hook wrote to its error output (or else its output) is the
//     reason the model is shown; any other ending (another status, no
//     start, out of time) blocks it too.
//   - after-tool: what it prints on exit 0 is added to the result as a
//     text block marked as the hook's; a failure is logged, and the result
//     goes back unchanged.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/sdk/abi"
)

// MetaKey is the _meta member that marks a content block a hook added:
// its value is the hook's label (caps.Hook.Label).
const MetaKey = "aiod.dev/hook"

// Bounds on what a hook returns.
const (
	// MaxReasonBytes bounds a blocking hook's reason in the result.
	MaxReasonBytes = 4 << 10
	// MaxAddedBytes bounds the text one after-tool hook adds.
	MaxAddedBytes = 64 << 10
)

// Options configure a Chain.
type Options struct {
	// Tenant returns the name and the own hooks of the tenant of a call
	// (ctx carries it when the tenant middleware ran; owner is the call's
	// owner otherwise). Nil: every call is the default tenant's, with no
	// hooks of its own.
	Tenant func(ctx context.Context, owner string) (name string, hooks []caps.Hook)
	// Runner runs the command hooks. Nil: a command hook fails (a
	// before-tool one blocks every call it matches).
	Runner *Runner
	// Guards run the guard plugins. Nil: a guard entry fails (closed
	// unless it says fail_open).
	Guards Guards
	// Logger receives the failures of hooks that do not block; nil:
	// slog.Default().
	Logger *slog.Logger
}

// Chain wraps a catalogue with the hooks of the current policy. It keeps
// the catalogue's tools/list (mcp.ToolLister) and change notices
// (mcp.ToolsNotifier) when it has them.
type Chain struct {
	inner mcp.Catalog
	o     Options
	top   atomicHooks
}

// New wraps inner; the top-level hooks are set by SetHooks (none until
// then).
func New(inner mcp.Catalog, o Options) *Chain {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Chain{inner: inner, o: o}
}

// Catalog is c as the catalogue to serve: with the inner catalogue's
// tools/list and change notices when it has them.
func (c *Chain) Catalog() mcp.Catalog {
	l, ok := c.inner.(mcp.ToolLister)
	if !ok {
		return c
	}
	return &listingChain{Chain: c, l: l}
}

// SetHooks takes the policy's top-level hooks (a reload); calls already
// past the hooks are not affected. The slice must not change after.
func (c *Chain) SetHooks(hs []caps.Hook) { c.top.store(hs) }

func (c *Chain) Snapshot() *mcp.Snapshot      { return c.inner.Snapshot() }
func (c *Chain) OnSwap(f func(*mcp.Snapshot)) { c.inner.OnSwap(f) }
func (c *Chain) GetPrompt(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	return c.inner.GetPrompt(ctx, req)
}
func (c *Chain) ReadResource(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	return c.inner.ReadResource(ctx, req)
}
func (c *Chain) Complete(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	return c.inner.Complete(ctx, req)
}

type listingChain struct {
	*Chain
	l mcp.ToolLister
}

func (c *listingChain) ListTools(ctx context.Context) []byte { return c.l.ListTools(ctx) }

// List and OnListChanged pass mcp.Lister and mcp.ListNotifier through.
func (c *listingChain) List(ctx context.Context, key string) ([]byte, bool) {
	if l, ok := c.inner.(mcp.Lister); ok {
		return l.List(ctx, key)
	}
	return nil, false
}

func (c *listingChain) OnListChanged(f func(kind string)) {
	if n, ok := c.inner.(mcp.ListNotifier); ok {
		n.OnListChanged(f)
	}
}

// OnToolsChanged passes mcp.ToolsNotifier through.
func (c *listingChain) OnToolsChanged(f func()) {
	if n, ok := c.inner.(mcp.ToolsNotifier); ok {
		n.OnToolsChanged(f)
	}
}

// Guards are the loaded guard plugins (the plugin registry).
type Guards interface {
	// Guard returns the hooks guard plugin name declares; false when it
	// is not loaded or declares none.
	Guard(name string) (*abi.Hooks, bool)
	// CallGuard runs hook op of guard name about a call of tool by
	// owner; event is the abi.HookEvent, the answer the guard's
	// abi.HookAnswer, both JSON.
	CallGuard(ctx context.Context, name string, op uint64, owner, tool string, event []byte) ([]byte, error)
}

// step is one hook that applies to a call, in one phase.
type step struct {
	h     *caps.Hook // in the policy's list, which does not change
	guard bool       // a guard plugin (h.Plugin), else a command
	// missing: a guard that is not loaded or declares no hooks (it fails)
	missing bool
}

// label names a step's hook in what the model is shown and in logs.
func (s *step) label() string { return s.h.Label() }

// maxSteps is how many steps of a phase CallTool keeps on its stack.
const maxSteps = 8

// CallTool runs the hooks that apply to the call before it, in order,
// then the call, then the hooks after it. A call no hook applies to costs
// an atomic load and the tenant lookup.
func (c *Chain) CallTool(ctx context.Context, req mcp.CallRequest) ([]byte, error) {
	tenant, own := caps.ReservedTenant, []caps.Hook(nil)
	if c.o.Tenant != nil {
		tenant, own = c.o.Tenant(ctx, req.Owner)
	}
	top := c.top.load()
	if len(top) == 0 && len(own) == 0 {
		return c.inner.CallTool(ctx, req)
	}
	var bs, as [maxSteps]step
	before, after := c.steps(req.Name, top, own, bs[:0], as[:0])
	if len(before) == 0 && len(after) == 0 {
		return c.inner.CallTool(ctx, req)
	}
	ev := Event{Tenant: tenant, Session: req.Session, Era: req.Era, Tool: req.Name, Input: input(req.Args)}
	var pe phaseEvent // the guards' event, encoded once a phase
	defer pe.release()
	for i := range before {
		st := &before[i]
		gctx, sp := startGuard(ctx, st, "before", tenant, req.Name)
		if st.guard {
			args, res := c.guardBefore(gctx, st, req, &ev, pe.of(st.h, &ev))
			if res != nil {
				endGuard(sp, "blocked")
				return res, nil
			}
			if args != nil {
				req.Args, ev.Input = args, args
				pe.stale()
				endGuard(sp, "rewritten")
			} else {
				endGuard(sp, "allowed")
			}
			continue
		}
		ev.Event = caps.HookBeforeTool
		if reason, ok := c.before(gctx, st.h, &ev); !ok {
			endGuard(sp, "blocked")
			return Blocked(st.label(), reason), nil
		}
		endGuard(sp, "allowed")
	}
	res, err := c.inner.CallTool(ctx, req)
	if err != nil || len(after) == 0 {
		return res, err
	}
	ev.outcome = Outcome{Result: res}
	ev.Outcome = &ev.outcome // no allocation of its own
	pe.stale()
	for i := range after {
		st := &after[i]
		gctx, sp := startGuard(ctx, st, "after", tenant, req.Name)
		if st.guard {
			if r := c.guardAfter(gctx, st, req, &ev, pe.of(st.h, &ev), res); !sameBytes(r, res) {
				res = r
				ev.Outcome.Result = res
				pe.stale()
				endGuard(sp, "rewritten")
			} else {
				endGuard(sp, "allowed")
			}
			continue
		}
		ev.Event = caps.HookAfterTool
		text, ok := c.after(gctx, st.h, &ev)
		if !ok || text == "" {
			endGuard(sp, "allowed")
			continue
		}
		endGuard(sp, "added")
		if b, aerr := AddText(res, st.label(), text); aerr == nil {
			res = b
			ev.Outcome.Result = res
			pe.stale()
		} else {
			c.o.Logger.Warn("hook output not added: the result is not a tool result object", "hook", st.label(), "tool", req.Name, "err", aerr)
		}
	}
	return res, nil
}

// sameBytes reports whether a and b are the same slice (a guard kept the
// result).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// steps appends to before and after the hooks of top, then own, that
// apply to tool, in each phase: a command by its event, a guard plugin by
// the globs of its manifest (a guard that is not loaded is a before step:
// it fails there). A guard is never asked in a phase its manifest does not
// declare.
func (c *Chain) steps(tool string, top, own []caps.Hook, before, after []step) ([]step, []step) {
	for _, list := range [2][]caps.Hook{top, own} {
		for i := range list {
			h := &list[i]
			if !h.Matches(tool) {
				continue
			}
			if h.Plugin == "" {
				if h.Event == caps.HookBeforeTool {
					before = append(before, step{h: h})
				} else {
					after = append(after, step{h: h})
				}
				continue
			}
			var decl *abi.Hooks
			if c.o.Guards != nil {
				decl, _ = c.o.Guards.Guard(h.Plugin)
			}
			if decl == nil {
				before = append(before, step{h: h, guard: true, missing: true})
				continue
			}
			if caps.MatchAny(decl.Before, tool) {
				before = append(before, step{h: h, guard: true})
			}
			if caps.MatchAny(decl.After, tool) {
				after = append(after, step{h: h, guard: true})
			}
		}
	}
	return before, after
}

// before runs one before-tool hook: ok when it lets the call go on, else
// the reason the call is blocked.
func (c *Chain) before(ctx context.Context, h *caps.Hook, ev *Event) (reason string, ok bool) {
	if c.o.Runner == nil {
		return "no hook runner", false
	}
	out, err := c.o.Runner.Run(ctx, *h, ev)
	switch {
	case err != nil:
		c.o.Logger.Warn("before-tool hook failed: the call is blocked", "hook", h.Label(), "tool", ev.Tool, "tenant", ev.Tenant, "err", err)
		return "the hook failed: " + err.Error(), false
	case out.Exit == 0:
		return "", true
	case out.Exit == 2:
		r := strings.TrimSpace(string(out.Stderr))
		if r == "" {
			r = strings.TrimSpace(string(out.Stdout))
		}
		if r == "" {
			r = "no reason given"
		}
		return r, false
	}
	c.o.Logger.Warn("before-tool hook failed: the call is blocked", "hook", h.Label(), "tool", ev.Tool, "tenant", ev.Tenant, "exit", out.Exit)
	return "the hook failed: " + out.Ending(), false
}

// after runs one after-tool hook: the text it adds (ok), or a failure,
// logged.
func (c *Chain) after(ctx context.Context, h *caps.Hook, ev *Event) (string, bool) {
	if c.o.Runner == nil {
		c.o.Logger.Warn("after-tool hook not run: no hook runner", "hook", h.Label(), "tool", ev.Tool)
		return "", false
	}
	out, err := c.o.Runner.Run(ctx, *h, ev)
	if err != nil {
		c.o.Logger.Warn("after-tool hook failed", "hook", h.Label(), "tool", ev.Tool, "tenant", ev.Tenant, "err", err)
		return "", false
	}
	if out.Exit != 0 {
		c.o.Logger.Warn("after-tool hook failed", "hook", h.Label(), "tool", ev.Tool, "tenant", ev.Tenant, "ending", out.Ending(),
			"stderr", clip(strings.TrimSpace(string(out.Stderr)), 512))
		return "", false
	}
	return strings.TrimRight(clip(string(out.Stdout), MaxAddedBytes), "\n"), true
}

// Event is what a hook reads on its standard input, as JSON.
type Event struct {
	// Event is "before-tool" or "after-tool".
	Event string `json:"event"`
	// Tenant is the calling tenant's name ("default" in the
	// single-tenant form).
	Tenant string `json:"tenant"`
	// Session is the legacy MCP session id, absent outside one.
	Session string `json:"session,omitempty"`
	// Era is the client's protocol era: "legacy" or "modern".
	Era string `json:"era,omitempty"`
	// Tool is the tool's published name and Input its arguments (an
	// object; {} when the call had none).
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// Outcome is the call's result (after-tool only).
	Outcome *Outcome `json:"outcome,omitempty"`
	outcome Outcome  // where Outcome points in the chain
}

// Outcome is how a call ended, as an after-tool hook is told.
type Outcome struct {
	// Result is the CallToolResult as the tool answered it (isError
	// set when the tool reported a failure).
	Result json.RawMessage `json:"result"`
}

// input is a call's arguments as the event gives them: {} for none.
func input(args []byte) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// Blocked is the CallToolResult of a call a hook blocked: an isError
// result naming the hook, with its reason (clipped to MaxReasonBytes).
func Blocked(label, reason string) []byte {
	text := "Blocked by the operator's hook (" + label + "): " + clip(reason, MaxReasonBytes)
	b, _ := json.Marshal(map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text, "_meta": map[string]string{MetaKey: label}}},
		"isError": true,
	})
	return b
}

// AddText appends a text block marked as the hook label's to the content
// of CallToolResult res (a content array is made when it has none); the
// other members of res are kept as they were.
func AddText(res []byte, label, text string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(res, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	var content []json.RawMessage
	if c, ok := obj["content"]; ok {
		if err := json.Unmarshal(c, &content); err != nil {
			return nil, err
		}
	}
	block, err := json.Marshal(map[string]any{"type": "text", "text": "[" + label + "] " + text, "_meta": map[string]string{MetaKey: label}})
	if err != nil {
		return nil, err
	}
	content = append(content, block)
	if obj["content"], err = json.Marshal(content); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " …[cut]"
}
