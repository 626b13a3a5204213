// Package host is aiod's facade: New builds the engine, the plugin registry,
// the MCP dispatcher and the HTTP server from a Config; Run listens and
// serves it (reloading on SIGHUP, stopping on SIGINT/SIGTERM); Close tears
// it down.
//
//	h, err := host.New(ctx, host.Config{})
//	...
//	defer h.Close(ctx)
//	err = h.Run(ctx)
package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/footprint"
	"github.com/aiodhq/aiod/host/internal/netx"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/server"
	"github.com/aiodhq/aiod/host/skills"
	"github.com/aiodhq/aiod/host/tenant"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Config is everything `aiod start` can set. The zero value is usable: a
// zero field means the owning package's default (DefaultHost, DefaultPort,
// DefaultEngine, plugin.DefaultIdleTimeout, mcp.DefaultMaxSessions,
// mcp.DefaultSessionIdleTimeout).
type Config struct {
	Host       string // default DefaultHost
	Port       int    // default DefaultPort
	PluginsDir string
	CacheDir   string // default <user cache dir>/aiod/wazero; "-" disables the disk cache
	Workspace  string // restricts file operations and process cwd to this directory
	PolicyFile string
	// APIKey, when not empty, is required on every route but /health.
	APIKey               string
	AllowUnauthenticated bool
	// IdleTimeout evicts plugin instances idle this long.
	IdleTimeout time.Duration
	// KeepCompiled keeps every plugin's compiled code in memory
	// (plugin.Options.KeepCompiled); by default a plugin without
	// instances drops it.
	KeepCompiled bool
	// Engine names the WebAssembly engine (one of Engines()).
	Engine string
	// PprofAddr, when set, serves Go's profiler on this loopback address
	// while Run runs (never on the MCP port).
	PprofAddr string
	// MaxSessions and SessionIdleTimeout bound legacy MCP sessions (zero:
	// the mcp package defaults).
	MaxSessions        int
	SessionIdleTimeout time.Duration
	// AllowedHosts and AllowedOrigins extend the DNS-rebinding checks.
	AllowedHosts   []string
	AllowedOrigins []string
	// Watch reloads when the plugins directory, a package in it or the
	// policy file changes (debounced by WatchDebounce, default
	// DefaultWatchDebounce). cmd/aiod turns it on by default.
	Watch         bool
	WatchDebounce time.Duration
	// AdminKey, when not empty, opens the admin API (POST /admin/reload,
	// GET /admin/plugins) to requests that carry it; the API key does not.
	AdminKey string
	// Upstreams are other MCP servers whose tools are published after the
	// plugins' (upstream.ParseServers parses the EXTRA_MCP_SERVERS value);
	// UpstreamListTimeout bounds one upstream's tools/list (zero:
	// upstream.DefaultListTimeout).
	Upstreams           []upstream.Server
	UpstreamListTimeout time.Duration
	// PinUpstreams, when set, is the pin file of the upstream tools: a tool
	// whose definition does not match its pin is withheld until accepted
	// (aiod upstream review --accept; spec/upstream.md).
	PinUpstreams string
	// Browser configures the browser plane (host/browser: attach, launch
	// or off; the zero value attaches to 127.0.0.1:9222). Its Logger
	// defaults to Logger.
	Browser browser.Config
	// Builtins are the embedded built-in plugins; nil for none.
	Builtins fs.FS
	Logger   *slog.Logger
	LockdownConfig
	// TenancyConfig: OAuth, the audit log (config.go; wiring.go).
	TenancyConfig
	// ReplicaConfig: the shared state keys and the replica id (config.go).
	ReplicaConfig
	// PageToolsConfig: the page tools (config.go; pagetools.go).
	PageToolsConfig
}

// Host is a running aiod.
type Host struct {
	cfg     Config
	log     *slog.Logger
	engine  runtime.Engine
	reg     *plugin.Registry
	ups     *upstream.Set // nil without upstreams
	browser *browser.Browser
	fams    *families
	mcp     *mcp.Server
	srv     *server.Server
	watch   *plugin.Watcher
	closed  atomic.Bool
	// reloadMu serializes reloads (SIGHUP, the watcher, the admin API);
	// policyErr is why the policy file was last refused ("" if it was not).
	reloadMu  sync.Mutex
	policyErr atomic.Pointer[string]
	tenancy   tenancy // wiring.go
}

// ErrUnauthenticatedExposure is returned when binding beyond loopback
// without an API key.
var ErrUnauthenticatedExposure = errors.New("refusing to listen on a non-loopback address without an API key")

// New validates cfg and loads the plugins.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.UpstreamListTimeout < 0 {
		return nil, fmt.Errorf("upstream list timeout %s: must not be negative", cfg.UpstreamListTimeout)
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("port %d: not in 1-65535", cfg.Port)
	}
	if cfg.PprofAddr != "" {
		if h, _, err := net.SplitHostPort(cfg.PprofAddr); err != nil || !netx.Loopback(h) {
			return nil, fmt.Errorf("profiler address %q: must be a loopback host:port (127.0.0.1:6060)", cfg.PprofAddr)
		}
	}
	if cfg.AdminKey != "" && cfg.AdminKey == cfg.APIKey {
		return nil, errors.New("the admin key must differ from the API key: every client holding the API key would be an operator")
	}
	stateKeys, err := cfg.stateKeys()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	policy := &caps.Policy{}
	if cfg.PolicyFile != "" {
		p, err := readPolicy(cfg.PolicyFile)
		if err != nil {
			return nil, err
		}
		policy = p
	}
	if !netx.Loopback(cfg.Host) && !authConfigured(cfg, policy) && !cfg.AllowUnauthenticated {
		return nil, fmt.Errorf("%w: %s is reachable from other machines; set --api-key (AIO_API_KEY), tenant keys in the policy or OAuth, or pass --allow-unauthenticated", ErrUnauthenticatedExposure, cfg.Host)
	}
	env, err := sandboxEnv(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	cacheDir := cfg.CacheDir
	if cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			cacheDir = filepath.Join(d, "aiod", "wazero")
		}
	}
	if cacheDir == "-" {
		cacheDir = ""
	}
	if cacheDir != "" {
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("cache dir: %w", err)
		}
	}
	var lock *lockdown
	if cfg.Lockdown {
		if lock, err = startLockdown(&cfg, policy, cacheDir); err != nil {
			return nil, err
		}
		env = lock.env()
	}
	eng, err := newEngine(cfg.Engine, EngineOptions{CacheDir: cacheDir})
	if err != nil {
		return nil, err
	}
	if cfg.Browser.Logger == nil {
		cfg.Browser.Logger = log
	}
	br, err := browser.New(cfg.Browser)
	if err != nil {
		eng.Close(ctx)
		return nil, err
	}
	h := &Host{cfg: cfg, log: log, engine: eng, browser: br}
	// the tenants exist before the registry, whose loaders read their
	// quotas (OwnerInstances) from the start
	h.tenancy.set = tenant.New(policy.Tenants, cfg.APIKey)
	var pins *upstream.Pins
	if cfg.PinUpstreams != "" {
		if pins, err = upstream.LoadPins(cfg.PinUpstreams); err != nil {
			br.Close()
			eng.Close(ctx)
			return nil, err
		}
	}
	if len(cfg.Upstreams) > 0 {
		// Made before the registry (the upstream family needs it); the
		// names it excludes are the registry's, looked up at each use.
		h.ups = newUpstreamSet(cfg.Upstreams, h.pluginTool, pins, cfg)
	}
	fams := newFamilies(log, br, h.ups, lock)
	h.fams = fams
	if lock != nil {
		if err := lock.checkRuntime(ctx, fams.procs); err != nil {
			eng.Close(ctx)
			fams.Close()
			h.closeUpstreams()
			br.Close()
			return nil, err
		}
		lock.log(log, fams.procs)
	}
	if cfg.Builtins == nil {
		log.Warn("this binary has no built-in plugins (build it with `make build`)")
	}
	if cfg.PluginsDir != "" {
		if st, err := os.Stat(cfg.PluginsDir); err != nil || !st.IsDir() {
			eng.Close(ctx)
			fams.Close()
			h.closeUpstreams()
			br.Close()
			return nil, fmt.Errorf("plugins dir %s: not a readable directory", cfg.PluginsDir)
		}
	}
	reg, err := plugin.New(ctx, plugin.Options{
		Engine:        eng,
		Policy:        policy,
		BuiltinPolicy: builtinPolicy(policy),
		Env:           env,
		Families:      fams.forGrant,
		Builtins:      cfg.PageToolsConfig.builtins(cfg.Builtins, cfg.Browser.Mode),
		Dir:           cfg.PluginsDir,
		IdleTimeout:   cfg.IdleTimeout,
		KeepCompiled:  cfg.KeepCompiled,
		Rested:        footprint.ReleaseRested,
		Logger:        log,
		// list at once from the manifests, compile in the background
		Background:     true,
		RequirePins:    cfg.Lockdown,
		OwnerInstances: h.tenancy.instances,
	})
	if err != nil && reg == nil {
		eng.Close(ctx)
		fams.Close()
		h.closeUpstreams()
		br.Close()
		return nil, err
	}
	h.reg = reg
	go footprint.AfterLoad(reg)
	var served mcp.Catalog = reg
	if h.ups != nil {
		served = &catalog{Registry: reg, ups: h.ups}
	}
	if err := h.startTenancy(policy); err != nil {
		h.Close(ctx)
		return nil, err
	}
	if lock != nil {
		set := h.tenancy.set
		ws := func(owner string) string { return set.ForOwner(owner).Policy.Workspace }
		lock.workspace.Store(&ws)
	}
	h.mcp = mcp.NewServer(h.tenancy.set.Catalog(served), mcp.Options{Info: mcp.Implementation{Name: "aiod", Version: Version}, Logger: log,
		MaxSessions: cfg.MaxSessions, SessionIdleTimeout: cfg.SessionIdleTimeout, Middleware: h.tenancy.middleware(),
		SessionsPerOwner: h.tenancy.sessions, Tasks: taskOptions(policy.Limits), Skills: skills.FromEnv(os.Getenv),
		ReplicaID: cfg.ReplicaID})
	if err := h.setStateKeys(stateKeys); err != nil {
		h.Close(ctx)
		return nil, err
	}
	srvOpts := server.Options{MCP: h.mcp, Logger: log, APIKey: cfg.APIKey, Loopback: netx.Loopback(cfg.Host),
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, Capabilities: h.capabilities,
		Admin: &server.Admin{Key: cfg.AdminKey, Reload: h.adminReload, Plugins: h.adminPlugins}, Status: status(env, cacheDir, cfg.Browser, h.fams.procs, br)}
	h.tenancy.serverOptions(&srvOpts)
	h.srv = server.New(srvOpts)
	if cfg.Watch && cfg.PluginsDir != "" {
		w, err := plugin.Watch(plugin.WatchOptions{Dir: cfg.PluginsDir, Policy: cfg.PolicyFile, Debounce: cfg.WatchDebounce, Reload: h.watchReload, Logger: log})
		if err != nil {
			h.Close(ctx)
			return nil, err
		}
		h.watch = w
	}
	return h, nil
}

// Registry exposes the plugin registry (reload, catalogue).
func (h *Host) Registry() *plugin.Registry { return h.reg }

// Server exposes the HTTP server.
func (h *Host) Server() *server.Server { return h.srv }

// Addr is host:port from the config.
func (h *Host) Addr() string { return net.JoinHostPort(h.cfg.Host, strconv.Itoa(h.cfg.Port)) }

// Serve serves on ln until ctx ends, then shuts down gracefully. It handles
// no signals (Run does).
func (h *Host) Serve(ctx context.Context, ln net.Listener) error {
	h.log.Info("aiod listening", "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "version", Version)
	errc := make(chan error, 1)
	go func() { errc <- h.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.srv.Shutdown(sctx)
}

// Close ends the upstream sessions and releases plugins, processes and the
// engine. Idempotent.
func (h *Host) Close(ctx context.Context) error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if h.watch != nil {
		errs = append(errs, h.watch.Close())
	}
	h.mcp.Close()
	errs = append(errs, h.closeUpstreams(), h.tenancy.close())
	if h.reg != nil {
		errs = append(errs, h.reg.Close(ctx))
	}
	errs = append(errs, h.fams.Close(), h.browser.Close(), h.engine.Close(ctx))
	return errors.Join(errs...)
}

func sandboxEnv(workspace string) (caps.Env, error) {
	home, _ := os.UserHomeDir()
	env := caps.Env{Home: home, Tmp: os.TempDir()}
	if workspace != "" {
		abs, err := filepath.Abs(workspace)
		if err != nil {
			return env, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		st, err := os.Stat(abs)
		if err != nil || !st.IsDir() {
			return env, fmt.Errorf("workspace %s: not a directory", workspace)
		}
		env.Workspace = abs
	}
	return env, nil
}

// capabilities is GET /v1/capabilities: which planes and host function
// families this host can serve, and the plugins' surface.
func (h *Host) capabilities() any {
	cat := h.reg.Catalog()
	granted := map[string]bool{}
	for _, p := range cat.Plugins {
		for _, f := range p.Grant.GrantedFamilies() {
			granted[string(f)] = true
		}
	}
	fams := map[string]any{}
	for _, f := range abi.Families {
		st := "absent"
		if granted[string(f)] {
			st = "ready"
		}
		missing := []string{}
		if !implemented(f) {
			st, missing = "absent", []string{"not implemented by this host"}
		}
		entry := map[string]any{"status": st, "missing": missing, "warnings": []string{}}
		if f == abi.FamilyProcess {
			// How process counts and memory are contained: the kernel's
			// cgroup limits, or the /proc watchdog fallback (and why).
			c := h.fams.procs.Containment()
			entry["containment"] = c
			if c.Mode == proc.ModeWatchdog {
				entry["warnings"] = []string{"process limits are enforced by a watchdog, not by the kernel: " + c.Reason}
			}
		}
		fams[string(f)] = entry
	}
	// Each upstream MCP server as a tools/list sees it now (no round trip
	// with fresh caches, at most the list timeout otherwise).
	ups := []upstream.Status{}
	tools := len(cat.Tools)
	if h.ups != nil {
		ups = h.ups.Status(context.Background())
		for _, u := range ups {
			tools += u.Tools
		}
	}
	// The browser plane: ready, or absent saying what is missing (aiod
	// serves without it; the browser tools then answer isError).
	bctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return map[string]any{
		"browser": h.browser.Status(bctx),
		"mcp": map[string]any{"status": "ready", "protocolVersions": mcp.SupportedVersions,
			"tools": tools, "prompts": len(cat.Prompts), "resources": len(cat.Resources), "resourceTemplates": len(cat.Templates),
			"sessions": h.mcp.SessionCount(), "loading": h.reg.Loading(), "upstreams": ups},
		"families": fams,
		"plugins":  len(cat.Plugins),
	}
}
