// Package codetools makes the tool calls of programs that
// sandbox_execute_code runs (spec/code-tools.md): a program calls its
// tenant's tools over its spawn's tool channel (host/hostfn/process), and
// Caller.Call makes each call as the tenant, through the protocol layer's
// middleware (the allow-list, the audit log, the metrics) and catalogue
// (upstream pins, instance quotas): what a client's tools/call goes
// through, less the HTTP layer, whose place it takes for the rate quota.
package codetools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn/process"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Options are what a Caller reaches: the parts of the host a call passes
// through, and the host's --code-tools.
type Options struct {
	// Tenants are the host's tenants; Audit its audit log.
	Tenants *tenant.Set
	Audit   *audit.Log
	// MCP serves the calls (its middleware and catalogue).
	MCP *mcp.Server
	// Plugin is the annotations of the plugin tool (a built-in's, a
	// plugin's) published as name, and whether there is one.
	Plugin func(name string) (*abi.ToolAnnotations, bool)
	// Upstreams are the upstream MCP servers (nil: none).
	Upstreams *upstream.Set
	// Globs are the host's --code-tools: tools callable from code
	// whatever their annotations (a tenant's code_tools replaces them).
	Globs []string
}

// Caller makes the programs' tool calls of a host.
type Caller struct {
	o Options
}

// New returns the Caller of o.
func New(o Options) *Caller { return &Caller{o: o} }

// Call makes one call of a program and says what the program is told
// (process.ToolCaller).
func (ct *Caller) Call(ctx context.Context, c process.ToolCall) process.ToolAnswer {
	o := ct.o
	t := o.Tenants.ForOwner(c.Owner)
	via, session := c.Plugin, ""
	if parent := mcp.RequestFrom(ctx); parent != nil {
		if parent.Name != "" {
			via = parent.Name
		}
		session = parent.SessionID
	}
	refuse := func(kind, reason, text string) process.ToolAnswer {
		_ = o.Audit.Write(audit.Entry{Tenant: t.Name, Session: session, Method: "tools/call", Tool: c.Name,
			ArgsSHA256: digest(c.Args), Outcome: audit.Denied, Via: via, Step: c.Step, Reason: reason})
		return process.ToolAnswer{Error: kind, Text: text}
	}
	// a hidden tool is answered as a missing one, before anything else
	if !t.Allowed(c.Name) || !ct.exists(ctx, t, c.Name) {
		return refuse(process.ToolUnknown, "unknown", "unknown tool: "+c.Name)
	}
	if c.Name == via || c.Name == c.Plugin {
		return refuse(process.ToolRefused, "itself", c.Name+" cannot be called from the program it runs: make the call yourself")
	}
	if ok, why := ct.permitted(ctx, t, c.Name); !ok {
		return refuse(process.ToolRefused, "policy", c.Name+" "+why+": it is not called from code; make that call yourself")
	}
	// the rate quota, as the HTTP layer takes it; the program runs in the
	// concurrent_calls slot of the call that started it
	release, qe := t.AdmitRate()
	if qe != nil {
		_ = o.Audit.Write(audit.Entry{Tenant: t.Name, Session: session, Method: "tools/call", Tool: c.Name,
			ArgsSHA256: digest(c.Args), Outcome: audit.Quota, Quota: qe.Quota, Via: via, Step: c.Step})
		return process.ToolAnswer{Error: process.ToolLimit, Text: qe.Error()}
	}
	defer release()
	res, rerr := o.MCP.CallTool(tenant.WithTenant(ctx, t), mcp.InnerCall{Principal: mcp.Principal{Owner: c.Owner},
		Name: c.Name, Args: c.Args, SessionID: session, Via: via, Step: c.Step})
	if rerr != nil {
		if rerr.Code == mcp.CodeInvalidParams && strings.HasPrefix(rerr.Message, "unknown tool") {
			return process.ToolAnswer{Error: process.ToolUnknown, Text: rerr.Message}
		}
		kind := process.ToolFailed
		if errors.Is(ctx.Err(), context.Canceled) {
			kind = process.ToolInternal
		}
		return process.ToolAnswer{Error: kind, Text: rerr.Message}
	}
	text, isError := resultText(res)
	if isError {
		return process.ToolAnswer{Error: process.ToolFailed, Text: text}
	}
	return process.ToolAnswer{Text: text}
}

// permitted reports whether t's programs may call name: a tool annotated
// read-only and closed-world (readOnlyHint true, openWorldHint false), or
// one the tenant's code_tools (else the host's --code-tools) names; why
// says what the tool does otherwise.
func (ct *Caller) permitted(ctx context.Context, t *tenant.Tenant, name string) (bool, string) {
	globs := ct.o.Globs
	if t != nil && t.Policy.CodeTools != nil {
		globs = t.Policy.CodeTools
	}
	if caps.CodeToolAllowed(globs, name) {
		return true, ""
	}
	return readOnlyClosed(ct.annotations(ctx, t, name))
}

// readOnlyClosed reports whether annotations a say read-only and
// closed-world (MCP's defaults, for hints absent, are the opposite), and
// if not, what the tool may do.
func readOnlyClosed(a *abi.ToolAnnotations) (bool, string) {
	switch {
	case a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint:
		return false, "may change something"
	case a.OpenWorldHint == nil || *a.OpenWorldHint:
		return false, "reaches outside"
	}
	return true, ""
}

// exists reports whether name is a tool of the catalogue the tenant's
// calls reach (a plugin's, or a visible upstream's).
func (ct *Caller) exists(ctx context.Context, t *tenant.Tenant, name string) bool {
	if _, ok := ct.o.Plugin(name); ok {
		return true
	}
	_, ok := ct.upstreamTool(ctx, t, name)
	return ok
}

// annotations are name's tool annotations (nil: none).
func (ct *Caller) annotations(ctx context.Context, t *tenant.Tenant, name string) *abi.ToolAnnotations {
	if a, ok := ct.o.Plugin(name); ok {
		return a
	}
	def, ok := ct.upstreamTool(ctx, t, name)
	if !ok {
		return nil
	}
	var d struct {
		Annotations *abi.ToolAnnotations `json:"annotations"`
	}
	if json.Unmarshal(def, &d) != nil {
		return nil
	}
	return d.Annotations
}

// upstreamTool is the definition of the upstream tool published as name,
// as the tenant sees it (an upstream it may not use, or a tool its pin
// withholds, has none).
func (ct *Caller) upstreamTool(ctx context.Context, t *tenant.Tenant, name string) (json.RawMessage, bool) {
	ups := ct.o.Upstreams
	if ups == nil {
		return nil, false
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, tl := range ups.Tools(lctx) {
		if tl.Name == name {
			if !t.UpstreamAllowed(tl.Server) {
				return nil, false
			}
			return tl.Definition, true
		}
	}
	return nil, false
}

// resultText is a CallToolResult's text (its text content, joined by
// newlines; its structured content when it has no text) and isError.
func resultText(res []byte) (string, bool) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structuredContent"`
		IsError    bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Sprintf("the tool's result could not be read: %v", err), true
	}
	var parts []string
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		default:
			parts = append(parts, "["+c.Type+" content left out]")
		}
	}
	if len(parts) == 0 && len(r.Structured) > 0 {
		return string(r.Structured), r.IsError
	}
	return strings.Join(parts, "\n"), r.IsError
}

// digest is what the audit log keeps of arguments ("" for none).
func digest(args json.RawMessage) string {
	if len(args) == 0 {
		return ""
	}
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}
