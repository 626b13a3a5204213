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
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/doctor"
	"github.com/aiodhq/aiod/host/hooks"
	"github.com/aiodhq/aiod/host/hostfn/process"
	"github.com/aiodhq/aiod/host/internal/codetools"
	"github.com/aiodhq/aiod/host/internal/composite"
	"github.com/aiodhq/aiod/host/internal/footprint"
	"github.com/aiodhq/aiod/host/internal/machinetools"
	"github.com/aiodhq/aiod/host/internal/netx"
	"github.com/aiodhq/aiod/host/internal/ociplugins"
	"github.com/aiodhq/aiod/host/internal/toolsearch"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/host/internal/tracing/otlp"
	"github.com/aiodhq/aiod/host/lockdown"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/oci/ocireg"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/server"
	"github.com/aiodhq/aiod/host/skills"
	"github.com/aiodhq/aiod/host/store"
	"github.com/aiodhq/aiod/host/tenant"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/host/upstream/oauth"
	"github.com/aiodhq/aiod/sdk/abi"

	"github.com/aiodhq/aiod/host/store/bolt"
	"github.com/aiodhq/aiod/host/store/redis"
)

// Host is a running aiod.
type Host struct {
	log *slog.Logger
	// what Addr, Run and the reloads read of the configuration, taken
	// from it once by New
	addr, pprofAddr                  string
	gcFloorMiB                       int
	policyFile, apiKey, stateKeyFile string
	drainDelay, drainTimeout         time.Duration

	engine  runtime.Engine
	engName string // engine's name, as the admin page shows it
	browser *browser.Browser
	ups     *upstream.Set // nil without upstreams
	fams    *families
	store   store.Store // plugin state and task records (provisionStore)
	machine *machinetools.Tools
	reg     *plugin.Registry
	mcp     *mcp.Server
	srv     *server.Server
	watch   *plugin.Watcher
	tenancy tenancy // tenancy.go
	hooks   *hooks.Chain
	// teardown closes the parts built so far, in the order they were
	// built; Close runs it in reverse (built).
	teardown []func(context.Context) error
	closed   atomic.Bool
	// reloadMu serializes reloads (SIGHUP, the watcher, the admin API);
	// policyErr is why the policy file was last refused ("" if it was not).
	reloadMu  sync.Mutex
	policyErr atomic.Pointer[string]
	// policy is the operator's policy in force (the file's, as last read
	// and taken)
	policy atomic.Pointer[caps.Policy]
	// upsStdio tunes the policy's command servers, and policyUps names
	// the policy's servers registered at start (upstreams.go).
	upsStdio  func(*upstream.Options)
	policyUps []string
	// oci fetches the plugins the policy names by OCI reference
	oci *ociplugins.Fetcher
}

// ErrUnauthenticatedExposure is returned when binding beyond loopback
// without an API key.
var ErrUnauthenticatedExposure = errors.New("refusing to listen on a non-loopback address without an API key")

// New validates cfg and loads the plugins. It reads the configuration
// once, on the way down: Config.plan validates it and reads what every
// part depends on (the policy, the environment, the cache directory,
// lockdown); then each part is provisioned from its own section, in order.
// A step that fails tears down what was built, in reverse (Close).
func New(ctx context.Context, cfg Config) (_ *Host, err error) {
	cfg, p, err := cfg.plan()
	if err != nil {
		return nil, err
	}
	h := &Host{log: cfg.Logger, addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), pprofAddr: cfg.PprofAddr, gcFloorMiB: cfg.GCHeapFloorMiB,
		policyFile: cfg.PolicyFile, apiKey: cfg.APIKey, stateKeyFile: cfg.StateKeyFile, oci: &ociplugins.Fetcher{Cache: cfg.PluginCache, Client: ocireg.Client{AuthFile: cfg.RegistryAuth}, Log: cfg.Logger},
		drainDelay: cfg.DrainDelay, drainTimeout: cmp.Or(cfg.DrainTimeout, DefaultDrainTimeout),
		machine: machinetools.New(cfg.MachineTools, cfg.Lockdown, cfg.Logger, os.LookupEnv)}
	h.policy.Store(p.policy)
	defer func() {
		if err != nil {
			h.Close(ctx)
		}
	}()
	for _, step := range []func() error{
		func() error { return h.provisionTracing(ctx, cfg.OTLPEndpoint) },
		func() error {
			return h.provisionEngine(cfg.Engine, EngineOptions{CacheDir: p.cacheDir, Snapshots: !cfg.NoSnapshots, SnapshotSpares: cmp.Or(cfg.SnapshotSpares, DefaultSnapshotSpares)})
		},
		func() error { return h.provisionBrowser(cfg.Browser) },
		// the tenants exist before the registry, whose loaders read
		// their quotas (OwnerInstances) from the start
		func() error { h.tenancy.set = tenant.New(p.policy.Tenants, cfg.APIKey); return nil },
		func() error { return h.provisionStore(ctx, cfg) },
		func() error {
			servers, err := withPolicyUpstreams(cfg.Upstreams, p.policy, nil, cfg.Lockdown)
			if err != nil {
				return err
			}
			if err := oauth.Attach(servers, p.policy, cfg.DataDir, cfg.UpstreamKeyFile, h.log); err != nil {
				return err
			}
			h.upsStdio, h.policyUps = stdioOptions(cfg), policyUpstreamNames(p.policy)
			return h.provisionUpstreams(servers, p.pinFile, cfg.Store != "", cfg.UpstreamListTimeout)
		},
		func() error { return h.provisionFamilies(ctx, p.lock) },
		func() error {
			if cfg.Builtins == nil {
				h.log.Warn("this binary has no built-in plugins (build it with `make build`)")
			}
			ms := h.machine.Setup(p.policy)
			checkedDir, checkedKey := checkedRecords(p.cacheDir, cfg.Engine)
			return h.provisionRegistry(ctx, plugin.Options{Policy: p.policy, BuiltinPolicy: machinetools.WithPolicy(builtinPolicy(p.policy), ms), Env: p.env,
				Builtins: cfg.PageToolsConfig.builtins(cfg.Builtins, cfg.Browser.Mode), Dir: cfg.PluginsDir,
				IdleTimeout: cfg.IdleTimeout, KeepCompiled: cfg.KeepCompiled, Prewake: cfg.Prewake, RequirePins: cfg.Lockdown, Remotes: h.oci.Remotes(ctx, p.policy),
				Configurations: ms.Configurations(), CheckedDir: checkedDir, CheckedKey: checkedKey})
		},
		func() error { return h.wireTenancy(cfg.TenancyConfig, p.auditRequired, cfg.AdminKey, p.policy, p.lock) },
		func() error {
			return h.provisionProtocol(mcp.Options{MaxSessions: cfg.MaxSessions, SessionIdleTimeout: cfg.SessionIdleTimeout,
				ReplicaID: cfg.ReplicaID, Tasks: h.withTaskRecords(taskOptions(p.policy.Limits))}, p.stateKeys, cfg.ToolSearchConfig, p.policy.Hooks)
		},
		func() error {
			// programs' tool calls go through the protocol layer just made
			process.SetToolCaller(h.fams.proc, codetools.New(codetools.Options{Tenants: h.tenancy.set, Audit: h.tenancy.audit,
				MCP: h.mcp, Plugin: h.pluginAnnotations, Upstreams: h.ups, Globs: cfg.CodeTools}).Call)
			return nil
		},
		func() error {
			h.provisionServer(server.Options{APIKey: cfg.APIKey, Loopback: netx.Loopback(cfg.Host),
				AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins,
				Admin:  h.admin(cfg.AdminKey),
				Status: status(p.env, p.cacheDir, cfg.Browser, h.fams.procs, h.browser)})
			return nil
		},
		func() error {
			if !cfg.Watch || cfg.PluginsDir == "" {
				return nil
			}
			return h.provisionWatcher(plugin.WatchOptions{Dir: cfg.PluginsDir, Policy: cfg.PolicyFile, Debounce: cfg.WatchDebounce})
		},
	} {
		if err = step(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// provisionEngine makes the named engine over the compile cache.
func (h *Host) provisionEngine(name string, o EngineOptions) (err error) {
	if h.engine, err = newEngine(name, o); err != nil {
		return err
	}
	h.engName = engineName(name)
	h.built(h.engine.Close)
	return nil
}

// provisionBrowser makes the browser plane (its logger defaulting to the
// host's).
func (h *Host) provisionBrowser(c browser.Config) (err error) {
	if c.Logger == nil {
		c.Logger = h.log
	}
	if h.browser, err = browser.New(c); err != nil {
		return err
	}
	h.built(func(context.Context) error { return h.browser.Close() })
	return nil
}

// provisionFamilies makes the families' state (in lockdown's sandbox when
// lock is set, whose runtime checks then run).
func (h *Host) provisionFamilies(ctx context.Context, lock *lockdown.Lockdown) error {
	h.fams = newFamilies(h.log, h.browser, h.ups, h.store, lock, h.machine.SandboxPaths)
	h.built(func(context.Context) error { return h.fams.Close() })
	if lock == nil {
		return nil
	}
	if err := lock.CheckRuntime(ctx, h.fams.procs); err != nil {
		return err
	}
	lock.Log(h.log, h.fams.procs)
	return nil
}

// provisionProtocol makes the MCP protocol layer of o (its catalogue, its
// middleware and its owners' quotas are the host's) and gives it the
// replicas' state keys. The catalogue is the registry's (with the
// upstreams' tools after its own when there are upstreams), behind the
// hook chain (top, the policy's top-level hooks, then each tenant's own:
// the one point every tool call passes, spec/hooks.md), behind the
// tenants' allow-lists, behind tool search (ts).
func (h *Host) provisionProtocol(o mcp.Options, stateKeys [][]byte, ts ToolSearchConfig, top []caps.Hook) error {
	var served mcp.Catalog = h.reg
	// what tool search indexes: every tenant's tools
	source := func(context.Context) []byte { return h.reg.Snapshot().ToolsJSON() }
	visible := func(ctx context.Context, name string) bool { return tenant.FromContext(ctx).Allowed(name) }
	if h.ups != nil {
		comp := composite.New(h.reg, h.ups)
		served = comp
		source = func(ctx context.Context) []byte { return comp.ListTools(tenant.WithTenant(ctx, nil)) }
		visible = func(ctx context.Context, name string) bool {
			return tenant.FromContext(ctx).Allowed(name) && comp.UpstreamVisible(ctx, name)
		}
	}
	set := h.tenancy.set
	runner, err := hooks.NewRunner("", h.log)
	if err != nil {
		return err
	}
	h.built(func(context.Context) error { return runner.Close() })
	h.hooks = hooks.New(served, hooks.Options{Runner: runner, Guards: h.reg, Logger: h.log,
		Tenant: func(ctx context.Context, owner string) (string, []caps.Hook) {
			t := tenant.FromContext(ctx)
			if t == nil {
				t = set.ForOwner(owner)
			}
			return t.Name, t.Policy.Hooks
		}})
	h.hooks.SetHooks(top)
	served = h.hooks.Catalog()
	enabled := func(ctx context.Context, owner string) bool {
		t := tenant.FromContext(ctx)
		if t == nil {
			t = set.ForOwner(owner)
		}
		return t.ToolSearch(ts.ToolSearch)
	}
	search := toolsearch.New(set.Catalog(served), toolsearch.Options{Enabled: enabled, Visible: visible, Pinned: ts.pinned(), FullPins: ts.ToolSearchFullPins, Source: source})
	// the two tools are listed whatever a tenant's allow-list says
	listed := func(ctx context.Context, name string) bool {
		return (name == toolsearch.SearchTool || name == toolsearch.DescribeTool) && enabled(ctx, "")
	}
	o.Info, o.Logger = mcp.Implementation{Name: "aiod", Version: Version}, h.log
	o.Middleware, o.SessionsPerOwner, o.Skills = h.tenancy.middleware(listed), h.tenancy.sessions, skills.FromEnv(os.Getenv)
	h.mcp = mcp.NewServer(search, o)
	h.built(func(context.Context) error { h.mcp.Close(); return nil })
	return h.setStateKeys(stateKeys)
}

// provisionServer makes the HTTP server of o over the protocol layer and
// the tenancy.
func (h *Host) provisionServer(o server.Options) {
	o.MCP, o.Logger, o.Capabilities = h.mcp, h.log, h.capabilities
	h.tenancy.serverOptions(&o)
	h.srv = server.New(o)
}

// provisionWatcher watches the plugins directory and the policy file,
// reloading on a change.
func (h *Host) provisionWatcher(o plugin.WatchOptions) (err error) {
	o.Reload, o.Logger = h.watchReload, h.log
	if h.watch, err = plugin.Watch(o); err != nil {
		return err
	}
	h.built(func(context.Context) error { return h.watch.Close() })
	return nil
}

// makeCacheDir is the compile cache directory: dir, or <user cache
// dir>/aiod/wazero when empty, made if missing; "-" is none ("").
func makeCacheDir(dir string) (string, error) {
	if dir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "aiod", "wazero")
		}
	}
	if dir == "-" {
		dir = ""
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("cache dir: %w", err)
		}
	}
	return dir, nil
}

// provisionUpstreams makes the upstream set (none without servers), with
// the pins of pinFile when set (in the shared store when shared, the file
// seeding it: openPins). It is made before the registry (the upstream
// family needs it); the names it excludes are the registry's, looked up
// at each use.
func (h *Host) provisionUpstreams(servers []upstream.Server, pinFile string, shared bool, listTimeout time.Duration) error {
	var pins *upstream.Pins
	if pinFile != "" {
		var err error
		if pins, err = openPins(pinFile, h.store, shared); err != nil {
			return err
		}
	}
	if len(servers) > 0 {
		h.ups = newUpstreamSet(servers, h.pluginTool, pins, listTimeout, h.log, h.upsStdio)
		h.built(func(context.Context) error { return h.ups.Close() })
	}
	return nil
}

// provisionRegistry makes the plugin registry of o over the host's engine,
// families and tenants' quotas (o.Dir must be a directory when set): it
// lists at once from the manifests and compiles in the background; once
// it has loaded, the footprint code makes the idle process small.
func (h *Host) provisionRegistry(ctx context.Context, o plugin.Options) error {
	o.Engine, o.Families, o.OwnerInstances, o.Logger = h.engine, h.fams.forGrant, h.tenancy.instances, h.log
	o.Rested, o.Background = footprint.ReleaseRested, true
	if o.Dir != "" {
		if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
			return fmt.Errorf("plugins dir %s: not a readable directory", o.Dir)
		}
	}
	reg, err := plugin.New(ctx, o)
	if reg == nil {
		return err
	}
	// (a registry with load errors serves the rest: they are its report)
	h.reg = reg
	h.built(reg.Close)
	go footprint.AfterLoad(reg)
	return nil
}

// Registry exposes the plugin registry (reload, catalogue).
func (h *Host) Registry() *plugin.Registry { return h.reg }

// Server exposes the HTTP server.
func (h *Host) Server() *server.Server { return h.srv }

// Addr is host:port from the config.
func (h *Host) Addr() string { return h.addr }

// Serve serves on ln until ctx ends, then shuts down gracefully: it
// drains (server.Drain: no new connection; the open ones are served, each
// closing after its next response, /health answering 503 on them) for
// the drain delay, then waits up to the drain timeout for the calls in
// flight. It handles no signals (Run does).
func (h *Host) Serve(ctx context.Context, ln net.Listener) error {
	h.log.Info("aiod listening", "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "version", Version)
	errc := make(chan error, 1)
	go func() { errc <- h.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// draining: no new connection, the open ones served (each closing
	// after its next response) for the drain delay
	h.srv.Drain()
	if h.drainDelay > 0 {
		h.log.Info("draining: new connections refused, open ones served", "for", h.drainDelay.String())
		time.Sleep(h.drainDelay)
	}
	sctx, cancel := context.WithTimeout(context.Background(), h.drainTimeout)
	defer cancel()
	return h.srv.Shutdown(sctx)
}

// Close ends the upstream sessions and releases plugins, processes and the
// engine: the parts New built, in reverse (teardown). Idempotent.
func (h *Host) Close(ctx context.Context) error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	for i := len(h.teardown) - 1; i >= 0; i-- {
		errs = append(errs, h.teardown[i](ctx))
	}
	return errors.Join(errs...)
}

// built puts the teardown of a part just built on the list Close runs in
// reverse.
func (h *Host) built(close func(context.Context) error) { h.teardown = append(h.teardown, close) }

// grantEnv is what grants' path variables mean ($HOME, $TMP, and the
// workspace, resolved, when set).
func grantEnv(workspace string) (caps.Env, error) {
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

// status is what GET /v2/sandbox and the per-domain part of GET
// /v1/capabilities report: the doctor's probes (the same as `aiod
// doctor`) of the cache directory, the workspace and the browser plane bc
// configures, with the host's own process containment and browser.
func status(env caps.Env, cacheDir string, bc browser.Config, procs *proc.Manager, br *browser.Browser) *server.Status {
	bh, bp := bc.Host, bc.Port
	if bh == "" {
		bh = browser.DefaultHost
	}
	if bp == 0 {
		bp = browser.DefaultPort
	}
	o := doctor.FromEnv(os.Getenv)
	o.CacheDir, o.Workspace, o.CDP = cacheDir, env.Workspace, net.JoinHostPort(bh, strconv.Itoa(bp))
	if bc.Path != "" {
		o.Chromium = bc.Path
	}
	o.Cgroups = func() doctor.Check { return doctor.ContainmentCheck(procs.Containment()) }
	d := doctor.New(o, 0)
	ws := env.Workspace
	if ws == "" {
		ws = env.Home
	}
	id := map[string]any{"name": "aiod", "os": goruntime.GOOS, "arch": goruntime.GOARCH, "home_dir": env.Home}
	if hn, err := os.Hostname(); err == nil {
		id["hostname"] = hn
	}
	if u, err := user.Current(); err == nil {
		id["user"] = u.Username
	}
	return &server.Status{Doctor: d, Identity: id, Version: Version, WorkspaceDir: ws,
		Browser: func(ctx context.Context) any { return br.Status(ctx) }}
}

// newUpstreamSet returns the set over servers, excluding the names the
// plugins publish at the time of each tools/list or call (so a reload that
// adds a plugin tool takes the name from an upstream).
func newUpstreamSet(servers []upstream.Server, exclude func(string) bool, pins *upstream.Pins, listTimeout time.Duration, log *slog.Logger, edit func(*upstream.Options)) *upstream.Set {
	o := upstream.Options{
		Exclude:       exclude,
		Pins:          pins,
		ListTimeout:   listTimeout,
		Logger:        log,
		ClientName:    "aiod",
		ClientVersion: Version,
	}
	if edit != nil {
		edit(&o)
	}
	return upstream.New(servers, o)
}

// pluginTool reports whether a plugin publishes name (false before the
// registry is loaded).
func (h *Host) pluginTool(name string) bool {
	reg := h.reg
	return reg != nil && reg.Catalog().Lookup(name) != nil
}

// pluginAnnotations are the annotations of the plugin tool published as
// name, if there is one (programs' calls: codetools).
func (h *Host) pluginAnnotations(name string) (*abi.ToolAnnotations, bool) {
	if h.reg == nil {
		return nil, false
	}
	tl := h.reg.Catalog().Lookup(name)
	if tl == nil {
		return nil, false
	}
	return tl.Decl.Annotations, true
}

// provisionTracing starts the trace export when the endpoint or the
// OTEL_ variables ask for it (spec/tracing.md); Close flushes it.
func (h *Host) provisionTracing(ctx context.Context, endpoint string) error {
	shutdown, err := otlp.Start(ctx, otlp.Options{Endpoint: endpoint, Version: Version})
	if err != nil {
		return err
	}
	if tracing.On() {
		h.log.Info("tracing on: spans exported over OTLP/HTTP")
	}
	h.built(shutdown)
	return nil
}

// openStore opens where plugin state and task records live: the shared
// server of --store, else the file under --data-dir, else memory (nothing
// outlives the process).
func openStore(ctx context.Context, url, dataDir string) (store.Store, error) {
	switch {
	case url != "":
		return redis.Open(ctx, url, 0)
	case dataDir != "":
		return bolt.Open(dataDir, 0)
	}
	return store.NewMemory(0), nil
}

// openPins reads the upstream pins: from the store every replica shares
// when shared (the pin file, when the store has none yet, is copied in),
// else from the pin file.
func openPins(pinFile string, st store.Store, shared bool) (*upstream.Pins, error) {
	if shared {
		return upstream.NewStoredPins(store.Pins{St: st}, pinFile)
	}
	return upstream.LoadPins(pinFile)
}

// ReviewPins opens the pins `aiod upstream review` reads and accepts
// into: the shared store's with storeURL (closed by the returned func),
// else the pin file's.
func ReviewPins(ctx context.Context, storeURL, pinFile string) (*upstream.Pins, func(), error) {
	if storeURL == "" {
		p, err := upstream.LoadPins(pinFile)
		return p, func() {}, err
	}
	st, err := openStore(ctx, storeURL, "")
	if err != nil {
		return nil, nil, err
	}
	p, err := openPins(pinFile, st, true)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return p, func() { st.Close() }, nil
}

// provisionStore opens the store (openStore) and closes it last.
func (h *Host) provisionStore(ctx context.Context, c Config) (err error) {
	if h.store, err = openStore(ctx, c.Store, c.DataDir); err != nil {
		return err
	}
	h.built(func(context.Context) error { return h.store.Close() })
	h.log.Info("state store", "store", h.store.String(), "durable", h.store.String() != "memory")
	if b, ok := h.store.(tenant.SharedBuckets); ok && h.tenancy.set != nil {
		var last atomic.Int64
		h.tenancy.set.Share(b, func(err error) {
			// at most one line every 10 s while the store is away
			if now := time.Now().UnixNano(); now-last.Load() > int64(10*time.Second) {
				last.Store(now)
				h.log.Warn("calls_per_minute: the shared bucket cannot be reached, this replica's own bucket admits meanwhile", "err", err)
			}
		})
	}
	return nil
}

// withTaskRecords keeps the tasks' records in the store when it outlives
// the process (a file or a shared server): tasks/get then reads a task of
// another replica or of an earlier process.
func (h *Host) withTaskRecords(o mcp.TaskOptions) mcp.TaskOptions {
	if _, mem := h.store.(*store.Memory); !mem {
		o.Records = h.store
	}
	return o
}
