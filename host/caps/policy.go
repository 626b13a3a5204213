package caps

import (
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aiodhq/aiod/host/internal/pathx"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Policy is the operator's side: what each plugin may be granted. Deny by
// default: a plugin that has no entry and no Default gets only the core
// (log, progress) functions.
type Policy struct {
	// Plugins maps a plugin name to the most it may be granted.
	Plugins map[string]abi.Capabilities `json:"plugins,omitempty"`
	// Default applies to plugins without an entry in Plugins. Nil grants
	// nothing.
	Default *abi.Capabilities `json:"default,omitempty"`
	// Limits are the operator's caps on what manifests ask for.
	Limits OperatorLimits `json:"limits"`
	// Pins are the module digests (hex sha256) the policy pins, by plugin
	// name: the "sha256" of a plugin's entry (pins.go).
	Pins map[string]string `json:"-"`
	// OCI are the plugins the policy names by OCI reference and digest
	// ("<registry>/<repository>@sha256:<hex>"), by plugin name: the "oci"
	// of a plugin's entry (pins.go, spec/oci.md §2).
	OCI map[string]string `json:"-"`
	// TrustedKeys are the public keys (ECDSA P-256, PKIX PEM or its
	// base64 body) whose signatures a plugin may carry, by name; Keys are
	// them parsed (signing.go).
	TrustedKeys map[string]string           `json:"trusted_keys,omitempty"`
	Keys        map[string]*ecdsa.PublicKey `json:"-"`
	// RequireSignatures refuses a plugin from the plugins directory or a
	// registry unless one of its signatures verifies with a trusted key
	// (lockdown requires them whenever there are trusted keys).
	RequireSignatures bool `json:"require_signatures,omitempty"`
	// Tenants are the clients of a multi-tenant host, by name
	// (spec/tenants.md; tenants.go). Empty: the single-tenant form.
	Tenants map[string]Tenant `json:"tenants,omitempty"`
	// Hooks run around every tenant's tool calls, in order, before the
	// tenant's own (spec/hooks.md; hooks.go).
	Hooks []Hook `json:"hooks,omitempty"`
	// MachineTools are Machine Mode command-line tools published as MCP
	// tools (spec/machine-mode.md; machine.go), besides those of
	// --machine-tools; reloaded with the policy.
	MachineTools map[string]MachineTool `json:"machine_tools,omitempty"`
	// RawUpstreams is the "upstreams" object as written; Upstreams its
	// entries in written order (upstreams.go), read at start.
	RawUpstreams json.RawMessage  `json:"upstreams,omitempty"`
	Upstreams    []UpstreamServer `json:"-"`
}

// OperatorLimits cap and default the per-call limits.
type OperatorLimits struct {
	// Timeout is the default per-call deadline, and MaxTimeout the most a
	// manifest may ask for.
	DefaultTimeoutMs int64 `json:"default_timeout_ms,omitempty"`
	MaxTimeoutMs     int64 `json:"max_timeout_ms,omitempty"`
	// Memory per instance, in MiB.
	DefaultMemoryMiB int `json:"default_memory_mib,omitempty"`
	MaxMemoryMiB     int `json:"max_memory_mib,omitempty"`
	// Result size cap in bytes.
	DefaultMaxResultBytes int64 `json:"default_max_result_bytes,omitempty"`
	MaxResultBytes        int64 `json:"max_result_bytes,omitempty"`
	// Instances per plugin and owner.
	MaxInstances int `json:"max_instances,omitempty"`
	// MaxFuel caps a manifest's limits.fuel (0: no cap on what it asks).
	// DefaultFuel meters plugins that ask for none (0: unmetered).
	DefaultFuel int64 `json:"default_fuel,omitempty"`
	MaxFuel     int64 `json:"max_fuel,omitempty"`
	// Tasks (the MCP tasks extension): a task's deadline unless the
	// client asks for another, and the most it may ask for; how many
	// unfinished tasks one owner may have; how long a task-capable call
	// runs as a plain request before it becomes a task; how long a task
	// is kept past its deadline. 0: the host's defaults (30 min, 2 h, 16,
	// 500 ms, 10 min).
	DefaultTaskDeadlineMs int64 `json:"default_task_deadline_ms,omitempty"`
	MaxTaskDeadlineMs     int64 `json:"max_task_deadline_ms,omitempty"`
	MaxTasksPerOwner      int   `json:"max_tasks_per_owner,omitempty"`
	TaskGraceMs           int64 `json:"task_grace_ms,omitempty"`
	TaskRetentionMs       int64 `json:"task_retention_ms,omitempty"`
}

// wasmMaxMemoryMiB is all a 32-bit wasm memory can address (65536 pages).
const wasmMaxMemoryMiB = 4096

// Default operator limits.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxTimeout     = 10 * time.Minute
	DefaultMemoryMiB      = 256
	DefaultMaxMemoryMiB   = 1024
	DefaultMaxResultBytes = 16 << 20
	DefaultMaxResultCap   = 64 << 20
	DefaultMaxInstances   = 16
)

// ParsePolicy decodes an operator policy strictly.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	data, pins, refs, err := splitPins(data)
	if err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if err := StrictUnmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	p.Pins, p.OCI = pins, refs
	if err := p.parseKeys(); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	for name, c := range p.Plugins {
		if err := validateCapabilities(c); err != nil {
			return nil, fmt.Errorf("invalid policy: plugin %s: %w", name, err)
		}
	}
	if p.Default != nil {
		if err := validateCapabilities(*p.Default); err != nil {
			return nil, fmt.Errorf("invalid policy: default: %w", err)
		}
	}
	if err := ValidateTenants(p.Tenants); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if err := ValidateHooks(p.Hooks); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if err := ValidateMachineTools(p.MachineTools); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if p.Upstreams, err = ParseUpstreams(p.RawUpstreams, p.Tenants); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if len(p.RawUpstreams) > 0 {
		// as json.Marshal writes it, so that a policy re-encodes to itself
		p.RawUpstreams, _ = json.Marshal(p.RawUpstreams)
	}
	for name, t := range p.Tenants {
		t.refusedUpstreams = nil
		for _, s := range p.Upstreams {
			if !s.UpstreamTenantAllowed(name) {
				t.refusedUpstreams = append(t.refusedUpstreams, s.Name)
			}
		}
		p.Tenants[name] = t
	}
	return &p, nil
}

// Env gives the values of the scope path variables.
type Env struct {
	Home      string
	Tmp       string
	Workspace string // empty: no workspace restriction
}

// SandboxRoots are what $SANDBOX means: the workspace if set, else /tmp and
// the home directory. Values that are not absolute paths are left out (a
// workspace that is not absolute leaves nothing).
func (e Env) SandboxRoots() []string {
	if e.Workspace != "" {
		if !filepath.IsAbs(e.Workspace) {
			return nil
		}
		return []string{filepath.Clean(e.Workspace)}
	}
	var roots []string
	if filepath.IsAbs(e.Tmp) {
		roots = append(roots, filepath.Clean(e.Tmp))
	}
	if filepath.IsAbs(e.Home) && (len(roots) == 0 || !pathx.Within(e.Home, roots[0])) {
		roots = append(roots, filepath.Clean(e.Home))
	}
	return roots
}

// Resolve expands a scope path into absolute, cleaned paths. A variable
// whose value is empty or not absolute, an unknown variable and a relative
// path resolve to nothing.
func (e Env) Resolve(p string) []string {
	isVar := func(v string) bool { return p == v || strings.HasPrefix(p, v+"/") }
	var base []string
	var rest string
	switch {
	case isVar("$SANDBOX"):
		base, rest = e.SandboxRoots(), p[len("$SANDBOX"):]
	case isVar("$HOME"):
		base, rest = []string{e.Home}, p[len("$HOME"):]
	case isVar("$TMP"):
		base, rest = []string{e.Tmp}, p[len("$TMP"):]
	case isVar("$WORKSPACE"):
		base, rest = []string{e.Workspace}, p[len("$WORKSPACE"):]
	case filepath.IsAbs(p):
		return []string{filepath.Clean(p)}
	default:
		return nil
	}
	out := make([]string, 0, len(base))
	for _, b := range base {
		if !filepath.IsAbs(b) {
			continue
		}
		out = append(out, filepath.Clean(b+"/"+rest))
	}
	return out
}

// Root is a granted directory tree.
type Root struct {
	Path     string // absolute, cleaned
	Writable bool
}

// Grant is what one plugin is actually given: the intersection of what its
// manifest requests and what the policy allows, with variables resolved.
type Grant struct {
	families map[abi.Family]bool
	// FileRoots are the trees the files family may touch.
	FileRoots []Root
	// Commands the process family may run ("*" = any), and CwdRoots where.
	Commands []string
	CwdRoots []string
	Shell    bool
	// Tools: spawned programs may call the calling tenant's tools.
	Tools bool
	// StateMaxBytes bounds state per owner.
	StateMaxBytes int64
	// CDPMethods are the CDP method patterns the cdp family may send
	// (MethodAllowed), and CDPNewTargets whether it may open and close
	// targets.
	CDPMethods    []string
	CDPNewTargets bool
	// UpstreamServers are the upstream servers the upstream family may
	// reach, by name.
	UpstreamServers []string
	// HTTPHosts are the host name patterns the http family may reach
	// (HostAllowed).
	HTTPHosts []string
	// Per-call limits.
	Timeout        time.Duration
	MemoryPages    uint32
	MaxResultBytes int64
	MaxInstances   int
	// Fuel per call on engines that meter it; 0 is unmetered.
	Fuel int64
}

// Has reports whether family f is granted (and so linked).
func (g *Grant) Has(f abi.Family) bool { return g.families[f] }

// GrantedFamilies lists the granted families in stable order.
func (g *Grant) GrantedFamilies() []abi.Family {
	var out []abi.Family
	for _, f := range abi.Families {
		if g.families[f] {
			out = append(out, f)
		}
	}
	return out
}

// Allow returns the grant of m under policy p in environment env.
func (p *Policy) Allow(m *abi.Manifest, env Env) *Grant {
	g := &Grant{families: map[abi.Family]bool{}}
	var allowed *abi.Capabilities
	if c, ok := p.Plugins[m.Name]; ok {
		allowed = &c
	} else if p.Default != nil {
		allowed = p.Default
	}
	if allowed != nil {
		for _, r := range grantRules {
			if m.Capabilities.Has(r.family) && allowed.Has(r.family) {
				g.families[r.family] = r.grant(g, m.Capabilities, *allowed, env)
			}
		}
	}
	ol := p.Limits
	ms := capInt(m.Limits.TimeoutMs, ol.DefaultTimeoutMs, ol.MaxTimeoutMs,
		DefaultTimeout.Milliseconds(), DefaultMaxTimeout.Milliseconds())
	g.Timeout = time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	mib := capInt(int64(m.Limits.MemoryMiB), int64(ol.DefaultMemoryMiB), int64(ol.MaxMemoryMiB), DefaultMemoryMiB, DefaultMaxMemoryMiB)
	g.MemoryPages = uint32(min(mib, wasmMaxMemoryMiB) * 16) // 64 KiB pages
	g.MaxResultBytes = capInt(m.Limits.MaxResultBytes, ol.DefaultMaxResultBytes, ol.MaxResultBytes, DefaultMaxResultBytes, DefaultMaxResultCap)
	g.Fuel = m.Limits.Fuel
	if g.Fuel <= 0 {
		g.Fuel = ol.DefaultFuel
	}
	if ol.MaxFuel > 0 && (g.Fuel <= 0 || g.Fuel > ol.MaxFuel) {
		g.Fuel = ol.MaxFuel
	}
	g.MaxInstances = int(capInt(int64(m.Limits.MaxInstances), int64(ol.MaxInstances), int64(ol.MaxInstances), DefaultMaxInstances, DefaultMaxInstances))
	return g
}

// grantRules holds each gated family's grant rule, in abi.Families order:
// given a request and an allowance that both name the family, it fills
// the family's part of the grant and reports whether anything is left (an
// empty intersection grants nothing). Adding a family is its scope type in
// sdk/abi and one rule here; TestGrantRulesCoverFamilies fails until both
// exist.
var grantRules = []struct {
	family abi.Family
	grant  func(g *Grant, req, allowed abi.Capabilities, env Env) bool
}{
	{abi.FamilyFiles, func(g *Grant, req, allowed abi.Capabilities, env Env) bool {
		g.FileRoots = intersectPaths(req.Files.Paths, allowed.Files.Paths, env)
		return len(g.FileRoots) > 0
	}},
	{abi.FamilyProcess, func(g *Grant, req, allowed abi.Capabilities, env Env) bool {
		g.Commands = intersectCommands(req.Process.Commands, allowed.Process.Commands)
		reqCwd := req.Process.Cwd
		if len(reqCwd) == 0 {
			reqCwd = []string{"$SANDBOX"}
		}
		allowCwd := allowed.Process.Cwd
		if len(allowCwd) == 0 {
			allowCwd = []string{"$SANDBOX"}
		}
		for _, r := range intersectPaths(asRW(reqCwd), asRW(allowCwd), env) {
			g.CwdRoots = append(g.CwdRoots, r.Path)
		}
		g.Shell = req.Process.Shell && allowed.Process.Shell
		g.Tools = req.Process.Tools && allowed.Process.Tools
		return len(g.Commands) > 0 && len(g.CwdRoots) > 0
	}},
	{abi.FamilyState, func(g *Grant, req, allowed abi.Capabilities, _ Env) bool {
		g.StateMaxBytes = minPos(req.State.MaxBytes, allowed.State.MaxBytes, 1<<20)
		return true
	}},
	{abi.FamilyCDP, func(g *Grant, req, allowed abi.Capabilities, _ Env) bool {
		g.CDPMethods = intersectPatterns(req.CDP.Methods, allowed.CDP.Methods)
		g.CDPNewTargets = req.CDP.NewTargets && allowed.CDP.NewTargets
		return len(g.CDPMethods) > 0
	}},
	{abi.FamilyUpstream, func(g *Grant, req, allowed abi.Capabilities, _ Env) bool {
		g.UpstreamServers = intersectCommands(req.Upstream.Servers, allowed.Upstream.Servers)
		return len(g.UpstreamServers) > 0
	}},
	{abi.FamilyHTTP, func(g *Grant, req, allowed abi.Capabilities, _ Env) bool {
		g.HTTPHosts = intersectPatterns(lower(req.HTTP.Hosts), lower(allowed.HTTP.Hosts))
		return len(g.HTTPHosts) > 0
	}},
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// HostAllowed reports whether the http family may send a request to host
// (a host name without port, compared case-insensitively).
func (g *Grant) HostAllowed(host string) bool {
	host = strings.ToLower(host)
	for _, p := range g.HTTPHosts {
		if matchPattern(p, host) {
			return true
		}
	}
	return false
}

// capInt picks the asked value (or the default) and caps it.
func capInt(ask, def, max, fallbackDef, fallbackMax int64) int64 {
	if def <= 0 {
		def = fallbackDef
	}
	if max <= 0 {
		max = fallbackMax
	}
	v := ask
	if v <= 0 {
		v = def
	}
	if v > max {
		v = max
	}
	return v
}

func minPos(a, b, def int64) int64 {
	switch {
	case a <= 0 && b <= 0:
		return def
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

func asRW(paths []string) []abi.PathScope {
	out := make([]abi.PathScope, len(paths))
	for i, p := range paths {
		out[i] = abi.PathScope{Path: p, Mode: abi.ReadWrite}
	}
	return out
}

func intersectPaths(req, allow []abi.PathScope, env Env) []Root {
	var out []Root
	add := func(path string, w bool) {
		for i := range out {
			if out[i].Path == path {
				out[i].Writable = out[i].Writable || w
				return
			}
		}
		out = append(out, Root{Path: path, Writable: w})
	}
	for _, r := range req {
		for _, rp := range env.Resolve(r.Path) {
			for _, a := range allow {
				for _, ap := range env.Resolve(a.Path) {
					w := r.Mode == abi.ReadWrite && a.Mode == abi.ReadWrite
					switch {
					case pathx.Within(rp, ap):
						add(rp, w)
					case pathx.Within(ap, rp):
						add(ap, w)
					}
				}
			}
		}
	}
	return out
}

func intersectCommands(req, allow []string) []string {
	if slices.Contains(allow, "*") {
		return slices.Clone(req)
	}
	if slices.Contains(req, "*") {
		return slices.Clone(allow)
	}
	var out []string
	for _, c := range req {
		if slices.Contains(allow, c) {
			out = append(out, c)
		}
	}
	return out
}

// MethodAllowed reports whether the cdp family may send method.
func (g *Grant) MethodAllowed(method string) bool {
	for _, p := range g.CDPMethods {
		if matchPattern(p, method) {
			return true
		}
	}
	return false
}

// UpstreamAllowed reports whether the upstream family may reach server.
func (g *Grant) UpstreamAllowed(server string) bool {
	return slices.Contains(g.UpstreamServers, server) || slices.Contains(g.UpstreamServers, "*")
}

// matchPattern reports whether s matches pattern p, where '*' matches any
// run of characters (including none) and every other character itself. It
// backtracks only to the last star, so it takes O(len(p)*len(s)) time
// whatever the pattern (a naive recursive match is exponential in the
// number of stars, and both the pattern and the method come from plugins).
func matchPattern(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			mark++
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// intersectPatterns keeps each requested pattern an allowed pattern
// covers, and each allowed pattern a requested one covers (the narrower
// of two wins). A pattern covers another when it matches the other's text
// with its '*' read literally, which is exact for the prefix and suffix
// patterns manifests use.
func intersectPatterns(req, allow []string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, r := range req {
		for _, a := range allow {
			switch {
			case matchPattern(a, r):
				add(r)
			case matchPattern(r, a):
				add(a)
			}
		}
	}
	return out
}
