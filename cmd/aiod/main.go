// Command aiod is an MCP server whose tools are WebAssembly plugins.
//
//	aiod start [flags]    serve MCP at http://HOST:PORT/mcp
//	aiod upstream review  compare the upstream tools with their pins (--accept pins them)
//	aiod plugin ...       write, build and check plugins (plugin.go)
//	aiod deploy ...       replicas behind nginx or in Kubernetes (deploy.go)
//	aiod capabilities     Machine Mode discovery (machine.go); schema likewise
//	aiod version          print the version
//
// Every flag of start also reads an environment variable (the flag wins);
// a variable that does not parse is a start-up error naming it. cmd/aiod
// only turns flags and environment into a host.Config: the host owns the
// defaults, the listener, the signals and the profiler (host.Run).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	_ "github.com/aiodhq/aiod/host/runtime/wasmtime/register" // --engine wasmtime (cgo builds)
	"github.com/aiodhq/aiod/host/upstream"
	pagetools "github.com/aiodhq/aiod/plugins/browser"
	"github.com/aiodhq/aiod/plugins/builtin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `aiod: an MCP server whose tools are WebAssembly plugins

usage:
  aiod start [flags]   serve MCP at http://HOST:PORT/mcp (aiod start -h lists flags)
  aiod upstream review [--accept] [--output jsonl]
                       show how the upstream MCP servers' tools differ from their pins
                       (--pin-upstreams); --accept pins them as they are now
  aiod upstream login NAME [--no-browser] | logout NAME
                       log in to a policy upstream with OAuth (its tokens kept encrypted
                       under --data-dir with --upstream-key-file), or revoke and forget them
  aiod doctor [--json] [--lockdown] [--output jsonl]
                       what this machine has for each plane (shell, interpreters, browser, isolation);
                       --lockdown: what aiod start --lockdown would be refused for
  aiod plugin new|build|inspect|verify|test|add|push|pull|sign|keygen
                       write, build, check, publish and sign a plugin (aiod plugin help)
  aiod key new [--output jsonl]
                       print a fresh API key and the line to paste into a tenant's "keys"
  aiod deploy nginx|kubernetes
                       write the configuration of several replicas behind nginx or in Kubernetes
  aiod capabilities --output json
  aiod schema --output json --command NAME
                       Machine Mode discovery (AOI-CLI v0.2) of the commands that take --output jsonl:
                       plugin inspect|verify|test, doctor, upstream review, key new
  aiod version         print the version
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "aiod %s\n", host.VersionString())
		return 0
	case "start":
		return start(args[1:], stderr)
	case "upstream":
		return upstreamCmd(args[1:], stdout, stderr)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "plugin":
		return pluginCmd(args[1:], stdout, stderr)
	case "key":
		return keyCmd(args[1:], stdout, stderr)
	case "capabilities", "schema":
		return discover(args[0], args[1:], stdout, stderr)
	case "deploy":
		return deployCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "aiod: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// startFlags are the flags of `aiod start`, each bound to a field of cfg
// (or to a value converted into one after parsing) and to its environment
// variable.
type startFlags struct {
	fs       *flag.FlagSet
	env      map[string]string // flag name -> environment variable
	cfg      host.Config
	logLevel slog.Level
	origins  string
	hosts    string
	pinned   string // --tool-search-pinned
	code     string // --code-tools
	servers  serversFlag
	machine  machineFlag
	// snapshots is --snapshots (Config.NoSnapshots is its negation)
	snapshots bool
}

// emptyMeansSet are the variables for which an empty value is a value, not
// the absence of one: an empty API key refuses to start rather than
// silently serving without authentication.
var emptyMeansSet = map[string]bool{"AIO_API_KEY": true}

func newStartFlags(stderr io.Writer) *startFlags {
	s := &startFlags{fs: flag.NewFlagSet("aiod start", flag.ContinueOnError), env: map[string]string{}}
	s.fs.SetOutput(stderr)
	c := &s.cfg
	s.str(&c.Host, "host", "AIO_HOST", host.DefaultHost, "address to listen on; beyond loopback an API key (or --allow-unauthenticated) is required")
	s.int(&c.Port, "port", "AIO_PORT", host.DefaultPort, "port to listen on")
	s.str(&c.PluginsDir, "plugins-dir", "AIO_PLUGINS_DIR", "", "directory of plugin packages to load besides the built-ins")
	s.str(&c.CacheDir, "cache-dir", "AIO_CACHE_DIR", "", "compiled-module cache directory; '-' disables it (default: <user cache dir>/aiod/wazero)")
	s.str(&c.PluginCache, "plugin-cache", "AIO_PLUGIN_CACHE", "", "where plugins the policy names by OCI reference are fetched to (default: <user cache dir>/aiod/plugins)")
	s.str(&c.RegistryAuth, "registry-auth", "AIO_REGISTRY_AUTH", "", "Docker config file whose credentials reach the registries of those plugins (default: Docker's own, $DOCKER_CONFIG/config.json or ~/.docker/config.json; none: anonymous)")
	s.str(&c.Workspace, "workspace", "AIO_WORKSPACE", "", "restrict every file operation and process working directory to this directory")
	s.str(&c.PolicyFile, "policy", "AIO_POLICY", "", "operator capability policy file, JSON (default: plugins from --plugins-dir get no capabilities)")
	s.str(&c.APIKey, "api-key", "AIO_API_KEY", "", "API key required as 'Authorization: Bearer KEY' or 'x-api-key: KEY'; set but empty refuses to start")
	s.bool(&c.AllowUnauthenticated, "allow-unauthenticated", "AIO_ALLOW_UNAUTHENTICATED", false, "allow listening beyond loopback without an API key")
	s.duration(&c.IdleTimeout, "idle-timeout", "AIO_IDLE_TIMEOUT", plugin.DefaultIdleTimeout, "evict plugin instances idle this long (0: the default)")
	s.bool(&c.KeepCompiled, "keep-compiled", "AIO_KEEP_COMPILED", false, "keep every plugin's compiled code in memory; by default a plugin without instances drops it (after start-up and after --idle-timeout) and compiles again from the cache when next called")
	s.bool(&c.Prewake, "prewake", "AIO_PREWAKE", true, "at start, compile in the background the plugins that were awake (called, and not yet put to sleep by --idle-timeout) when the last run of this build stopped, so their first calls do not wait for a compile")
	s.fs.TextVar(&s.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error (env AIO_LOG_LEVEL)")
	s.env["log-level"] = "AIO_LOG_LEVEL"
	s.int(&c.MaxSessions, "max-sessions", "AIO_MAX_SESSIONS", mcp.DefaultMaxSessions, "most legacy MCP sessions alive at once; the least recently used idle one makes room (0: the default)")
	s.duration(&c.SessionIdleTimeout, "session-idle-timeout", "AIO_SESSION_IDLE_TIMEOUT", mcp.DefaultSessionIdleTimeout, "end a legacy MCP session unused this long (0: the default)")
	s.str(&s.origins, "allowed-origins", "AIO_ALLOWED_ORIGINS", "", "comma-separated Origin values accepted besides loopback ones ('*' for any)")
	s.str(&s.hosts, "allowed-hosts", "AIO_ALLOWED_HOSTS", "", "comma-separated Host header values accepted besides loopback names when listening on loopback")
	s.str(&c.Engine, "engine", "AIO_ENGINE", host.DefaultEngine, "WebAssembly engine, one of: "+strings.Join(host.Engines(), ", "))
	s.bool(&s.snapshots, "snapshots", "AIO_SNAPSHOTS", host.DefaultSnapshots, "start a tenant's instances of a plugin from a snapshot of its first one's initialised state (false: every instance runs the plugin's initialisation)")
	s.int(&c.SnapshotSpares, "snapshot-spares", "AIO_SNAPSHOT_SPARES", host.DefaultSnapshotSpares, "spare snapshots each plugin keeps ready for tenants never seen before, refilled in the background; each holds the pages its initialisation changed, ~180 KiB for a Go plugin (0: the default; the least is 1)")
	s.int(&c.GCHeapFloorMiB, "gc-heap-floor", "AIO_GC_HEAP_FLOOR", host.DefaultGCHeapFloorMiB, "MiB: the Go collector runs no sooner than when the heap reaches this size; above it, GOGC's goal (twice the live heap) applies (0: GOGC's alone; GOMEMLIMIT still bounds the heap)")
	s.str(&c.PprofAddr, "pprof-addr", "AIO_PPROF_ADDR", "", "serve Go's profiler on this loopback host:port (debugging aid)")
	s.bool(&c.Watch, "watch", "AIO_WATCH", true, "reload when the plugins directory, a package in it or the policy file changes (with --plugins-dir)")
	s.duration(&c.WatchDebounce, "watch-debounce", "AIO_WATCH_DEBOUNCE", host.DefaultWatchDebounce, "how long the plugins directory must be quiet after a change before the reload")
	s.str(&c.AdminKey, "admin-key", "AIO_ADMIN_KEY", "", "key of the operator's page /admin/ and the admin API (POST /admin/reload, GET /admin/plugins) as 'Authorization: Bearer KEY'; unset: they are off")
	s.str(&c.OTLPEndpoint, "otlp-endpoint", "AIO_OTLP_ENDPOINT", "", "export OpenTelemetry traces over OTLP/HTTP to this base URL (http://collector:4318; the OTEL_EXPORTER_OTLP_* variables work too); unset: no traces")
	s.fs.Var(&s.servers, "mcp-servers", `other MCP servers whose tools are published beside aiod's, {"<name>": {"url": "http://127.0.0.1:PORT/mcp", "prefix": "<prefix>"}} (env EXTRA_MCP_SERVERS)`)
	s.env["mcp-servers"] = "EXTRA_MCP_SERVERS"
	s.str(&c.PinUpstreams, "pin-upstreams", "AIO_PIN_UPSTREAMS", "", "pin file of the upstream MCP servers' tools: a tool that is new or whose definition changed is withheld until `aiod upstream review --accept`")
	s.str(&c.UpstreamKeyFile, "upstream-key-file", "AIO_UPSTREAM_KEY_FILE", "", "key file (32 bytes or 64 hex digits, mode 0600) the tokens of `aiod upstream login` are kept encrypted with, under --data-dir; required when a policy upstream logs in with OAuth")
	s.fs.Var(&s.machine, "machine-tools", `Machine Mode command-line tools published as MCP tools, {"<name>": {"command": ["/abs/path/cli", "fixed-arg"], "prefix": "<prefix>", "env": ["VAR"]}} (env AIO_MACHINE_TOOLS; spec/machine-mode.md)`)
	s.env["machine-tools"] = "AIO_MACHINE_TOOLS"
	s.duration(&c.UpstreamListTimeout, "upstream-list-timeout", "AIO_UPSTREAM_LIST_TIMEOUT", upstream.DefaultListTimeout, "longest a tools/list waits for one upstream MCP server; one that has not answered by then is left out (0: the default)")
	s.bool(&c.ToolSearch, "tool-search", "AIO_TOOL_SEARCH", false, "tools/list lists a search tool (aiod_tool_search), a describe tool (aiod_tool_describe) and the pinned tools instead of every tool; every tool stays callable by name. A tenant's tool_search in the policy overrides it")
	s.str(&s.pinned, "tool-search-pinned", "AIO_TOOL_SEARCH_PINNED", "", "with tool search: comma-separated names of the tools listed beside the search and describe tools, '-' for none (default: the seven sandbox_* built-ins)")
	s.bool(&c.ToolSearchFullPins, "tool-search-full-pins", "AIO_TOOL_SEARCH_FULL_PINS", false, "with tool search: list the pinned tools exactly as tools/list would without it, instead of their short form (first sentence of each description, no output schema; aiod_tool_describe gives the rest)")
	s.str(&s.code, "code-tools", "AIO_CODE_TOOLS", "", "comma-separated globs of the tools a program run by sandbox_execute_code may call besides those annotated read-only and closed-world ('*': every tool the tenant may use). A tenant's code_tools in the policy overrides it")
	s.tenancyFlags(c)
	s.replicaFlags(c)
	s.value(&modeValue{&c.Browser.Mode}, "browser", "AIO_BROWSER", string(browser.DefaultMode), "browser plane: attach (a browser at --browser-host:--browser-port), launch (aiod runs headless Chromium) or off")
	s.str(&c.Browser.Host, "browser-host", "BROWSER_REMOTE_DEBUGGING_HOST", browser.DefaultHost, "attach: the browser's DevTools host")
	s.int(&c.Browser.Port, "browser-port", "BROWSER_REMOTE_DEBUGGING_PORT", browser.DefaultPort, "attach: the browser's DevTools port")
	s.str(&c.Browser.Path, "browser-path", "AIO_BROWSER_PATH", browser.DefaultPath, "launch: the Chromium binary (looked up on PATH)")
	s.value(&viewportValue{&c.Browser.Viewport}, "browser-viewport", "AIO_BROWSER_VIEWPORT", browser.DefaultViewport, "launch: the viewport, WIDTHxHEIGHT in CSS pixels")
	s.bool(&c.PageTools, "page-tools", "AIO_PAGE_TOOLS", false, "attach: also serve the page tools (browser_navigate, browser_click, ... after the ten built-ins; always with --browser launch)")
	s.bool(&c.Lockdown, "lockdown", "AIO_LOCKDOWN", false, "locked-down multi-tenant mode: processes under bubblewrap, each tenant its own /workspace and /tmp under --data-dir, plugins pinned by sha256 in the policy; refuses to start, saying what is missing, without all of it")
	s.str(&c.DataDir, "data-dir", "AIO_DATA_DIR", "", "where aiod keeps what outlives it: plugin state and finished tasks (<dir>/state.db, fsynced on every change), the policy's command servers' directories (<dir>/upstreams/<server>/{workspace,tmp}) and, in lockdown, the tenants' directories (<dir>/tenants/<tenant>/{workspace,tmp}); unset (and no --store): state is in memory, lost at exit")
	return s
}

// value binds a flag.Value (its default set by the caller) to a flag.
func (s *startFlags) value(v flag.Value, name, env, def, help string) {
	if err := v.Set(def); err != nil {
		panic(err)
	}
	s.fs.Var(v, name, help+" (env "+env+")")
	s.env[name] = env
}

// modeValue is --browser: one of browser's modes, checked when set.
type modeValue struct{ p *browser.Mode }

func (v *modeValue) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v *modeValue) Set(s string) error {
	m, err := browser.ParseMode(s)
	if err == nil {
		*v.p = m
	}
	return err
}

func (v *modeValue) Want() string { return "attach, launch or off" }

// viewportValue is --browser-viewport, checked when set.
type viewportValue struct{ p *string }

func (v *viewportValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v *viewportValue) Set(s string) error {
	vp, err := browser.ParseViewport(s)
	if err == nil {
		*v.p = vp.String()
	}
	return err
}

func (v *viewportValue) Want() string { return "WIDTHxHEIGHT such as 1280x800" }

func (s *startFlags) str(p *string, name, env, def, help string) {
	s.fs.StringVar(p, name, def, help+" (env "+env+")")
	s.env[name] = env
}

func (s *startFlags) int(p *int, name, env string, def int, help string) {
	s.fs.IntVar(p, name, def, help+" (env "+env+")")
	s.env[name] = env
}

func (s *startFlags) bool(p *bool, name, env string, def bool, help string) {
	s.fs.BoolVar(p, name, def, help+" (env "+env+")")
	s.env[name] = env
}

func (s *startFlags) duration(p *time.Duration, name, env string, def time.Duration, help string) {
	s.fs.DurationVar(p, name, def, help+" (env "+env+")")
	s.env[name] = env
}

// errEmptyKey refuses an API key that is configured but empty.
var errEmptyKey = errors.New("the API key is configured but empty: refusing to start (unset it, or set a non-empty key)")

// parse parses args, then fills every flag not given on the command line
// from its environment variable (unset or empty: the default), parsed by
// the flag's own parser, so that a bad value fails the same way for both.
func (s *startFlags) parse(args []string, lookup func(string) (string, bool)) error {
	if err := s.fs.Parse(args); err != nil {
		return reportedError{err} // the flag set printed it, with the usage
	}
	if s.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", s.fs.Arg(0))
	}
	given := map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	keySet := given["api-key"]
	var errs []error
	s.fs.VisitAll(func(f *flag.Flag) {
		env := s.env[f.Name]
		if given[f.Name] || env == "" {
			return
		}
		v, ok := lookup(env)
		if !ok || (v == "" && !emptyMeansSet[env]) {
			return
		}
		if f.Name == "api-key" {
			keySet = true
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s=%q: invalid value for --%s (want %s): %v", env, v, f.Name, want(f), err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if keySet && s.cfg.APIKey == "" {
		return errEmptyKey
	}
	s.cfg.AllowedOrigins = splitList(s.origins)
	s.cfg.AllowedHosts = splitList(s.hosts)
	if s.cfg.ToolSearchPinned = splitList(s.pinned); s.pinned == "-" {
		s.cfg.ToolSearchPinned = []string{}
	}
	s.cfg.CodeTools = splitList(s.code)
	s.cfg.Upstreams = s.servers.servers
	s.cfg.MachineTools = s.machine.tools
	s.cfg.NoSnapshots = !s.snapshots
	return nil
}

// serversFlag is --mcp-servers / EXTRA_MCP_SERVERS: the value is parsed
// (and refused) when set, so a malformed variable fails start-up like a
// malformed flag; the skipped entries' warnings are logged once the logger
// exists.
type serversFlag struct {
	raw     string
	servers []upstream.Server
	warns   []upstream.Warning
}

func (f *serversFlag) String() string { return f.raw }
func (f *serversFlag) Get() any       { return f }
func (f *serversFlag) Set(v string) error {
	servers, warns, err := upstream.ParseServers(v)
	if err != nil {
		return err
	}
	f.raw, f.servers, f.warns = v, servers, warns
	return nil
}

// machineFlag is --machine-tools / AIO_MACHINE_TOOLS: parsed (and
// refused) when set, like --mcp-servers.
type machineFlag struct {
	raw   string
	tools map[string]caps.MachineTool
}

func (f *machineFlag) String() string { return f.raw }
func (f *machineFlag) Get() any       { return f }
func (f *machineFlag) Set(v string) error {
	tools, err := caps.ParseMachineTools([]byte(v))
	if err != nil {
		return err
	}
	f.raw, f.tools = v, tools
	return nil
}

// want describes the values f accepts.
func want(f *flag.Flag) string {
	if w, ok := f.Value.(interface{ Want() string }); ok {
		return w.Want()
	}
	switch f.Value.(flag.Getter).Get().(type) {
	case int:
		return "an integer"
	case bool:
		return "true or false"
	case time.Duration:
		return "a duration such as 90s or 5m"
	case *slog.Level:
		return "debug, info, warn or error"
	case *serversFlag:
		return `a JSON object {"<name>": {"url": ..., "prefix": ...}}`
	}
	return "a string"
}

// reportedError is an error already shown to the user.
type reportedError struct{ error }

func (e reportedError) Unwrap() error { return e.error }

// parseStart turns start's flags and the environment into a Config (the
// flag wins over the environment variable). code is -1 to go on, else the
// exit code.
func parseStart(args []string, stderr io.Writer) (cfg host.Config, code int) {
	s := newStartFlags(stderr)
	if err := s.parse(args, os.LookupEnv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return host.Config{}, 0
		}
		if !errors.As(err, new(reportedError)) {
			fmt.Fprintf(stderr, "aiod start: %v\n", err)
		}
		return host.Config{}, 2
	}
	s.cfg.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: s.logLevel}))
	for _, w := range s.servers.warns {
		s.cfg.Logger.Warn("--mcp-servers (EXTRA_MCP_SERVERS): "+w.String(), "server", w.Server)
	}
	if builtin.Present() {
		s.cfg.Builtins = builtin.FS()
	}
	if pagetools.Present() {
		s.cfg.PageToolsFS = pagetools.FS()
	}
	return s.cfg, -1
}

func start(args []string, stderr io.Writer) int {
	cfg, code := parseStart(args, stderr)
	if code >= 0 {
		return code
	}
	ctx := context.Background()
	began := time.Now()
	h, err := host.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "aiod: %v\n", err)
		return 1
	}
	defer h.Close(context.Background())
	cfg.Logger.Info("plugins ready", "startup_ms", time.Since(began).Milliseconds())
	if err := h.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "aiod: %v\n", strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
