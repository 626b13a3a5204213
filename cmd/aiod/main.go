// Command aiod is an MCP server whose tools are WebAssembly plugins.
//
//	aiod start [flags]    serve MCP at http://HOST:PORT/mcp
//	aiod version          print the version
//
// Every flag of start also reads an environment variable (the flag wins).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only when AIO_PPROF_ADDR is set
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aiodhq/aiod/host"
	_ "github.com/aiodhq/aiod/host/runtime/wasmtime/register" // --engine wasmtime (cgo builds)
	"github.com/aiodhq/aiod/plugins/builtin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `aiod: an MCP server whose tools are WebAssembly plugins

usage:
  aiod start [flags]   serve MCP at http://HOST:PORT/mcp (aiod start -h lists flags)
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
		fmt.Fprintf(stdout, "aiod %s\n", host.Version)
		return 0
	case "start":
		return start(args[1:], stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "aiod: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// envOr returns the environment variable's value, or def.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}

// parseStart turns start's flags and the environment into a Config (the
// flag wins over the environment variable).
func parseStart(args []string, stderr io.Writer) (host.Config, *slog.Logger, int) {
	fs := flag.NewFlagSet("aiod start", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port, _ := strconv.Atoi(envOr("AIO_PORT", "18091"))
	var (
		hostFlag    = fs.String("host", envOr("AIO_HOST", "127.0.0.1"), "address to listen on (env AIO_HOST)")
		portFlag    = fs.Int("port", port, "port to listen on (env AIO_PORT)")
		plugins     = fs.String("plugins-dir", envOr("AIO_PLUGINS_DIR", ""), "directory of plugin packages to load besides the built-ins (env AIO_PLUGINS_DIR)")
		cache       = fs.String("cache-dir", envOr("AIO_CACHE_DIR", ""), "compiled-module cache directory; '-' disables it (env AIO_CACHE_DIR; default: user cache dir)")
		engine      = fs.String("engine", envOr("AIO_ENGINE", host.DefaultEngine), "WebAssembly engine: "+strings.Join(host.Engines(), " or ")+" (env AIO_ENGINE)")
		workspace   = fs.String("workspace", envOr("AIO_WORKSPACE", ""), "restrict every file operation and process working directory to this directory (env AIO_WORKSPACE)")
		policy      = fs.String("policy", envOr("AIO_POLICY", ""), "operator capability policy file, JSON (env AIO_POLICY; default: plugins from --plugins-dir get no capabilities)")
		apiKey      = fs.String("api-key", envOr("AIO_API_KEY", ""), "API key required as 'Authorization: Bearer KEY' or 'x-api-key: KEY' (env AIO_API_KEY)")
		allowUnauth = fs.Bool("allow-unauthenticated", envBool("AIO_ALLOW_UNAUTHENTICATED"), "allow listening beyond loopback without an API key (env AIO_ALLOW_UNAUTHENTICATED)")
		idle        = fs.Duration("idle-timeout", envDuration("AIO_IDLE_TIMEOUT", 5*time.Minute), "evict plugin instances idle this long (env AIO_IDLE_TIMEOUT)")
		logLevel    = fs.String("log-level", envOr("AIO_LOG_LEVEL", "info"), "debug, info, warn or error (env AIO_LOG_LEVEL)")
		maxSess     = fs.Int("max-sessions", envInt("AIO_MAX_SESSIONS", 1024), "most legacy MCP sessions alive at once; the least recently used idle one makes room (env AIO_MAX_SESSIONS)")
		sessIdle    = fs.Duration("session-idle-timeout", envDuration("AIO_SESSION_IDLE_TIMEOUT", 30*time.Minute), "end a legacy MCP session unused this long (env AIO_SESSION_IDLE_TIMEOUT)")
		origins     = fs.String("allowed-origins", envOr("AIO_ALLOWED_ORIGINS", ""), "comma-separated Origin values accepted besides loopback ones ('*' for any) (env AIO_ALLOWED_ORIGINS)")
		hosts       = fs.String("allowed-hosts", envOr("AIO_ALLOWED_HOSTS", ""), "comma-separated Host header values accepted besides loopback names when listening on loopback (env AIO_ALLOWED_HOSTS)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return host.Config{}, nil, 0
		}
		return host.Config{}, nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aiod start: unexpected argument %q\n", fs.Arg(0))
		return host.Config{}, nil, 2
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "aiod start: bad --log-level %q\n", *logLevel)
		return host.Config{}, nil, 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	_, keySet := os.LookupEnv("AIO_API_KEY")
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "api-key" {
			keySet = true
		}
	})
	cfg := host.Config{
		Host:                 *hostFlag,
		Port:                 *portFlag,
		PluginsDir:           *plugins,
		CacheDir:             *cache,
		Engine:               *engine,
		Workspace:            *workspace,
		PolicyFile:           *policy,
		APIKey:               *apiKey,
		APIKeySet:            keySet,
		AllowUnauthenticated: *allowUnauth,
		IdleTimeout:          *idle,
		MaxSessions:          *maxSess,
		SessionIdleTimeout:   *sessIdle,
		AllowedOrigins:       splitList(*origins),
		AllowedHosts:         splitList(*hosts),
		Logger:               log,
	}
	if builtin.Present() {
		cfg.Builtins = builtin.FS()
	}
	return cfg, log, -1
}

func start(args []string, stderr io.Writer) int {
	cfg, log, code := parseStart(args, stderr)
	if code >= 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	h, err := host.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "aiod: %v\n", err)
		return 1
	}
	defer h.Close(context.Background())
	log.Info("plugins ready", "engine", cfg.Engine, "startup_ms", time.Since(began).Milliseconds())
	if addr := os.Getenv("AIO_PPROF_ADDR"); addr != "" {
		// Debugging aid for operators: Go's profiler on a separate,
		// loopback-only listener (never on the MCP port).
		if !strings.HasPrefix(addr, "127.0.0.1:") && !strings.HasPrefix(addr, "localhost:") {
			fmt.Fprintf(stderr, "aiod: AIO_PPROF_ADDR must be a loopback address, got %q\n", addr)
			return 2
		}
		go func() { log.Warn("pprof stopped", "err", http.ListenAndServe(addr, nil)) }()
		log.Info("pprof listening", "addr", addr)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			log.Info("SIGHUP: reloading plugins")
			if err := h.Registry().Reload(ctx); err != nil {
				log.Warn("reload finished with errors", "err", err)
			}
		}
	}()
	if err := h.ListenAndServe(ctx); err != nil {
		fmt.Fprintf(stderr, "aiod: %v\n", strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
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
