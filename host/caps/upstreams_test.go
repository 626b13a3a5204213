package caps_test

import (
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

// TestParseUpstreams: the policy's "upstreams" entries in written order;
// every malformed entry is an error naming the server and the problem,
// never a header's value.
func TestParseUpstreams(t *testing.T) {
	ok := `{"zeta":{"url":"https://mcp.example.com/mcp","prefix":"z","headers":{"Authorization":"Bearer ${TOKEN}"},"ca_file":"/etc/aiod/ca.pem","tenants":["alice"]},
	        "alpha":{"url":"http://127.0.0.1:9/sse","transport":"sse"},
	        "fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/workspace"],"env":["NODE_OPTIONS"],"hosts":["registry.example:443"],"sha256":"` + strings.Repeat("0f", 32) + `"}}`
	tenants := map[string]caps.Tenant{"alice": {}, "bob": {}}
	got, err := caps.ParseUpstreams([]byte(ok), tenants)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "zeta,alpha,fs" || !got[2].Stdio() || got[0].Stdio() {
		t.Fatalf("entries: %+v", got)
	}
	if !got[0].UpstreamTenantAllowed("alice") || got[0].UpstreamTenantAllowed("bob") || !got[1].UpstreamTenantAllowed("bob") {
		t.Fatal("tenants")
	}
	for _, c := range []struct{ entry, want string }{
		{`{"url":"http://mcp.example.com/mcp"}`, "plain http is accepted only on 127.0.0.1"},
		{`{"url":"http://127.0.0.2/mcp"}`, "plain http is accepted only on"},
		{`{"url":"http://0.0.0.0/mcp"}`, "plain http is accepted only on"},
		{`{"url":"ftp://127.0.0.1/mcp"}`, `scheme "ftp"`},
		{`{"url":"https://user:pw@example.com/mcp"}`, "credentials in the URL"},
		{`{"url":"https:///mcp"}`, "no host"},
		{`{"url":"https://example.com/mcp","transport":"websocket"}`, `transport "websocket"`},
		{`{"url":"http://127.0.0.1/mcp","ca_file":"/ca.pem"}`, "only for an https url"},
		{`{"url":"https://example.com/mcp","ca_file":"ca.pem"}`, "absolute path"},
		{`{"url":"https://example.com/mcp","headers":{"Mcp-Session-Id":"x"}}`, "set by the transport"},
		{`{"url":"https://example.com/mcp","headers":{"Content-Type":"x"}}`, "set by the transport"},
		{`{"url":"https://example.com/mcp","headers":{"Bad Name":"x"}}`, "not a valid header name"},
		{`{"url":"https://example.com/mcp","headers":{"X-K":"sk-live-secret\r\nX-Evil: 1"}}`, "control character"},
		{`{"url":"https://example.com/mcp","headers":{"X-K":"sk-live-secret ${NOPE"}}`, `without its "}"`},
		{`{"url":"https://example.com/mcp","headers":{"X-K":"${1BAD}"}}`, "not an environment variable name"},
		{`{"url":"https://example.com/mcp","tenants":["mallory"]}`, `"mallory" is not a tenant`},
		{`{"url":"https://example.com/mcp","args":["x"]}`, "for command servers only"},
		{`{"command":"npx","headers":{"X":"y"}}`, "for url servers only"},
		{`{"command":"npx","env":["A=B"]}`, "not an environment variable name"},
		{`{"command":"npx","hosts":["*.example.com"]}`, "want a host name"},
		{`{"command":"npx","hosts":["example.com:http"]}`, "port is not a number"},
		{`{"command":"npx","sha256":"ABC"}`, "64 lowercase hex"},
		{`{"command":" npx"}`, "not a program name"},
		{`{"url":"https://example.com/mcp","command":"npx"}`, "both"},
		{`{}`, "neither"},
		{`{"url":"https://example.com/mcp","prefix":"a b"}`, "prefix"},
		{`{"url":"https://example.com/mcp","unknown":1}`, "unknown field"},
		{`{"url":"https://example.com/mcp","url":"https://example.com/x"}`, "duplicate field"},
		{`[]`, "cannot unmarshal"},
	} {
		_, err := caps.ParseUpstreams([]byte(`{"srv":`+c.entry+`}`), tenants)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"srv"`) {
			t.Errorf("%s: got %v, want an error with %q naming the server", c.entry, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-live-secret") {
			t.Errorf("%s: the error echoes a header value: %v", c.entry, err)
		}
	}
	for _, c := range []struct{ raw, want string }{
		{`{"a b":{"url":"https://example.com"}}`, "server name"},
		{`{"a":{"url":"https://example.com"},"a":{"url":"https://example.com"}}`, "appears twice"},
		{`[]`, "want an object"},
		{`{"a":{"url":"https://example.com"}} x`, "trailing data"},
	} {
		if _, err := caps.ParseUpstreams([]byte(c.raw), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.raw, err, c.want)
		}
	}
}

// TestPolicyUpstreamTenants: a server whose "tenants" leaves a tenant out
// is refused to it even when the tenant's own "upstreams" says "*"; one
// without "tenants" follows the tenant's list; a server of
// EXTRA_MCP_SERVERS (not in the policy) is unchanged.
func TestPolicyUpstreamTenants(t *testing.T) {
	p, err := caps.ParsePolicy([]byte(`{"tenants":{"alice":{"keys":[],"upstreams":["*"]},"bob":{"keys":[],"upstreams":["*"]},"carol":{"keys":[],"upstreams":["open"]}},
	  "upstreams":{"private":{"url":"https://a.example/mcp","tenants":["alice"]},"open":{"url":"https://b.example/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tenant, server string
		want           bool
	}{
		{"alice", "private", true}, {"bob", "private", false}, {"carol", "private", false},
		{"alice", "open", true}, {"bob", "open", true}, {"carol", "open", true},
		{"bob", "from-env", true}, {"carol", "from-env", false},
	} {
		if got := p.Tenants[c.tenant].UpstreamAllowed(c.server); got != c.want {
			t.Errorf("%s may use %s: %v, want %v", c.tenant, c.server, got, c.want)
		}
	}
}

// FuzzParseUpstreams: never panics; what it accepts has a valid name,
// exactly one of url and command, and an https or loopback http URL.
func FuzzParseUpstreams(f *testing.F) {
	for _, s := range []string{
		`{"a":{"url":"https://x.example/mcp","headers":{"A":"${B}"}}}`,
		`{"b":{"command":"npx","args":["-y"],"env":["X"],"hosts":["h:1"]}}`,
		`{"c":{"url":"http://[::1]:9/mcp","transport":"sse","tenants":["*"]}}`,
		`{"d":{"url":"http://::1:9/mcp"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := caps.ParseUpstreams(data, nil)
		if err != nil {
			return
		}
		for _, s := range got {
			if (s.URL == "") == (s.Command == "") {
				t.Fatalf("%q: url and command", s.Name)
			}
			if s.URL != "" && !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://") {
				t.Fatalf("%q: url %q accepted", s.Name, s.URL)
			}
		}
	})
}

// FuzzExpandVars: never panics; an expansion holds no control character
// but tab; a string without "$" is itself.
func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"Bearer ${T}", "$$${A}$", "${", "${}", "x${A}y${B}", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := caps.ExpandVars(s, func(k string) (string, bool) { return "v-" + k, len(k)%2 == 0 })
		if err != nil {
			return
		}
		for i := 0; i < len(out); i++ {
			if out[i] < 0x20 && out[i] != '\t' || out[i] == 0x7f {
				t.Fatalf("%q expands to a control character: %q", s, out)
			}
		}
		if !strings.Contains(s, "$") && out != s {
			t.Fatalf("%q expands to %q", s, out)
		}
	})
}
