package caps_test

import (
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

func TestUpstreamOAuth(t *testing.T) {
	ok := `{"a": {"url": "https://a.example/mcp", "oauth": {}},
	        "b": {"url": "https://b.example/mcp", "oauth": {"client_id": "aiod", "client_secret_env": "B_SECRET", "scopes": ["mcp:tools"]}},
	        "c": {"url": "https://c.example/mcp", "oauth": {"grant": "client_credentials", "client_id": "svc", "client_secret_env": "C_SECRET"}},
	        "d": {"url": "http://127.0.0.1:9/mcp", "oauth": {"client_metadata_url": "https://aiod.example/client.json"}}}`
	got, err := caps.ParseUpstreams([]byte(ok), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].OAuth == nil || got[0].OAuth.ClientCredentials() || !got[2].OAuth.ClientCredentials() || got[1].OAuth.Scopes[0] != "mcp:tools" {
		t.Fatalf("%+v", got)
	}
	for _, c := range []struct{ entry, want string }{
		{`{"url": "https://a.example/mcp", "oauth": {"grant": "password"}}`, `grant "password"`},
		{`{"url": "https://a.example/mcp", "oauth": {"grant": "client_credentials", "client_id": "x"}}`, `needs "client_id" and "client_secret_env"`},
		{`{"url": "https://a.example/mcp", "oauth": {"client_secret_env": "X"}}`, `"client_secret_env" needs "client_id"`},
		{`{"url": "https://a.example/mcp", "oauth": {"client_id": "x", "client_secret_env": "1X"}}`, "not an environment variable name"},
		{`{"url": "https://a.example/mcp", "oauth": {"client_metadata_url": "http://aiod.example/c.json"}}`, "want an https URL with a path"},
		{`{"url": "https://a.example/mcp", "oauth": {"client_metadata_url": "https://aiod.example/"}}`, "want an https URL with a path"},
		{`{"url": "https://a.example/mcp", "oauth": {"scopes": ["a b"]}}`, "not a scope token"},
		{`{"url": "https://a.example/mcp", "oauth": {"client_secret": "inline"}}`, "unknown field"},
		{`{"url": "https://a.example/mcp", "oauth": {}, "headers": {"authorization": "Bearer x"}}`, "remove it from \"headers\""},
		{`{"command": "/bin/srv", "oauth": {}}`, "for url servers only"},
	} {
		_, err := caps.ParseUpstreams([]byte(`{"srv":`+c.entry+`}`), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.entry, err, c.want)
		}
	}
}
