package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/aiodhq/aiod/host/audit"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/internal/tracing/reqtrace"
	"github.com/aiodhq/aiod/host/lockdown"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/server"
	"github.com/aiodhq/aiod/host/store/keyring"
	"github.com/aiodhq/aiod/host/tenant"
)

// The protocol layer serves any mcp.Catalog; the plugin registry is the
// one the host wires in.
var _ mcp.Catalog = (*plugin.Registry)(nil)

// tenancy is the host's multi-tenant wiring (spec/tenants.md): the
// tenants of the policy, OAuth, the audit log and the metrics.
type tenancy struct {
	set     *tenant.Set
	oauth   *server.Verifier
	audit   *audit.Log
	metrics *server.Metrics
}

// authConfigured reports whether requests must authenticate: an API key,
// a tenant key in the policy, or OAuth.
func (c TenancyConfig) authConfigured(apiKey string, p *caps.Policy) bool {
	if apiKey != "" || c.OAuthJWKS != "" {
		return true
	}
	for _, t := range p.Tenants {
		if len(t.Keys) > 0 {
			return true
		}
	}
	return false
}

// start makes the OAuth verifier and the audit log from c (the audit log
// required when auditRequired), after checking that the admin key is no
// tenant's key; the tenant set is made before (the registry reads its
// quotas).
func (t *tenancy) start(c TenancyConfig, auditRequired bool, adminKey string, p *caps.Policy) error {
	if c.OAuthIssuer != "" || c.OAuthAudience != "" || c.OAuthJWKS != "" {
		v, err := server.LoadOAuth(server.OAuth{Issuer: c.OAuthIssuer, Audience: c.OAuthAudience, JWKS: c.OAuthJWKS, TenantClaim: c.OAuthTenantClaim})
		if err != nil {
			return err
		}
		t.oauth = v
	}
	if auditRequired && c.AuditLog == "" {
		return errors.New("an audit log is required (--audit-log FILE)")
	}
	if c.AuditLog != "" {
		l, err := audit.Open(c.AuditLog, audit.Options{Required: auditRequired})
		if err != nil {
			return err
		}
		t.audit = l
	} else if adminKey != "" {
		// the admin page's recent calls: the audit stream kept in memory
		t.audit = audit.New(nil, audit.Options{})
	}
	if adminKey != "" {
		for _, tn := range p.Tenants {
			for _, sum := range tn.KeyHashes() {
				if sum == sha256.Sum256([]byte(adminKey)) {
					return fmt.Errorf("the admin key is also a tenant's key: every client holding it would be an operator")
				}
			}
		}
	}
	return nil
}

// wireTenancy starts the tenancy, gives the browser family the tenants'
// browser allow-list (and lockdown, when set, their workspaces) and makes
// the metrics over the host's parts.
func (h *Host) wireTenancy(c TenancyConfig, auditRequired bool, adminKey string, p *caps.Policy, lock *lockdown.Lockdown) error {
	t := &h.tenancy
	h.built(func(context.Context) error { return t.close() })
	if err := t.start(c, auditRequired, adminKey, p); err != nil {
		return err
	}
	set := t.set
	if lock != nil {
		lock.SetWorkspaces(func(owner string) string { return set.ForOwner(owner).Policy.Workspace })
	}
	h.fams.cdp.SetOwnerPolicy(func(owner string) bool { return set.ForOwner(owner).BrowserAllowed() })
	t.metrics = server.NewMetrics(server.MetricsSources{
		WarmInstances: h.warmInstances,
		Sessions:      func() int { return h.mcp.SessionCount() },
		ProcessUnits:  func() int { return h.fams.procs.Sessions() },
		LoadErrors:    func() int { return len(h.reg.Catalog().LoadErrors()) },
		Browser:       func(ctx context.Context) bool { return h.browser.Status(ctx).Status == "ready" },
		Upstreams:     h.upstreamsUp,
	})
	return nil
}

// middleware is the chain every MCP request passes: the tenant first (it
// puts the tenant in the context the others read), then the audit log and
// the metrics, and innermost the allow-list filter of the lists (so the
// audit's result bytes are what the tenant was sent), which keeps in
// tools/list what listed reports (the tool search tools).
func (t *tenancy) middleware(listed func(ctx context.Context, name string) bool) []mcp.Middleware {
	mw := []mcp.Middleware{t.set.Middleware()}
	if tracing.On() {
		mw = append(mw, reqtrace.Middleware)
	}
	if t.audit != nil {
		mw = append(mw, t.audit.Middleware())
	}
	return append(mw, t.metrics.Middleware(), t.set.FilterExcept(listed))
}

func (t *tenancy) serverOptions(o *server.Options) {
	o.Tenants, o.OAuth, o.Audit, o.Metrics = t.set, t.oauth, t.audit, t.metrics
}

// update takes the tenants of a reloaded policy.
func (t *tenancy) update(p *caps.Policy, apiKey string) {
	if t.set != nil {
		t.set.Update(p.Tenants, apiKey)
	}
}

// instances is the owner's instances quota (0: none; plugin.Options).
func (t *tenancy) instances(owner string) int {
	if t.set == nil {
		return 0
	}
	return t.set.ForOwner(owner).Quotas().Instances
}

// sessions is the owner's sessions quota (0: none; mcp.Options).
func (t *tenancy) sessions(owner string) int {
	if t.set == nil {
		return 0
	}
	return t.set.ForOwner(owner).Quotas().Sessions
}

// close closes the audit log (none: nothing).
func (t *tenancy) close() error { return t.audit.Close() }

// warmInstances counts the idle warm instances of each tenant.
func (h *Host) warmInstances() map[string]int {
	out := map[string]int{}
	for _, p := range h.reg.Catalog().Plugins {
		for _, n := range h.tenancy.set.Names() {
			if k := p.IdleInstances(n); k > 0 {
				out[n] += k
			}
		}
	}
	return out
}

func (h *Host) upstreamsUp(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	if h.ups == nil {
		return out
	}
	for _, s := range h.ups.Status(ctx) {
		out[s.Name] = s.Reachable
	}
	return out
}

// taskOptions are the tasks extension's bounds from the operator's limits
// (zero fields: the protocol layer's defaults). Read at start-up.
func taskOptions(l caps.OperatorLimits) mcp.TaskOptions {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return mcp.TaskOptions{Grace: ms(l.TaskGraceMs), Deadline: ms(l.DefaultTaskDeadlineMs), MaxDeadline: ms(l.MaxTaskDeadlineMs),
		Retention: ms(l.TaskRetentionMs), MaxPerOwner: l.MaxTasksPerOwner}
}

// setStateKeys gives the protocol layer the replicas' shared requestState
// keys: the state key file's, else, with a store that outlives the process
// (--data-dir, --store), the key ring in it, read again every minute
// (host/store/keyring), else none (it keeps its own random key).
func (h *Host) setStateKeys(keys [][]byte) error {
	if keys == nil && h.stateKeyFile == "" && h.store != nil && h.store.String() != "memory" {
		return h.keepStoredKeys()
	}
	if keys == nil {
		return nil
	}
	if err := h.mcp.SetStateKeys(keys); err != nil {
		return fmt.Errorf("state key file %s: %w", h.stateKeyFile, err)
	}
	return nil
}

// reloadStateKeys reads the state key file again (a rotation, on SIGHUP or
// any reload); a file that no longer reads keeps the previous keys.
func (h *Host) reloadStateKeys() {
	if h.stateKeyFile == "" {
		return
	}
	keys, err := mcp.ReadStateKeyFile(h.stateKeyFile)
	if err == nil {
		err = h.setStateKeys(keys)
	}
	if err != nil {
		h.log.Error("state key file refused; the previous keys keep applying", "err", err)
		return
	}
	h.log.Info("state keys reloaded", "keys", len(keys))
}

// keepStoredKeys seals and opens requestStates with the store's key ring,
// read now (a store that cannot give it refuses the start) and every
// minute until aiod stops.
func (h *Host) keepStoredKeys() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	keys, err := keyring.Keys(ctx, h.store, time.Now())
	cancel()
	if err == nil {
		err = h.mcp.SetStateKeys(keys)
	}
	if err != nil {
		return fmt.Errorf("requestState keys: %w (or give --state-key-file)", err)
	}
	h.log.Info("requestState keys from the store's key ring", "store", h.store.String(), "keys", len(keys))
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		keyring.Keep(ctx, h.store, keyring.Refresh, h.mcp.SetStateKeys, func(err error) {
			h.log.Warn("requestState key ring not read; the keys read last keep applying", "err", err)
		})
	}()
	h.built(func(context.Context) error { cancel(); <-done; return nil })
	return nil
}
