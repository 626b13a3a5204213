package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream/oauth"
	"github.com/aiodhq/aiod/host/upstream/oauth/oauthtest"
)

// TestPolicyUpstreamOAuth: a server of the policy that logs in with OAuth
// (oidc-provider in front of it): after a login kept under --data-dir
// with --upstream-key-file, aiod publishes its tools and its calls carry
// the token; without the key file aiod refuses to start, naming the flag;
// without a login the server is not offered and a call says how to log in.
func TestPolicyUpstreamOAuth(t *testing.T) {
	m := oauthtest.StartMCP(t)
	dir := t.TempDir()
	policy := writePolicy(t, `{"upstreams": {"prot": {"url": "`+m.URL+`", "prefix": "prot", "oauth": {"client_id": "aiod-public"}}}}`)
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte(strings.Repeat("0f", 32)), 0o600)
	data := filepath.Join(dir, "data")

	_, err := host.New(context.Background(), host.Config{PolicyFile: policy, LockdownConfig: host.LockdownConfig{DataDir: data}, CacheDir: testplugins.CacheDir()})
	if err == nil || !strings.Contains(err.Error(), `"prot" logs in with OAuth`) || !strings.Contains(err.Error(), "--upstream-key-file") {
		t.Fatalf("no key file: %v", err)
	}

	cfg := host.Config{PolicyFile: policy, LockdownConfig: host.LockdownConfig{DataDir: data}, UpstreamKeyFile: key, UpstreamListTimeout: 5 * time.Second}
	url := startHost(t, cfg) + "/mcp"
	if tools := tenantTools(t, do(t, "POST", url, "", listTools, nil).body); slices.Contains(tools, "prot_echo") {
		t.Fatalf("tools before a login: %v", tools)
	}
	r := do(t, "POST", url, "", call("prot_echo", `{"text":"hi"}`), nil)
	if !strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, "aiod upstream login prot") {
		t.Fatalf("call before a login: %s", r.body)
	}

	store, err := oauth.OpenStore(data, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = oauth.Login(ctx, oauth.LoginOptions{Server: caps.UpstreamServer{Name: "prot", URL: m.URL, OAuth: &caps.UpstreamOAuth{ClientID: "aiod-public"}},
		Store: store, Open: func(authURL string) error {
			u, err := oauthtest.Browser(t, authURL)
			if err != nil {
				return err
			}
			return oauthtest.Visit(u)
		}})
	if err != nil {
		t.Fatal(err)
	}
	// The running aiod reads the new login: its tools come back.
	var tools []string
	for i := 0; i < 100 && !slices.Contains(tools, "prot_echo"); i++ {
		tools = tenantTools(t, do(t, "POST", url, "", listTools, nil).body)
		time.Sleep(50 * time.Millisecond)
	}
	if !slices.Contains(tools, "prot_echo") {
		t.Fatalf("tools after the login: %v", tools)
	}
	r = do(t, "POST", url, "", call("prot_echo", `{"text":"hi"}`), nil)
	if !strings.Contains(r.body, "echo: hi") || strings.Contains(r.body, `"isError":true`) {
		t.Fatalf("call after the login: %s", r.body)
	}
}
