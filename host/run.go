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
	"github.com/aiodhq/aiod/host/internal/machinetools"
	"github.com/aiodhq/aiod/host/plugin"
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
