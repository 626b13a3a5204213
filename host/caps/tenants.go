package caps

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The tenants schema is generated from the patterns below;
// TestTenantsSchemaUpToDate fails when the committed file differs.
//go:generate go run ./internal/gentenants/cmd/gentenants ../../spec/tenants.schema.json

// The tenants of a multi-tenant host (spec/tenants.md): who may call, with
// which tools, upstreams and browser, within which quotas. Pure data and
// validation; host/tenant enforces it.

// TenantsVersion is the version of the tenants format (spec/tenants.md).
const TenantsVersion = 1

// Tenant is one tenant of the policy's "tenants" object, keyed by its name.
type Tenant struct {
	// Keys are the SHA-256 digests of the tenant's API keys, each
	// "sha256:<64 lowercase hex digits>". The keys themselves are never
	// stored. A key maps to exactly one tenant.
	Keys []string `json:"keys"`
	// Tools are globs ('*' matches any run of characters) over the
	// published names of tools and prompts and the URIs of resources and
	// resource templates the tenant may see and use. Empty: none.
	Tools []string `json:"tools,omitempty"`
	// Quotas bound what the tenant may hold and do at once.
	Quotas Quotas `json:"quotas"`
	// Upstreams are the upstream MCP servers (by registered name) whose
	// published tools the tenant may see and call; "*" for all. Empty:
	// none.
	Upstreams []string `json:"upstreams,omitempty"`
	// Browser lets the tenant's plugins use the browser (the cdp family).
	Browser bool `json:"browser,omitempty"`
	// Workspace is the tenant's own /workspace directory (absolute); empty:
	// one under the host's data directory.
	Workspace string `json:"workspace,omitempty"`
	// ToolSearch, when set, turns tool search on or off for the tenant
	// whatever the host's --tool-search says (spec/protocol.md, "Tool
	// search"); nil: the host's setting.
	ToolSearch *bool `json:"tool_search,omitempty"`
	// Hooks run around the tenant's tool calls after the policy's
	// top-level hooks (spec/hooks.md).
	Hooks []Hook `json:"hooks,omitempty"`
	// CodeTools are globs over the tools a program run by
	// sandbox_execute_code may call besides those annotated read-only and
	// closed-world (spec/code-tools.md), whatever the host's --code-tools
	// says; nil: the host's setting; empty: none besides those.
	CodeTools []string `json:"code_tools,omitempty"`
	// refusedUpstreams are the policy's upstream servers whose "tenants"
	// leave this tenant out (ParsePolicy fills it).
	refusedUpstreams []string
}

// CodeToolAllowed reports whether a program may call name, a tool not
// annotated read-only and closed-world, under globs.
func CodeToolAllowed(globs []string, name string) bool {
	for _, g := range globs {
		if matchPattern(g, name) {
			return true
		}
	}
	return false
}

// Quotas are per-tenant limits; 0 (or absent) means no limit of this kind.
type Quotas struct {
	// ConcurrentCalls is the most MCP requests of the tenant in flight at
	// once.
	ConcurrentCalls int `json:"concurrent_calls,omitempty"`
	// CallsPerMinute is the sustained rate of MCP requests: a token
	// bucket refilled at this rate that holds ten seconds' worth (at least
	// one request; spec/tenants.md §3).
	CallsPerMinute int `json:"calls_per_minute,omitempty"`
	// Instances is the most plugin instances (idle or in a call) the tenant
	// holds across all its plugins.
	Instances int `json:"instances,omitempty"`
	// Sessions is the most legacy MCP sessions the tenant holds at once.
	Sessions int `json:"sessions,omitempty"`
}

// ErrInvalidTenants is wrapped by every tenants validation error.
var ErrInvalidTenants = errors.New("invalid tenants")

// Patterns of the tenants format (spec/tenants.md; the schema uses them).
const (
	TenantNamePattern = `^[a-z0-9][a-z0-9_-]{0,63}$`
	KeyHashPattern    = `^sha256:[0-9a-f]{64}$`
	ToolGlobPattern   = `^[^\x00\n]{1,256}$`
)

var (
	tenantNameRE = regexp.MustCompile(TenantNamePattern)
	keyHashRE    = regexp.MustCompile(KeyHashPattern)
	toolGlobRE   = regexp.MustCompile(ToolGlobPattern)
)

// ReservedTenant is the name of the single-tenant form (an API key given
// on the command line, or no authentication): a policy may not use it.
const ReservedTenant = "default"

// ValidTenantName reports whether name can name a tenant (the pattern
// TenantNamePattern; what an OAuth claim must also match).
func ValidTenantName(name string) bool { return tenantNameRE.MatchString(name) }

// ValidateTenants checks the tenants of a policy: names, key digests
// (each key hash belongs to exactly one tenant), globs, quotas, upstream
// names and workspaces. Errors name the tenant.
func ValidateTenants(ts map[string]Tenant) error {
	owner := map[string]string{} // key hash -> tenant
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	sort.Strings(names) // errors in a stable order
	for _, name := range names {
		t := ts[name]
		if err := validateTenant(name, t, owner); err != nil {
			return fmt.Errorf("%w: tenant %s: %w", ErrInvalidTenants, name, err)
		}
	}
	return nil
}

func validateTenant(name string, t Tenant, owner map[string]string) error {
	if !tenantNameRE.MatchString(name) {
		return fmt.Errorf("name must match %s", TenantNamePattern)
	}
	if name == ReservedTenant {
		return fmt.Errorf("the name %q is reserved for the single-tenant form (--api-key)", ReservedTenant)
	}
	for i, k := range t.Keys {
		if !keyHashRE.MatchString(k) {
			// never echoed: it may be a key pasted by mistake
			return fmt.Errorf("keys[%d]: must be \"sha256:\" and 64 lowercase hex digits, the digest of the key (aiod key new prints one)", i)
		}
		if o, dup := owner[k]; dup {
			if o == name {
				return fmt.Errorf("key %s is listed twice", k[:15]+"…")
			}
			return fmt.Errorf("key %s is also tenant %s's: a key maps to exactly one tenant", k[:15]+"…", o)
		}
		owner[k] = name
	}
	for _, g := range t.Tools {
		if !toolGlobRE.MatchString(g) {
			return fmt.Errorf("tools: glob %q must be 1 to 256 characters without NUL or newline", g)
		}
	}
	for _, g := range t.CodeTools {
		if !toolGlobRE.MatchString(g) {
			return fmt.Errorf("code_tools: glob %q must be 1 to 256 characters without NUL or newline", g)
		}
	}
	q := t.Quotas
	for _, v := range []struct {
		name string
		n    int
	}{{"concurrent_calls", q.ConcurrentCalls}, {"calls_per_minute", q.CallsPerMinute}, {"instances", q.Instances}, {"sessions", q.Sessions}} {
		if v.n < 0 {
			return fmt.Errorf("quotas.%s: must not be negative", v.name)
		}
	}
	for _, u := range t.Upstreams {
		if u != "*" && !nameRE.MatchString(u) {
			return fmt.Errorf("upstreams: %q is not an upstream server name", u)
		}
	}
	if t.Workspace != "" && (!filepath.IsAbs(t.Workspace) || strings.ContainsRune(t.Workspace, 0)) {
		return fmt.Errorf("workspace %q: must be an absolute path", t.Workspace)
	}
	return ValidateHooks(t.Hooks)
}

// KeyHashes returns the digests of t's keys (validated entries only).
func (t Tenant) KeyHashes() [][32]byte {
	out := make([][32]byte, 0, len(t.Keys))
	for _, k := range t.Keys {
		h, ok := strings.CutPrefix(k, "sha256:")
		var sum [32]byte
		if !ok || hex.DecodedLen(len(h)) != 32 {
			continue
		}
		if _, err := hex.Decode(sum[:], []byte(h)); err == nil {
			out = append(out, sum)
		}
	}
	return out
}

// ToolAllowed reports whether name (a tool or prompt name, or a resource
// URI or template) matches one of t's globs.
func (t Tenant) ToolAllowed(name string) bool {
	for _, g := range t.Tools {
		if matchPattern(g, name) {
			return true
		}
	}
	return false
}

// UpstreamAllowed reports whether t may use upstream server.
func (t Tenant) UpstreamAllowed(server string) bool {
	for _, r := range t.refusedUpstreams {
		if r == server {
			return false
		}
	}
	for _, u := range t.Upstreams {
		if u == "*" || u == server {
			return true
		}
	}
	return false
}

// KeyLine is the policy entry for a key: "sha256:<hex of its SHA-256>".
func KeyLine(sum [32]byte) string { return "sha256:" + hex.EncodeToString(sum[:]) }
