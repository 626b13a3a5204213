package host

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/netx"
	"github.com/aiodhq/aiod/host/internal/unionfs"
	"github.com/aiodhq/aiod/host/lockdown"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/host/upstream/oauth"
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
	// Prewake compiles at start, in the background, the modules that were
	// awake when the last run of this build stopped (plugin.Options.Prewake).
	Prewake bool
	// Engine names the WebAssembly engine (one of Engines()).
	Engine string
	// NoSnapshots starts every instance with the plugin's own
	// initialisation. By default a tenant's instances of a plugin start
	// from a snapshot of its first one's initialised state
	// (EngineOptions.Snapshots; RATIONALE.md, "Instances from snapshots").
	NoSnapshots bool
	// SnapshotSpares is how many spare snapshots each snapshotted module
	// keeps ready for tenants never seen before (zero:
	// DefaultSnapshotSpares; the least is one).
	SnapshotSpares int
	// PprofAddr, when set, serves Go's profiler on this loopback address
	// while Run runs (never on the MCP port).
	PprofAddr string
	// GCHeapFloorMiB, when above zero, keeps the Go collector's heap goal
	// at least that many MiB while Run runs (host/internal/gcfloor; 0:
	// GOGC's goal alone). cmd/aiod sets DefaultGCHeapFloorMiB.
	GCHeapFloorMiB int
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
	// OTLPEndpoint, when set, exports traces over OTLP/HTTP to this base
	// URL (http://collector:4318); the OTEL_ variables configure the rest
	// and can turn export on without it (spec/tracing.md). Off by default.
	OTLPEndpoint string
	// Upstreams are other MCP servers whose tools are published after the
	// plugins' (upstream.ParseServers parses the EXTRA_MCP_SERVERS value);
	// UpstreamListTimeout bounds one upstream's tools/list (zero:
	// upstream.DefaultListTimeout).
	Upstreams           []upstream.Server
	UpstreamListTimeout time.Duration
	// MachineTools are the Machine Mode command-line tools published as
	// MCP tools (--machine-tools, AIO_MACHINE_TOOLS; caps.ParseMachineTools;
	// spec/machine-mode.md), besides the policy's machine_tools.
	MachineTools map[string]caps.MachineTool
	// PinUpstreams, when set, is the pin file of the upstream tools: a tool
	// whose definition does not match its pin is withheld until accepted
	// (aiod upstream review --accept; spec/upstream.md).
	PinUpstreams string
	// UpstreamKeyFile is the key (32 bytes, mode 0600) the tokens of the
	// upstream servers' OAuth logins are kept encrypted with
	// (host/upstream/oauth).
	UpstreamKeyFile string
	// Browser configures the browser plane (host/browser: attach, launch
	// or off; the zero value attaches to 127.0.0.1:9222). Its Logger
	// defaults to Logger.
	Browser browser.Config
	// Builtins are the embedded built-in plugins; nil for none.
	Builtins fs.FS
	Logger   *slog.Logger
	// LockdownConfig: the locked-down mode (host/lockdown).
	LockdownConfig

	// PluginCache holds the plugins the policy names by OCI reference,
	// fetched (default <user cache dir>/aiod/plugins; spec/oci.md).
	PluginCache string
	// RegistryAuth is the Docker config file whose credentials reach the
	// registries of those plugins ("": Docker's own).
	RegistryAuth string
	// TenancyConfig: OAuth, the audit log (tenancy.go).
	TenancyConfig
	// ReplicaConfig: the shared state keys and the replica id (config.go).
	ReplicaConfig
	// PageToolsConfig: the page tools (PageToolsConfig.builtins).
	PageToolsConfig
	// ToolSearchConfig: tool search (host/internal/toolsearch).
	ToolSearchConfig
	// CodeTools are globs over the tools programs run by
	// sandbox_execute_code may call besides those annotated read-only and
	// closed-world (--code-tools, AIO_CODE_TOOLS; spec/code-tools.md); a
	// tenant's code_tools in the policy overrides it. Nil: none.
	CodeTools []string
}

// Listen defaults (Config.Host and Config.Port when zero; cmd/aiod shows
// them in its flag help).
const (
	DefaultHost = "127.0.0.1"
	DefaultPort = 18091
)

// Version is aiod's semantic version: the MCP serverInfo.version, what
// `aiod version` prints and what sandbox_get_context reports (through
// AIOD_VERSION in the environment of the programs the host runs).
const Version = "0.2.0"

// Commit is the source commit the binary was built from, set by `make build`
// with -ldflags "-X github.com/aiodhq/aiod/host.Commit=<hash>". Empty
// falls back to the Go toolchain's vcs.revision stamp, else "unknown"
// (see BuildCommit).
var Commit string

// BuildCommit is the commit this binary was built from: Commit when set,
// else the first 7 characters of the vcs.revision the Go toolchain stamps
// (with "-dirty" when the tree was modified), else "unknown".
func BuildCommit() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// VersionString is "<Version> (<commit>)", e.g. "0.2.0 (8851bea)".
func VersionString() string { return fmt.Sprintf("%s (%s)", Version, BuildCommit()) }

// LockdownConfig is the locked-down multi-tenant mode (host/lockdown;
// spec/lockdown.md), embedded in Config.
type LockdownConfig = lockdown.Config

// TenancyConfig is the multi-tenant part of Config (embedded in it): the
// tenants themselves are the policy file's "tenants" (spec/tenants.md);
// these say how clients prove who they are and what is recorded.
type TenancyConfig struct {
	// OAuth bearer tokens (spec/tenants.md §4): all three of issuer,
	// audience and JWKS (a file, or a loopback http(s) URL) turn it on;
	// OAuthTenantClaim names the claim holding the tenant ("sub" when
	// empty).
	OAuthIssuer      string
	OAuthAudience    string
	OAuthJWKS        string
	OAuthTenantClaim string
	// AuditLog, when set, is the file that gets one JSON line per MCP
	// request (spec/tenants.md §5).
	AuditLog string
	// AuditRequired refuses a request whose audit line cannot be written
	// (lockdown requires it too).
	AuditRequired bool
}

// ReplicaConfig is what one of several replicas behind a load balancer
// needs (aiod deploy; spec/protocol.md, "Replicas"), embedded in Config.
type ReplicaConfig struct {
	// StateKeyFile, when set, is the file of the keys MRTR requestState is
	// sealed with (--state-key-file, AIO_STATE_KEY_FILE; mcp.ParseStateKeys),
	// the same file on every replica so that a state opens on any of them.
	// SIGHUP and every reload read it again. Unset: a random key of the
	// process's own.
	StateKeyFile string
	// ReplicaID, when set, starts every legacy session id
	// (--replica-id, AIO_REPLICA_ID; mcp.ReplicaTag), what the load
	// balancer routes a session's later requests on.
	ReplicaID string
	// Store, when set, is the store every replica shares (--store,
	// AIO_STORE; redis://host:port[/db]): plugin state, task records and
	// the tenants' calls_per_minute buckets (host/store/redis). Unset: a
	// file under --data-dir (host/store/bolt), else memory (Host.provisionStore).
	Store string
	// DrainDelay is how long a replica told to stop (SIGTERM) keeps
	// serving while /health answers 503, so that its load balancer stops
	// sending it requests first (--drain-delay, AIO_DRAIN_DELAY; 0: none);
	// DrainTimeout then bounds the wait for the calls in flight
	// (--drain-timeout, AIO_DRAIN_TIMEOUT; 0: DefaultDrainTimeout).
	DrainDelay, DrainTimeout time.Duration
}

// DefaultDrainTimeout bounds the wait for the calls in flight at shutdown.
const DefaultDrainTimeout = 10 * time.Second

// ToolSearchConfig is tool search (spec/protocol.md, "Tool search"),
// embedded in Config: tools/list lists a search tool, a describe tool and
// the pinned tools instead of the whole catalogue, every tool staying
// callable by its name.
type ToolSearchConfig struct {
	// ToolSearch turns it on (--tool-search, AIO_TOOL_SEARCH); a tenant's
	// tool_search in the policy overrides it for that tenant.
	ToolSearch bool
	// ToolSearchPinned are the tools listed beside the two, in this order
	// (--tool-search-pinned, AIO_TOOL_SEARCH_PINNED); nil:
	// DefaultToolSearchPinned, empty: none.
	ToolSearchPinned []string
	// ToolSearchFullPins lists the pinned tools exactly as tools/list would
	// without tool search (--tool-search-full-pins,
	// AIO_TOOL_SEARCH_FULL_PINS); false: their short form.
	ToolSearchFullPins bool
}

// DefaultToolSearchPinned are the tools tool search lists by default: the
// seven sandbox_* built-ins.
var DefaultToolSearchPinned = []string{"sandbox_execute_bash", "sandbox_execute_code", "sandbox_file_operations",
	"sandbox_str_replace_editor", "sandbox_get_context", "sandbox_get_packages", "sandbox_load_skill"}

// pinned is ToolSearchPinned with its default.
func (c ToolSearchConfig) pinned() []string {
	if c.ToolSearchPinned == nil {
		return DefaultToolSearchPinned
	}
	return c.ToolSearchPinned
}

// stateKeys validates the replica id and reads the state key file (nil
// keys without one).
func (c ReplicaConfig) stateKeys() ([][]byte, error) {
	if c.ReplicaID != "" {
		if _, err := mcp.ReplicaTag(c.ReplicaID); err != nil {
			return nil, err
		}
	}
	if c.StateKeyFile == "" {
		return nil, nil
	}
	return mcp.ReadStateKeyFile(c.StateKeyFile)
}

// PageToolsConfig is the page tools of the browser plane (spec/page-tools.md):
// the 21 tools of @agent-infra/mcp-server-browser as one embedded plugin,
// served after the ten built-ins when the browser is launched
// (--browser launch) or when asked for (--page-tools, AIO_PAGE_TOOLS), so
// that a plain start lists exactly the ten.
type PageToolsConfig struct {
	// PageTools serves the page tools in attach mode too.
	PageTools bool
	// PageToolsFS holds the page tools' plugin package (plugins/browser.FS());
	// nil: this binary has none.
	PageToolsFS fs.FS
}

// served reports whether the page tools are served with the browser plane
// in mode: the package is there, the plane is on, and it is launched or
// they were asked for.
func (c PageToolsConfig) served(mode browser.Mode) bool {
	if c.PageToolsFS == nil || mode == browser.Off {
		return false
	}
	return c.PageTools || mode == browser.Launch
}

// builtins is the built-in packages the registry loads: builtins, plus the
// page tools' package when served. The page tools are not in the
// built-ins' "order" file, so they come after the ten.
func (c PageToolsConfig) builtins(builtins fs.FS, mode browser.Mode) fs.FS {
	if !c.served(mode) {
		return builtins
	}
	if builtins == nil {
		return c.PageToolsFS
	}
	return unionfs.New(builtins, c.PageToolsFS)
}

// validate fills in the defaults of c and checks what can be checked
// before anything is built; it returns the state keys of the state key
// file (nil without one).
func (c Config) validate() (Config, [][]byte, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.UpstreamListTimeout < 0 {
		return c, nil, fmt.Errorf("upstream list timeout %s: must not be negative", c.UpstreamListTimeout)
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, nil, fmt.Errorf("port %d: not in 1-65535", c.Port)
	}
	if c.PprofAddr != "" {
		if h, _, err := net.SplitHostPort(c.PprofAddr); err != nil || !netx.Loopback(h) {
			return c, nil, fmt.Errorf("profiler address %q: must be a loopback host:port (127.0.0.1:6060)", c.PprofAddr)
		}
	}
	if err := caps.ValidateMachineTools(c.MachineTools); err != nil {
		return c, nil, err
	}
	if c.AdminKey != "" && c.AdminKey == c.APIKey {
		return c, nil, errors.New("the admin key must differ from the API key: every client holding the API key would be an operator")
	}
	keys, err := c.stateKeys()
	return c, keys, err
}

// plan is what New reads of the configuration before it builds anything:
// what several parts depend on.
type plan struct {
	policy    *caps.Policy
	stateKeys [][]byte // the state key file's (nil: none)
	env       caps.Env // what grants' path variables mean
	cacheDir  string   // the compile cache ("": none)
	lock      *lockdown.Lockdown
	// pinFile is the upstream pin file (lockdown defaults it), and
	// auditRequired whether a request must be audited (lockdown requires
	// it).
	pinFile       string
	auditRequired bool
}

// plan validates c (with its defaults filled in), reads the policy file,
// refuses an unauthenticated exposure, resolves the workspace and the
// cache directory, and starts lockdown when it is on.
func (c Config) plan() (Config, plan, error) {
	c, keys, err := c.validate()
	if err != nil {
		return c, plan{}, err
	}
	p := plan{policy: &caps.Policy{}, stateKeys: keys}
	if c.PolicyFile != "" {
		if p.policy, err = readPolicy(c.PolicyFile); err != nil {
			return c, plan{}, err
		}
	}
	authenticated := c.TenancyConfig.authConfigured(c.APIKey, p.policy)
	if !netx.Loopback(c.Host) && !authenticated && !c.AllowUnauthenticated {
		return c, plan{}, fmt.Errorf("%w: %s is reachable from other machines; set --api-key (AIO_API_KEY), tenant keys in the policy or OAuth, or pass --allow-unauthenticated", ErrUnauthenticatedExposure, c.Host)
	}
	if p.env, err = grantEnv(c.Workspace); err != nil {
		return c, plan{}, err
	}
	if p.cacheDir, err = makeCacheDir(c.CacheDir); err != nil {
		return c, plan{}, err
	}
	p.lock, err = lockdown.Start(c.LockdownConfig, lockdown.Inputs{Policy: p.policy, CacheDir: p.cacheDir,
		PluginsDir: c.PluginsDir, PolicyFile: c.PolicyFile, PinFile: c.PinUpstreams, AuditLog: c.AuditLog,
		Workspace: c.Workspace, Authenticated: authenticated, AllowUnauthenticated: c.AllowUnauthenticated})
	if err != nil {
		return c, plan{}, err
	}
	p.pinFile, p.auditRequired = c.PinUpstreams, c.AuditRequired
	if p.lock != nil {
		p.env, p.pinFile, p.auditRequired = p.lock.Env(), p.lock.PinFile(), true
	}
	return c, p, nil
}

// Upstream servers named by the policy (spec/upstream.md): composed with
// EXTRA_MCP_SERVERS at start, refused to every tenant once a reload drops
// them.

// stdioOptions are the command servers' settings: their directories under
// --data-dir when it is given, and pins required in lockdown.
func stdioOptions(cfg Config) func(*upstream.Options) {
	return func(o *upstream.Options) {
		if cfg.DataDir != "" {
			o.StdioDir = filepath.Join(cfg.DataDir, "upstreams")
		}
		o.RequirePins = cfg.Lockdown
	}
}

// withPolicyUpstreams appends the servers the policy names (its
// "upstreams", spec/upstream.md) to those of EXTRA_MCP_SERVERS, in the
// policy's order: their headers' ${VAR} are taken from aiod's environment
// now. A name in both is an error.
func withPolicyUpstreams(servers []upstream.Server, p *caps.Policy, lookup func(string) (string, bool), lockdown bool) ([]upstream.Server, error) {
	if p == nil || len(p.Upstreams) == 0 {
		return servers, nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := append([]upstream.Server(nil), servers...)
	for _, e := range p.Upstreams {
		for _, s := range servers {
			if s.Name == e.Name {
				return nil, fmt.Errorf("upstream MCP server %q is named both by EXTRA_MCP_SERVERS (--mcp-servers) and by the policy's upstreams", e.Name)
			}
		}
		if lockdown && e.Stdio() && e.SHA256 == "" {
			return nil, fmt.Errorf("upstream MCP server %q: lockdown runs only command servers pinned by sha256 (give its \"sha256\")", e.Name)
		}
		s, err := upstream.FromPolicy(e, lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ReviewUpstreams is what `aiod upstream review` reviews: the servers of
// EXTRA_MCP_SERVERS and those of the policy file's "upstreams" (none
// without a file), and the options their set needs (the command servers'
// directories under dataDir).
func ReviewUpstreams(servers []upstream.Server, policyFile, dataDir, keyFile string) ([]upstream.Server, func(*upstream.Options), error) {
	p := &caps.Policy{}
	if policyFile != "" {
		var err error
		if p, err = readPolicy(policyFile); err != nil {
			return nil, nil, err
		}
	}
	out, err := withPolicyUpstreams(servers, p, nil, false)
	if err != nil {
		return nil, nil, err
	}
	// The OAuth servers' tokens: without the key file their tools are
	// reviewed as unreachable, the other servers' as usual.
	if err := oauth.Attach(out, p, dataDir, keyFile, nil); err != nil && keyFile != "" {
		return nil, nil, err
	}
	return out, stdioOptions(Config{LockdownConfig: LockdownConfig{DataDir: dataDir}}), nil
}

// refuseRemovedUpstreams refuses to every tenant of a reloaded policy p the
// servers of the policy registered at start (started) that p no longer
// names: the running set keeps them until the next start, and their entry's
// "tenants" went with the entry.
func refuseRemovedUpstreams(p *caps.Policy, started []string) {
	var gone []string
	for _, name := range started {
		if !slices.ContainsFunc(p.Upstreams, func(u caps.UpstreamServer) bool { return u.Name == name }) {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		p.RefuseUpstreams(gone)
	}
}

// policyUpstreamNames are the names of the policy's servers.
func policyUpstreamNames(p *caps.Policy) []string {
	var out []string
	for _, u := range p.Upstreams {
		out = append(out, u.Name)
	}
	return out
}

// PolicyUpstream is the policy file's "upstreams" entry named name and the
// Server made of it (`aiod upstream login` and `logout`).
func PolicyUpstream(policyFile, name string) (caps.UpstreamServer, upstream.Server, error) {
	if policyFile == "" {
		return caps.UpstreamServer{}, upstream.Server{}, errors.New("no policy file (--policy, AIO_POLICY): the servers that log in with OAuth are named in its \"upstreams\"")
	}
	p, err := readPolicy(policyFile)
	if err != nil {
		return caps.UpstreamServer{}, upstream.Server{}, err
	}
	for _, e := range p.Upstreams {
		if e.Name == name {
			s, err := upstream.FromPolicy(e, os.LookupEnv)
			return e, s, err
		}
	}
	return caps.UpstreamServer{}, upstream.Server{}, fmt.Errorf("the policy's \"upstreams\" has no server %q", name)
}
