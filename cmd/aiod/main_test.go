package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/upstream"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "aiod " + host.Version + " (" + host.BuildCommit() + ")\n"; out.String() != want {
		t.Fatalf("version printed %q, want %q", out.String(), want)
	}
	if !regexp.MustCompile(`^aiod \d+\.\d+\.\d+ \([0-9a-z-]+\)\n$`).MatchString(out.String()) {
		t.Fatalf("version %q is not `aiod MAJOR.MINOR.PATCH (commit)`", out.String())
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// setting is one environment variable of `aiod start`: a good value and
// what it sets, a flag value and what that sets, and (for the types that
// parse) a bad value.
type setting struct {
	env        string
	good       string
	wantGood   any
	flag       string
	wantFlag   any
	bad        string // "" when every value is accepted
	get        func(*startFlags) any
	defaultVal any
}

var settings = []setting{
	{"AIO_HOST", "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3", "", func(s *startFlags) any { return s.cfg.Host }, host.DefaultHost},
	{"AIO_PORT", "19000", 19000, "19001", 19001, "abc", func(s *startFlags) any { return s.cfg.Port }, host.DefaultPort},
	{"AIO_PLUGINS_DIR", "/env/plugins", "/env/plugins", "/flag/plugins", "/flag/plugins", "", func(s *startFlags) any { return s.cfg.PluginsDir }, ""},
	{"AIO_CACHE_DIR", "/env/cache", "/env/cache", "-", "-", "", func(s *startFlags) any { return s.cfg.CacheDir }, ""},
	{"AIO_PLUGIN_CACHE", "/env/plugins", "/env/plugins", "/flag/plugins", "/flag/plugins", "", func(s *startFlags) any { return s.cfg.PluginCache }, ""},
	{"AIO_REGISTRY_AUTH", "/env/auth.json", "/env/auth.json", "/flag/auth.json", "/flag/auth.json", "", func(s *startFlags) any { return s.cfg.RegistryAuth }, ""},
	{"AIO_WORKSPACE", "/env/ws", "/env/ws", "/flag/ws", "/flag/ws", "", func(s *startFlags) any { return s.cfg.Workspace }, ""},
	{"AIO_POLICY", "/env/p.json", "/env/p.json", "/flag/p.json", "/flag/p.json", "", func(s *startFlags) any { return s.cfg.PolicyFile }, ""},
	{"AIO_API_KEY", "env-key", "env-key", "flag-key", "flag-key", "", func(s *startFlags) any { return s.cfg.APIKey }, ""},
	{"AIO_ALLOW_UNAUTHENTICATED", "true", true, "false", false, "yes", func(s *startFlags) any { return s.cfg.AllowUnauthenticated }, false},
	{"AIO_KEEP_COMPILED", "true", true, "false", false, "yes", func(s *startFlags) any { return s.cfg.KeepCompiled }, false},
	{"AIO_PREWAKE", "false", false, "true", true, "yes", func(s *startFlags) any { return s.cfg.Prewake }, true},
	{"AIO_IDLE_TIMEOUT", "90s", 90 * time.Second, "1m", time.Minute, "90", func(s *startFlags) any { return s.cfg.IdleTimeout }, plugin.DefaultIdleTimeout},
	{"AIO_LOG_LEVEL", "debug", slog.LevelDebug, "warn", slog.LevelWarn, "loud", func(s *startFlags) any { return s.logLevel }, slog.LevelInfo},
	{"AIO_GC_HEAP_FLOOR", "32", 32, "0", 0, "lots", func(s *startFlags) any { return s.cfg.GCHeapFloorMiB }, host.DefaultGCHeapFloorMiB},
	{"AIO_MAX_SESSIONS", "10", 10, "20", 20, "ten", func(s *startFlags) any { return s.cfg.MaxSessions }, mcp.DefaultMaxSessions},
	{"AIO_SESSION_IDLE_TIMEOUT", "1h", time.Hour, "2h", 2 * time.Hour, "1 hour", func(s *startFlags) any { return s.cfg.SessionIdleTimeout }, mcp.DefaultSessionIdleTimeout},
	{"AIO_ALLOWED_ORIGINS", "https://a, https://b", []string{"https://a", "https://b"}, "*", []string{"*"}, "", func(s *startFlags) any { return s.cfg.AllowedOrigins }, []string(nil)},
	{"AIO_ALLOWED_HOSTS", "a.test,b.test", []string{"a.test", "b.test"}, "c.test", []string{"c.test"}, "", func(s *startFlags) any { return s.cfg.AllowedHosts }, []string(nil)},
	{"AIO_ENGINE", "wazero", "wazero", "other", "other", "", func(s *startFlags) any { return s.cfg.Engine }, host.DefaultEngine},
	{"AIO_SNAPSHOTS", "false", false, "true", true, "often", func(s *startFlags) any { return !s.cfg.NoSnapshots }, host.DefaultSnapshots},
	{"AIO_SNAPSHOT_SPARES", "8", 8, "2", 2, "many", func(s *startFlags) any { return s.cfg.SnapshotSpares }, host.DefaultSnapshotSpares},
	{"EXTRA_MCP_SERVERS", `{"a":{"url":"http://127.0.0.1:1/mcp","prefix":"a"}}`, []upstream.Server{{Name: "a", URL: "http://127.0.0.1:1/mcp", Prefix: "a"}},
		`{"b":{"url":"http://localhost:2/mcp"}}`, []upstream.Server{{Name: "b", URL: "http://localhost:2/mcp"}}, `{"a":`,
		func(s *startFlags) any { return s.cfg.Upstreams }, []upstream.Server(nil)},
	{"AIO_MACHINE_TOOLS", `{"a":{"command":["/bin/a"],"env":["A_TOKEN"]}}`, map[string]caps.MachineTool{"a": {Command: []string{"/bin/a"}, Env: []string{"A_TOKEN"}}},
		`{"b":{"command":["/usr/bin/b","x"],"prefix":"bee"}}`, map[string]caps.MachineTool{"b": {Command: []string{"/usr/bin/b", "x"}, Prefix: "bee"}}, `{"a":{"command":["a"]}}`,
		func(s *startFlags) any { return s.cfg.MachineTools }, map[string]caps.MachineTool(nil)},
	{"AIO_PIN_UPSTREAMS", "/env/pins.json", "/env/pins.json", "/flag/pins.json", "/flag/pins.json", "", func(s *startFlags) any { return s.cfg.PinUpstreams }, ""},
	{"AIO_UPSTREAM_KEY_FILE", "/env/key", "/env/key", "/flag/key", "/flag/key", "", func(s *startFlags) any { return s.cfg.UpstreamKeyFile }, ""},
	{"AIO_TOOL_SEARCH", "true", true, "false", false, "maybe", func(s *startFlags) any { return s.cfg.ToolSearch }, false},
	{"AIO_TOOL_SEARCH_PINNED", "a, b", []string{"a", "b"}, "-", []string{}, "", func(s *startFlags) any { return s.cfg.ToolSearchPinned }, []string(nil)},
	{"AIO_TOOL_SEARCH_FULL_PINS", "true", true, "false", false, "maybe", func(s *startFlags) any { return s.cfg.ToolSearchFullPins }, false},
	{"AIO_CODE_TOOLS", "a_*, b", []string{"a_*", "b"}, "*", []string{"*"}, "", func(s *startFlags) any { return s.cfg.CodeTools }, []string(nil)},
	{"AIO_UPSTREAM_LIST_TIMEOUT", "5s", 5 * time.Second, "500ms", 500 * time.Millisecond, "5", func(s *startFlags) any { return s.cfg.UpstreamListTimeout }, upstream.DefaultListTimeout},
	{"AIO_PPROF_ADDR", "127.0.0.1:6060", "127.0.0.1:6060", "localhost:6061", "localhost:6061", "", func(s *startFlags) any { return s.cfg.PprofAddr }, ""},
	{"AIO_WATCH", "false", false, "true", true, "sometimes", func(s *startFlags) any { return s.cfg.Watch }, true},
	{"AIO_WATCH_DEBOUNCE", "250ms", 250 * time.Millisecond, "1s", time.Second, "soon", func(s *startFlags) any { return s.cfg.WatchDebounce }, host.DefaultWatchDebounce},
	{"AIO_ADMIN_KEY", "env-admin", "env-admin", "flag-admin", "flag-admin", "", func(s *startFlags) any { return s.cfg.AdminKey }, ""},
	{"AIO_OTLP_ENDPOINT", "http://127.0.0.1:4318", "http://127.0.0.1:4318", "http://collector:4318", "http://collector:4318", "", func(s *startFlags) any { return s.cfg.OTLPEndpoint }, ""},
	{"AIO_BROWSER", "launch", browser.Launch, "off", browser.Off, "on", func(s *startFlags) any { return s.cfg.Browser.Mode }, browser.Attach},
	{"BROWSER_REMOTE_DEBUGGING_HOST", "127.0.0.5", "127.0.0.5", "::1", "::1", "", func(s *startFlags) any { return s.cfg.Browser.Host }, browser.DefaultHost},
	{"BROWSER_REMOTE_DEBUGGING_PORT", "9333", 9333, "9444", 9444, "nine", func(s *startFlags) any { return s.cfg.Browser.Port }, browser.DefaultPort},
	{"AIO_BROWSER_PATH", "/env/chromium", "/env/chromium", "/flag/chrome", "/flag/chrome", "", func(s *startFlags) any { return s.cfg.Browser.Path }, browser.DefaultPath},
	{"AIO_BROWSER_VIEWPORT", "1024x768", "1024x768", "800x600", "800x600", "big", func(s *startFlags) any { return s.cfg.Browser.Viewport }, browser.DefaultViewport},
	{"AIO_PAGE_TOOLS", "true", true, "false", false, "maybe", func(s *startFlags) any { return s.cfg.PageTools }, false},
	{"AIO_LOCKDOWN", "true", true, "false", false, "maybe", func(s *startFlags) any { return s.cfg.Lockdown }, false},
	{"AIO_DATA_DIR", "/env/data", "/env/data", "/flag/data", "/flag/data", "", func(s *startFlags) any { return s.cfg.DataDir }, ""},
	{"AIO_DRAIN_DELAY", "5s", 5 * time.Second, "500ms", 500 * time.Millisecond, "soon", func(s *startFlags) any { return s.cfg.DrainDelay }, time.Duration(0)},
	{"AIO_DRAIN_TIMEOUT", "30s", 30 * time.Second, "2s", 2 * time.Second, "later", func(s *startFlags) any { return s.cfg.DrainTimeout }, host.DefaultDrainTimeout},
	{"AIO_STORE", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", "redis://10.0.0.2:6380/1", "redis://10.0.0.2:6380/1", "", func(s *startFlags) any { return s.cfg.Store }, ""},
}

// parseWith parses args against a fake environment.
func parseWith(args []string, env map[string]string) (*startFlags, error) {
	s := newStartFlags(io.Discard)
	err := s.parse(args, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return s, err
}

// flagFor is the flag reading env.
func flagFor(t *testing.T, env string) string {
	t.Helper()
	for name, e := range newStartFlags(io.Discard).env {
		if e == env {
			return name
		}
	}
	t.Fatalf("no flag reads %s", env)
	return ""
}

// TestEveryVariable: for every variable, a good value is applied, a bad
// one is an error naming the variable, the flag wins over it (even over a
// bad one, which is then not read), and unset or empty is the default.
func TestEveryVariable(t *testing.T) {
	for _, st := range settings {
		t.Run(st.env, func(t *testing.T) {
			name := flagFor(t, st.env)
			s, err := parseWith(nil, map[string]string{st.env: st.good})
			if err != nil || !reflect.DeepEqual(st.get(s), st.wantGood) {
				t.Errorf("%s=%q: got %#v (err %v), want %#v", st.env, st.good, st.get(s), err, st.wantGood)
			}
			s, err = parseWith([]string{"--" + name + "=" + st.flag}, map[string]string{st.env: st.good})
			if err != nil || !reflect.DeepEqual(st.get(s), st.wantFlag) {
				t.Errorf("--%s=%s over %s=%s: got %#v (err %v), want %#v", name, st.flag, st.env, st.good, st.get(s), err, st.wantFlag)
			}
			s, err = parseWith(nil, nil)
			if err != nil || !reflect.DeepEqual(st.get(s), st.defaultVal) {
				t.Errorf("unset: got %#v (err %v), want the default %#v", st.get(s), err, st.defaultVal)
			}
			if st.bad == "" {
				return
			}
			if _, err := parseWith(nil, map[string]string{st.env: st.bad}); err == nil || !strings.Contains(err.Error(), st.env) {
				t.Errorf("%s=%q: err %v, want an error naming %s", st.env, st.bad, err, st.env)
			}
			if _, err := parseWith([]string{"--" + name + "=" + st.flag}, map[string]string{st.env: st.bad}); err != nil {
				t.Errorf("--%s given, bad %s: %v (the flag wins; the variable is not read)", name, st.env, err)
			}
			if _, err := parseWith([]string{"--" + name + "=" + st.bad}, nil); err == nil || !strings.Contains(err.Error(), "-"+name) {
				t.Errorf("--%s=%q: err %v, want an error naming the flag", name, st.bad, err)
			}
			s, err = parseWith(nil, map[string]string{st.env: ""})
			if err != nil || !reflect.DeepEqual(st.get(s), st.defaultVal) {
				t.Errorf("%s empty: got %#v (err %v), want the default", st.env, st.get(s), err)
			}
		})
	}
}

// TestSettingsCoverEveryFlag keeps the table above complete.
func TestSettingsCoverEveryFlag(t *testing.T) {
	covered := map[string]bool{}
	for _, st := range settings {
		covered[st.env] = true
	}
	s := newStartFlags(io.Discard)
	s.fs.VisitAll(func(f *flag.Flag) {
		if env := s.env[f.Name]; env == "" || !covered[env] {
			t.Errorf("flag --%s (env %q) has no row in settings", f.Name, env)
		}
	})
}

func TestEmptyAPIKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"env", nil, map[string]string{"AIO_API_KEY": ""}},
		{"flag", []string{"--api-key="}, nil},
		{"flag over env", []string{"--api-key="}, map[string]string{"AIO_API_KEY": "k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseWith(tc.args, tc.env); err != errEmptyKey {
				t.Fatalf("err %v, want %v", err, errEmptyKey)
			}
		})
	}
	if s, err := parseWith(nil, nil); err != nil || s.cfg.APIKey != "" {
		t.Fatalf("no key: %v %q", err, s.cfg.APIKey)
	}
}

// TestRefusals: start-up errors through the command, with their exit code
// and a message naming the cause.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"non-loopback without key", nil, []string{"--host", "0.0.0.0", "--port", "0", "--cache-dir", "-"}, 1,
			"refusing to listen on a non-loopback address without an API key"},
		{"empty key", map[string]string{"AIO_API_KEY": ""}, []string{"--port", "0", "--cache-dir", "-"}, 2,
			"the API key is configured but empty"},
		{"bad port variable", map[string]string{"AIO_PORT": "abc"}, nil, 2, `AIO_PORT="abc"`},
		{"bad duration variable", map[string]string{"AIO_SESSION_IDLE_TIMEOUT": "soon"}, nil, 2, "AIO_SESSION_IDLE_TIMEOUT"},
		{"port out of range", nil, []string{"--port", "70000", "--cache-dir", "-"}, 1, "port 70000"},
		{"unknown engine", map[string]string{"AIO_ENGINE": "v8"}, []string{"--cache-dir", "-"}, 1,
			`engine "v8" is not built into this binary (built with: ` + strings.Join(host.Engines(), ", ") + ")"},
		{"profiler beyond loopback", nil, []string{"--pprof-addr", "0.0.0.0:6060", "--cache-dir", "-"}, 1, "profiler address"},
		{"unexpected argument", nil, []string{"now"}, 2, `unexpected argument "now"`},
		{"malformed upstream servers", map[string]string{"EXTRA_MCP_SERVERS": `["peer"]`}, nil, 2, `environment variable EXTRA_MCP_SERVERS=`},
		{"duplicate upstream server", map[string]string{"EXTRA_MCP_SERVERS": `{"a":{"url":"http://127.0.0.1:1/mcp"},"a":{"url":"http://127.0.0.1:2/mcp"}}`}, nil, 2, `EXTRA_MCP_SERVERS`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			if code := run(append([]string{"start"}, tc.args...), &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q, want %d and %q", code, errb.String(), tc.code, tc.want)
			}
		})
	}
}

// TestReadmeFlagTable compares README's `aiod start` table with the flag
// set: the same flags, each with its variable and its default.
func TestReadmeFlagTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `--([a-z-]+)` \\| `([A-Z][A-Z_]+)` \\| ([^|]+) \\|")
	value := regexp.MustCompile("^`([^`]*)`$")
	s := newStartFlags(io.Discard)
	seen := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name, env, def := m[1], m[2], strings.TrimSpace(m[3])
		seen[name] = true
		f := s.fs.Lookup(name)
		if f == nil {
			t.Errorf("README lists --%s, which is not a flag", name)
			continue
		}
		if s.env[name] != env {
			t.Errorf("README: --%s reads %s, the code %s", name, env, s.env[name])
		}
		if v := value.FindStringSubmatch(def); v != nil {
			// A value: it must parse to the flag's default.
			fresh := newStartFlags(io.Discard).fs.Lookup(name)
			if err := fresh.Value.Set(v[1]); err != nil || fresh.Value.String() != f.DefValue {
				t.Errorf("README: --%s defaults to %s, the code to %q (%v)", name, def, f.DefValue, err)
			}
		} else if f.DefValue != "" {
			t.Errorf("README: --%s default %q is a description, but the code's default is %q", name, def, f.DefValue)
		}
	}
	s.fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			t.Errorf("--%s is missing from README's flag table", f.Name)
		}
	})
	if len(seen) == 0 {
		t.Fatalf("no flag rows found in README (pattern %s)", row)
	}
}

// TestUpstreamWarnings: each skipped entry of EXTRA_MCP_SERVERS is logged
// once at start-up, naming it and the reason; the loopback entry is kept.
func TestUpstreamWarnings(t *testing.T) {
	t.Setenv("EXTRA_MCP_SERVERS", `{"remote":{"url":"http://example.com/mcp"},"stdio":{"command":"npx"},"ok":{"url":"http://127.0.0.1:9/mcp","prefix":"ok"}}`)
	var errb bytes.Buffer
	cfg, code := parseStart(nil, &errb)
	if code != -1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := []upstream.Server{{Name: "ok", URL: "http://127.0.0.1:9/mcp", Prefix: "ok"}}; !reflect.DeepEqual(cfg.Upstreams, want) {
		t.Fatalf("upstreams %+v, want %+v", cfg.Upstreams, want)
	}
	logs := errb.String()
	for _, name := range []string{"remote", "stdio"} {
		if n := strings.Count(logs, `"server":"`+name+`"`); n != 1 {
			t.Errorf("%d warnings for %q, want 1:\n%s", n, name, logs)
		}
	}
	if strings.Contains(logs, `"server":"ok"`) {
		t.Errorf("a warning for the loopback entry:\n%s", logs)
	}
}
