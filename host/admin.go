package host

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/server"
	"github.com/aiodhq/aiod/host/upstream"
)

// admin is the operator's API and page over the host's parts
// (spec/admin.md).
func (h *Host) admin(key string) *server.Admin {
	return &server.Admin{Key: key, Reload: h.adminReload, Plugins: h.adminPlugins, State: h.adminState,
		Upstreams: h.adminUpstreams, Accept: h.adminAccept}
}

// adminPlugin is one plugin as the page shows it.
type adminPlugin struct {
	Name      string            `json:"name"`
	Version   string            `json:"version"`
	SHA256    string            `json:"sha256"`
	Builtin   bool              `json:"builtin"`
	Source    string            `json:"source"`
	Engine    string            `json:"engine"`
	Signature string            `json:"signature"`
	Warm      int               `json:"warm"`
	Dormant   bool              `json:"dormant"`
	Tools     []string          `json:"tools"`
	LoadError string            `json:"last_load_error"`
	Refused   map[string]string `json:"configuration_refused,omitempty"`
}

// adminTenant is one tenant with its quotas and their use now.
type adminTenant struct {
	Name         string      `json:"name"`
	Unrestricted bool        `json:"unrestricted"`
	Quotas       caps.Quotas `json:"quotas"`
	InFlight     int         `json:"in_flight"`
	TokensLeft   float64     `json:"tokens_left"`
	Instances    int         `json:"instances"`
	Sessions     int         `json:"sessions"`
	Warm         int         `json:"warm"`
}

// adminCall is one recent call from the audit stream: who, what, how it
// ended; never its arguments (nor their digest).
type adminCall struct {
	Time        time.Time `json:"time"`
	Tenant      string    `json:"tenant"`
	Method      string    `json:"method"`
	Tool        string    `json:"tool"`
	Outcome     string    `json:"outcome"`
	Code        int       `json:"code,omitempty"`
	DurationMs  float64   `json:"duration_ms"`
	ResultBytes int       `json:"result_bytes"`
	Quota       string    `json:"quota,omitempty"`
	Via         string    `json:"via,omitempty"`
	Reason      string    `json:"reason,omitempty"`
}

// adminState is GET /admin/state: the plugins, tenants and recent calls.
func (h *Host) adminState() any {
	cat := h.reg.Catalog()
	names := h.tenancy.set.Names()
	warm := map[string]int{}
	plugins := make([]adminPlugin, 0, len(cat.Plugins))
	for _, p := range cat.Plugins {
		e := adminPlugin{Name: p.Manifest.Name, Version: p.Manifest.Version, SHA256: p.Digest, Builtin: p.Builtin,
			Source: p.Source, Engine: h.engName, Signature: "unsigned", Dormant: p.Dormant(), Tools: []string{},
			LoadError: cat.LoadError(p.Manifest.Name)}
		for _, n := range names {
			k := p.IdleInstances(n)
			e.Warm += k
			warm[n] += k
		}
		for _, t := range p.Tools() {
			e.Tools = append(e.Tools, t.Name)
		}
		for _, r := range p.Refused() {
			if e.Refused == nil {
				e.Refused = map[string]string{}
			}
			e.Refused[r.Name] = r.Reason
		}
		plugins = append(plugins, e)
	}
	sessions := h.mcp.SessionsByOwner()
	tenants := make([]adminTenant, 0, len(names))
	for _, n := range names {
		t, ok := h.tenancy.set.Lookup(n)
		if !ok {
			continue
		}
		u := t.Usage()
		tenants = append(tenants, adminTenant{Name: n, Unrestricted: t.Unrestricted, Quotas: t.Quotas(), InFlight: u.InFlight,
			TokensLeft: u.TokensLeft, Instances: h.reg.OwnerInstances(n), Sessions: sessions[n], Warm: warm[n]})
	}
	recent := h.tenancy.audit.Recent()
	calls := make([]adminCall, 0, len(recent))
	for _, e := range recent {
		calls = append(calls, adminCall{Time: e.Time, Tenant: e.Tenant, Method: e.Method, Tool: e.Tool, Outcome: string(e.Outcome),
			Code: e.Code, DurationMs: e.DurationMs, ResultBytes: e.ResultBytes, Quota: e.Quota, Via: e.Via, Reason: e.Reason})
	}
	policyErr := ""
	if p := h.policyErr.Load(); p != nil {
		policyErr = *p
	}
	return map[string]any{"generation": cat.Generation, "engine": h.engName, "plugins": plugins, "refused": cat.LoadErrors(),
		"policy_error": policyErr, "tenants": tenants, "calls": calls}
}

// adminUpstreams is GET /admin/upstreams.
func (h *Host) adminUpstreams(ctx context.Context) any {
	if h.ups == nil {
		return []upstream.ServerReview{}
	}
	return h.ups.Review(ctx)
}

// adminAccept is POST /admin/upstreams/accept.
func (h *Host) adminAccept(ctx context.Context, srv, tool, digest string) error {
	if h.ups == nil {
		return &server.AdminError{Status: http.StatusNotFound, Err: errors.New("no upstream MCP servers are configured")}
	}
	err := h.ups.Accept(ctx, srv, tool, digest)
	switch {
	case err == nil:
		h.log.Info("upstream tool accepted from the admin page", "server", srv, "tool", tool, "digest", digest)
		return nil
	case errors.Is(err, upstream.ErrUnknownServer), errors.Is(err, upstream.ErrNotListed):
		return &server.AdminError{Status: http.StatusNotFound, Err: err}
	case errors.Is(err, upstream.ErrNoPins), errors.Is(err, upstream.ErrDefinitionMoved):
		return &server.AdminError{Status: http.StatusConflict, Err: err}
	}
	return err
}
