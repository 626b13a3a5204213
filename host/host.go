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
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/server"
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
	// Browser configures the browser plane (host/browser: attach, launch
	// or off; the zero value attaches to 127.0.0.1:9222). Its Logger
	// defaults to Logger.
	Browser browser.Config
	// Builtins are the embedded built-in plugins; nil for none.
	Builtins fs.FS
	Logger   *slog.Logger
}

// Host is a running aiod.
type Host struct {
	cfg     Config
	log     *slog.Logger
	engine  runtime.Engine
	reg     *plugin.Registry
	fams    *families
	browser *browser.Browser
	mcp     *mcp.Server
	srv     *server.Server
	closed  atomic.Bool
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
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("port %d: not in 1-65535", cfg.Port)
	}
	if cfg.PprofAddr != "" {
		if h, _, err := net.SplitHostPort(cfg.PprofAddr); err != nil || !isLoopback(h) {
			return nil, fmt.Errorf("profiler address %q: must be a loopback host:port (127.0.0.1:6060)", cfg.PprofAddr)
		}
	}
	if !isLoopback(cfg.Host) && cfg.APIKey == "" && !cfg.AllowUnauthenticated {
		return nil, fmt.Errorf("%w: %s is reachable from other machines; set --api-key (AIO_API_KEY) or pass --allow-unauthenticated", ErrUnauthenticatedExposure, cfg.Host)
	}
	log := cfg.Logger
	policy := &caps.Policy{}
	if cfg.PolicyFile != "" {
		b, err := os.ReadFile(cfg.PolicyFile)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		p, err := caps.ParsePolicy(b)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", cfg.PolicyFile, err)
		}
		policy = p
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
	fams := newFamilies(log, br)
	h := &Host{cfg: cfg, log: log, engine: eng, fams: fams, browser: br}
	if cfg.Builtins == nil {
		log.Warn("this binary has no built-in plugins (build it with `make build`)")
	}
	if cfg.PluginsDir != "" {
		if st, err := os.Stat(cfg.PluginsDir); err != nil || !st.IsDir() {
			eng.Close(ctx)
			fams.Close()
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
		Builtins:      cfg.Builtins,
		Dir:           cfg.PluginsDir,
		IdleTimeout:   cfg.IdleTimeout,
		Logger:        log,
	})
	if err != nil && reg == nil {
		eng.Close(ctx)
		fams.Close()
		br.Close()
		return nil, err
	}
	h.reg = reg
	h.mcp = mcp.NewServer(reg, mcp.Options{Info: mcp.Implementation{Name: "aiod", Version: Version}, Logger: log,
		MaxSessions: cfg.MaxSessions, SessionIdleTimeout: cfg.SessionIdleTimeout})
	h.srv = server.New(server.Options{MCP: h.mcp, Logger: log, APIKey: cfg.APIKey, Loopback: isLoopback(cfg.Host),
		AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, Capabilities: h.capabilities})
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

// Close releases plugins, processes and the engine. Idempotent.
func (h *Host) Close(ctx context.Context) error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	h.mcp.Close()
	if h.reg != nil {
		errs = append(errs, h.reg.Close(ctx))
	}
	errs = append(errs, h.fams.Close(), h.browser.Close(), h.engine.Close(ctx))
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
	for _, f := range caps.Families {
		st := "absent"
		if granted[string(f)] {
			st = "ready"
		}
		missing := []string{}
		if !implemented(f) {
			st, missing = "absent", []string{"not implemented by this host"}
		}
		entry := map[string]any{"status": st, "missing": missing, "warnings": []string{}}
		if f == caps.Process {
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
	// The browser plane: ready, or absent saying what is missing (aiod
	// serves without it; the browser tools then answer isError).
	bctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return map[string]any{
		"browser": h.browser.Status(bctx),
		"mcp": map[string]any{"status": "ready", "protocolVersions": mcp.SupportedVersions,
			"tools": len(cat.Tools), "prompts": len(cat.Prompts), "resources": len(cat.Resources), "resourceTemplates": len(cat.Templates),
			"sessions": h.mcp.SessionCount()},
		"families": fams,
		"plugins":  len(cat.Plugins),
	}
}
