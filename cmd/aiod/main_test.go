package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "aiod ") {
		t.Fatalf("version printed %q", out.String())
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestFlagsAndEnv checks every setting reads its environment variable and
// that the flag wins.
func TestFlagsAndEnv(t *testing.T) {
	t.Setenv("AIO_HOST", "127.0.0.2")
	t.Setenv("AIO_PORT", "19000")
	t.Setenv("AIO_PLUGINS_DIR", "/env/plugins")
	t.Setenv("AIO_CACHE_DIR", "/env/cache")
	t.Setenv("AIO_WORKSPACE", "/env/ws")
	t.Setenv("AIO_POLICY", "/env/policy.json")
	t.Setenv("AIO_API_KEY", "env-key")
	t.Setenv("AIO_IDLE_TIMEOUT", "90s")
	var errb bytes.Buffer
	cfg, _, code := parseStart(nil, &errb)
	if code != -1 {
		t.Fatalf("parse: %d %s", code, errb.String())
	}
	if cfg.Host != "127.0.0.2" || cfg.Port != 19000 || cfg.PluginsDir != "/env/plugins" || cfg.CacheDir != "/env/cache" ||
		cfg.Workspace != "/env/ws" || cfg.PolicyFile != "/env/policy.json" || cfg.APIKey != "env-key" || !cfg.APIKeySet ||
		cfg.IdleTimeout != 90*time.Second {
		t.Fatalf("env not applied: %+v", cfg)
	}
	cfg, _, code = parseStart([]string{"--host", "127.0.0.3", "--port", "19001", "--plugins-dir", "/flag/plugins",
		"--cache-dir", "-", "--workspace", "/flag/ws", "--api-key", "flag-key", "--idle-timeout", "1m"}, &errb)
	if code != -1 {
		t.Fatalf("parse: %d %s", code, errb.String())
	}
	if cfg.Host != "127.0.0.3" || cfg.Port != 19001 || cfg.PluginsDir != "/flag/plugins" || cfg.CacheDir != "-" ||
		cfg.Workspace != "/flag/ws" || cfg.APIKey != "flag-key" || cfg.IdleTimeout != time.Minute {
		t.Fatalf("flags do not win: %+v", cfg)
	}
}

func TestDefaults(t *testing.T) {
	for _, k := range []string{"AIO_HOST", "AIO_PORT", "AIO_API_KEY"} {
		t.Setenv(k, "")
	}
	var errb bytes.Buffer
	cfg, _, code := parseStart([]string{"--host", "127.0.0.1", "--port", "18091"}, &errb)
	if code != -1 || cfg.Host != "127.0.0.1" || cfg.Port != 18091 {
		t.Fatalf("defaults: %d %+v", code, cfg)
	}
}

// TestRefusals: beyond loopback without a key, and an empty key, refuse to
// start with a clear message.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"non-loopback without key", nil, []string{"--host", "0.0.0.0", "--port", "0", "--cache-dir", "-"},
			"refusing to listen on a non-loopback address without an API key"},
		{"empty key", map[string]string{"AIO_API_KEY": ""}, []string{"--port", "0", "--cache-dir", "-"},
			"the API key is configured but empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			if code := run(append([]string{"start"}, tc.args...), &out, &errb); code != 1 || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, errb.String(), tc.want)
			}
		})
	}
}
