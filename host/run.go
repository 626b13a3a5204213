package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hooks"
	"github.com/aiodhq/aiod/host/internal/gcfloor"
	"github.com/aiodhq/aiod/host/internal/machinetools"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/server"
	"github.com/aiodhq/aiod/host/upstream"
)

// Run is the daemon: it listens on Config.Host:Config.Port, serves MCP, and
// until ctx ends or SIGINT/SIGTERM arrives (then it shuts down gracefully;
// a second signal kills the process) reloads the plugins on SIGHUP. With
// Config.PprofAddr it also serves Go's profiler on that loopback address.
// Run does not Close the host.
func (h *Host) Run(ctx context.Context) error {
	// Signals are watched before the port answers, so that a client that
	// has seen the server up can rely on SIGHUP and SIGTERM being handled.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the next SIGINT/SIGTERM kills the process
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reloads := make(chan struct{})
	go func() {
		defer close(reloads)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				h.log.Info("SIGHUP: reloading plugins")
				h.Reload(ctx)
			}
		}
	}()
	defer func() {
		cancel()
		<-reloads
	}()

	if h.gcFloorMiB > 0 {
		defer gcfloor.Start(uint64(h.gcFloorMiB) << 20).Stop()
	}
	if h.pprofAddr != "" {
		shutdown, err := h.servePprof(h.pprofAddr)
		if err != nil {
			return err
		}
		defer shutdown()
	}
	ln, err := net.Listen("tcp", h.Addr())
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return h.Serve(ctx, ln)
}

// servePprof serves Go's profiler on addr (loopback, checked by New) on a
// mux of its own, and returns the function that stops it.
func (h *Host) servePprof(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("profiler: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Warn("profiler stopped", "err", err)
		}
	}()
	h.log.Info("profiler listening", "addr", ln.Addr().String())
	return func() {
		srv.Close()
		<-done
	}, nil
}

// DefaultWatchDebounce is Config.WatchDebounce when zero: how long the
// plugins directory must be quiet after a change before it is reloaded
// (plugin.Watcher).
const DefaultWatchDebounce = plugin.DefaultWatchDebounce

// DefaultGCHeapFloorMiB is cmd/aiod's --gc-heap-floor (RATIONALE.md, "The
// collector's heap floor").
const DefaultGCHeapFloorMiB = 16

// ReloadResult is what one reload did: the registry's report, and whether
// the policy file was read anew or kept because it did not parse.
type ReloadResult struct {
	*plugin.Report
	// PolicyError is why the policy file was not taken (the previous
	// policy keeps applying); empty when it was, or there is none.
	PolicyError string `json:"policy_error"`
}

// Reload rebuilds the plugin catalogue from the built-ins and the plugins
// directory (what SIGHUP, the watcher and POST /admin/reload do), after
// reading the policy file again. The new catalogue is swapped in
// atomically; a plugin whose new version fails to load keeps its previous
// version serving, and the load errors are returned joined. A policy file
// that no longer reads or parses is logged and the previous policy kept.
func (h *Host) Reload(ctx context.Context) error {
	_, err := h.reload(ctx)
	return err
}

func (h *Host) reload(ctx context.Context) (*ReloadResult, error) {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	res := &ReloadResult{}
	if h.policyFile != "" {
		p, err := readPolicy(h.policyFile)
		if err != nil {
			h.log.Error("policy file refused; the previous policy keeps applying", "err", err)
			res.PolicyError = err.Error()
		} else {
			refuseRemovedUpstreams(p, h.policyUps)
			h.policy.Store(p)
			h.tenancy.update(p, h.apiKey)
			h.hooks.SetHooks(p.Hooks)
		}
		h.policyErr.Store(&res.PolicyError)
	}
	// the registrations again (the policy's, the programs' pins, the
	// named variables), whatever else changed: discovery runs again in
	// the reload
	p := h.policy.Load()
	ms := h.machine.Setup(p)
	h.reg.SetPolicy(p, machinetools.WithPolicy(builtinPolicy(p), ms))
	h.reg.SetConfigurations(ms.Configurations())
	h.reg.SetRemotes(h.oci.Remotes(ctx, p))
	h.reloadStateKeys()
	rep, err := h.reg.ReloadReport(ctx)
	res.Report = rep
	if err != nil {
		h.log.Warn("reload finished with errors", "err", err)
	} else {
		h.log.Info("reload done", "tools", len(h.reg.Catalog().Tools))
	}
	return res, err
}

// readPolicy reads and parses the operator's policy file.
func readPolicy(path string) (*caps.Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := caps.ParsePolicy(b)
	if err == nil {
		err = hooks.CheckPolicyFile(path, p)
	}
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// adminReload is POST /admin/reload: the reload's report, with its load
// errors inside it; an error only when no new generation was made.
func (h *Host) adminReload(ctx context.Context) (any, error) {
	res, err := h.reload(ctx)
	if res.Report == nil {
		return res, err
	}
	return res, nil
}

// adminPlugins is GET /admin/plugins.
func (h *Host) adminPlugins() any {
	cat := h.reg.Catalog()
	type entry struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		SHA256     string   `json:"sha256"`
		Builtin    bool     `json:"builtin"`
		Source     string   `json:"source"`
		SignedBy   string   `json:"signed_by,omitempty"`
		Tools      []string `json:"tools"`
		Instances  int      `json:"idle_instances"`
		Dormant    bool     `json:"dormant"`
		Families   []string `json:"families"`
		LoadError  string   `json:"last_load_error"`
		Generation uint64   `json:"generation"`
		// Configuration is what a configured plugin refused of its
		// configuration, by name (the Machine Mode tools refused)
		Configuration map[string]string `json:"configuration_refused,omitempty"`
	}
	out := []entry{}
	for _, p := range cat.Plugins {
		e := entry{Name: p.Manifest.Name, Version: p.Manifest.Version, SHA256: p.Digest, Builtin: p.Builtin, SignedBy: p.Signer,
			Source: p.Source, Tools: []string{}, Families: []string{}, Instances: p.IdleInstances(plugin.DefaultOwner),
			Dormant: p.Dormant(), LoadError: cat.LoadError(p.Manifest.Name), Generation: cat.Generation}
		for _, t := range p.Tools() {
			e.Tools = append(e.Tools, t.Name)
		}
		for _, r := range p.Refused() {
			if e.Configuration == nil {
				e.Configuration = map[string]string{}
			}
			e.Configuration[r.Name] = r.Reason
		}
		for _, f := range p.Grant.GrantedFamilies() {
			e.Families = append(e.Families, string(f))
		}
		out = append(out, e)
	}
	policyErr := ""
	if p := h.policyErr.Load(); p != nil {
		policyErr = *p
	}
	return map[string]any{"generation": cat.Generation, "plugins": out, "refused": cat.LoadErrors(), "policy_error": policyErr}
}

// watchReload is the reload the watcher runs: the registry's report (nil
// when no new generation was made) decides its retries.
func (h *Host) watchReload(ctx context.Context) (*plugin.Report, error) {
	res, err := h.reload(ctx)
	if res == nil {
		return nil, err
	}
	return res.Report, err
}

// The operators' page and API (spec/admin.md): the views of the host's
// parts that the admin routes serve.

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
// signature is how the admin page shows a plugin's signature: the
// trusted key whose signature verified (spec/oci.md §3), or "unsigned".
func signature(p *plugin.Plugin) string {
	if p.Signer == "" {
		return "unsigned"
	}
	return "signed by " + p.Signer
}

func (h *Host) adminState() any {
	cat := h.reg.Catalog()
	names := h.tenancy.set.Names()
	warm := map[string]int{}
	plugins := make([]adminPlugin, 0, len(cat.Plugins))
	for _, p := range cat.Plugins {
		e := adminPlugin{Name: p.Manifest.Name, Version: p.Manifest.Version, SHA256: p.Digest, Builtin: p.Builtin,
			Source: p.Source, Engine: h.engName, Signature: signature(p), Dormant: p.Dormant(), Tools: []string{},
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
