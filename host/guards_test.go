package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/plugins/builtin"
)

// guardCase is one tenant of TestGuardPlugins: its own guard entry, a
// call of echo, and what the model must be shown.
type guardCase struct {
	name   string // the tenant
	entry  string // its hooks entry
	era    string // "legacy" or "modern"
	want   []string
	isErr  bool
	within time.Duration // 0: 5 s
}

func guardEntry(before, after string, failOpen bool) string {
	return fmt.Sprintf(`{"plugin":"testguard","tools":["echo"],"fail_open":%v,"config":{"before":%q,"after":%q}}`, failOpen, before, after)
}

// TestGuardPlugins: each answer of each hook op, under both eras, and
// guards that trap, loop, flood, answer nonsense, rewrite into arguments
// the tool refuses, or are not loaded: a call fails closed (or goes on
// when the entry says fail_open), and the host keeps serving. Each case
// is a tenant of one policy whose own hooks entry is the guard under test.
func TestGuardPlugins(t *testing.T) {
	t.Parallel()
	stopped := "Stopped: the operator's guard testguard failed (the call fails closed): "
	cases := []guardCase{
		{name: "allow", entry: guardEntry("allow", "keep", false), want: []string{"hi"}},
		{name: "deny", entry: guardEntry("deny", "keep", false), isErr: true,
			want: []string{"Blocked by the operator's hook (guard testguard): testguard says no to echo for deny (legacy)"}},
		{name: "deny-modern", era: "modern", entry: guardEntry("deny", "keep", false), isErr: true,
			want: []string{"Blocked by the operator's hook (guard testguard): testguard says no to echo for deny-modern (modern)"}},
		{name: "rewrite", entry: guardEntry("rewrite", "keep", false), want: []string{"rewritten by testguard"}},
		{name: "rewrite-modern", era: "modern", entry: guardEntry("rewrite", "keep", false), want: []string{"rewritten by testguard"}},
		{name: "rewrite-invalid", entry: guardEntry("rewrite-invalid", "keep", false), isErr: true, want: []string{"invalid arguments"}},
		{name: "rewrite-not-object", entry: guardEntry("rewrite-not-object", "keep", false), isErr: true,
			want: []string{stopped + "a rewrite whose arguments are not a JSON object"}},
		{name: "replace", entry: guardEntry("allow", "replace", false), want: []string{"replaced by testguard"}},
		{name: "add", entry: guardEntry("allow", "add", false),
			want: []string{"hi", `[guard testguard] testguard saw echo: {"content":[{"type":"text","text":"hi"}],"isError":false}`}},
		{name: "add-modern", era: "modern", entry: guardEntry("allow", "add", false),
			want: []string{"hi", `[guard testguard] testguard saw echo: {"content":[{"type":"text","text":"hi"}],"isError":false}`}},
		{name: "nonsense", entry: guardEntry("nonsense", "keep", false), isErr: true,
			want: []string{stopped + `the answer "maybe" before a call (want allow, deny or rewrite)`}},
		{name: "nonsense-after", entry: guardEntry("allow", "nonsense", false), isErr: true,
			want: []string{stopped + `the answer "maybe" after a call (want keep, replace or add)`}},
		{name: "trap", entry: guardEntry("trap", "keep", false), isErr: true, want: []string{stopped}},
		{name: "trap-after", entry: guardEntry("allow", "trap", false), isErr: true, want: []string{stopped}},
		{name: "loop", entry: guardEntry("loop", "keep", false), isErr: true, want: []string{stopped}, within: 10 * time.Second},
		{name: "flood", entry: guardEntry("flood", "keep", false), isErr: true, want: []string{stopped}},
		{name: "flood-output", entry: guardEntry("allow", "flood-output", false), isErr: true, want: []string{stopped}},
		{name: "trap-fail-open", entry: guardEntry("trap", "trap", true), want: []string{"hi"}},
		{name: "not-loaded", entry: `{"plugin":"nosuchguard"}`, isErr: true,
			want: []string{"Stopped: the operator's guard nosuchguard failed (the call fails closed): guard plugin nosuchguard is not loaded (or declares no hooks)"}},
		{name: "not-loaded-fail-open", entry: `{"plugin":"nosuchguard","fail_open":true}`, want: []string{"hi"}},
		{name: "other-tools-only", entry: `{"plugin":"testguard","tools":["other_*"],"config":{"before":"deny"}}`, want: []string{"hi"}},
	}
	// the example guards in C and Rust (the SDKs' hook ops): each answer,
	// under both eras
	for _, g := range []string{"guard-c", "guard-rust"} {
		entry := func(cfg string) string { return `{"plugin":"` + g + `","tools":["echo"],"config":{` + cfg + `}}` }
		cases = append(cases,
			guardCase{name: g + "-noop", entry: entry(""), want: []string{"hi"}},
			guardCase{name: g + "-noop-modern", era: "modern", entry: entry(""), want: []string{"hi"}},
			guardCase{name: g + "-deny", entry: entry(`"before":"deny"`), isErr: true,
				want: []string{"Blocked by the operator's hook (guard " + g + "): " + g + " says no to echo for " + g + "-deny"}},
			guardCase{name: g + "-deny-modern", era: "modern", entry: entry(`"before":"deny"`), isErr: true,
				want: []string{"Blocked by the operator's hook (guard " + g + "): " + g + " says no to echo for " + g + "-deny-modern"}},
			guardCase{name: g + "-rewrite", entry: entry(`"before":"rewrite"`), want: []string{"rewritten by " + g}},
			guardCase{name: g + "-add", entry: entry(`"after":"add"`), want: []string{"hi", "[guard " + g + "] " + g + " saw echo"}},
			guardCase{name: g + "-replace-modern", era: "modern", entry: entry(`"after":"replace"`), want: []string{"replaced by " + g}},
		)
	}
	work := t.TempDir()
	plugins := filepath.Join(work, "plugins")
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, plugins, "host/hooks/testdata/testguard", nil, nil)
	testplugins.Package(t, plugins, "plugins/examples/guard-c", nil, nil)
	testplugins.Package(t, plugins, "plugins/examples/guard-rust", nil, nil)
	var tenants []string
	for _, c := range cases {
		tenants = append(tenants, fmt.Sprintf(`%q:{"keys":[%q],"tools":["echo"],"hooks":[%s]}`, c.name, keyLine(c.name+"-secret-key-0123456789"), c.entry))
	}
	policy := filepath.Join(work, "policy.json")
	writeHookPolicy(t, policy, `{"limits":{"default_timeout_ms":2000,"max_memory_mib":64,"default_memory_mib":64},"tenants":{`+strings.Join(tenants, ",")+`}}`, 0o600)
	_, url := serveHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy})
	// The first call waits for the plugins' background load and first
	// instances: the cases' time bounds are for the hooks, not for that
	// (under a loaded race run it took 11 s).
	if texts, isErr := callEcho(t, url, "allow-secret-key-0123456789", "", `{"text":"warm"}`); isErr || len(texts) == 0 || texts[0] != "warm" {
		t.Fatalf("warm-up call: %q (isError %v)", texts, isErr)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			texts, isErr := callEcho(t, url, c.name+"-secret-key-0123456789", c.era, `{"text":"hi"}`)
			if isErr != c.isErr || len(texts) != len(c.want) {
				t.Fatalf("%q (isError %v), want %q (%v)", texts, isErr, c.want, c.isErr)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(texts[i], w) {
					t.Errorf("block %d: %q, want it to start with %q", i, texts[i], w)
				}
			}
			within := c.within
			if within == 0 {
				within = 5 * time.Second
			}
			if d := time.Since(start); d > within {
				t.Errorf("took %s, want at most %s", d, within)
			}
			// the host keeps serving
			if texts, isErr := callEcho(t, url, "allow-secret-key-0123456789", "", `{"text":"still here"}`); isErr || texts[0] != "still here" {
				t.Fatalf("after %s: %q", c.name, texts)
			}
		})
	}
}

// callEcho calls echo as the key's tenant under era ("" or "legacy", or
// "modern") and returns the result's texts and isError.
func callEcho(t *testing.T, url, key, era, args string) ([]string, bool) {
	t.Helper()
	body := call("echo", args)
	var hdr map[string]string
	if era == "modern" {
		body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":` + args + `,` + modernMeta + `}}`
		hdr = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
	}
	r := do(t, "POST", url+"/mcp", key, body, hdr)
	var env struct {
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &env) != nil || env.Result == nil {
		t.Fatalf("echo: %d %s", r.status, r.body)
	}
	var out []string
	for _, c := range env.Result.Content {
		out = append(out, c.Text)
	}
	return out, env.Result.IsError
}

// TestSecretsGuard: the embedded secrets guard, switched on by name in the
// policy, denies a call whose arguments hold a credential, and (told to
// let arguments through) redacts the credential the result echoes; a
// tenant without the guard sees the result as it is.
func TestSecretsGuard(t *testing.T) {
	work := t.TempDir()
	policy := filepath.Join(work, "policy.json")
	writeHookPolicy(t, policy, `{"hooks":[{"plugin":"secrets","tools":["echo"]}],"tenants":{
	  "alice":{"keys":[`+fmt.Sprintf("%q", keyLine(aliceKey))+`],"tools":["echo"]},
	  "bob":{"keys":[`+fmt.Sprintf("%q", keyLine(bobKey))+`],"tools":["echo"],"hooks":[{"plugin":"secrets","tools":["echo"],"config":{"arguments":"allow"}}]}}}`, 0o600)
	_, url := serveHost(t, host.Config{PluginsDir: echoDir(t), PolicyFile: policy, Builtins: builtin.FS()})
	key := "AKIAIOSFODNN7EXAMPLE"
	for _, tc := range []struct {
		name, key, text, want string
		isErr                 bool
	}{
		{"clean text passes", aliceKey, "nothing to hide", "nothing to hide", false},
		{"a key in the arguments is denied", aliceKey, "use " + key,
			"Blocked by the operator's hook (guard secrets): the arguments hold a credential (aws_access_key_id): the call was not made", true},
		// bob's own entry lets arguments through; the top-level entry
		// runs first and still denies them
		{"the top-level guard runs first", bobKey, "use " + key, "Blocked by the operator's hook (guard secrets)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			texts, isErr := callEcho(t, url, tc.key, "", fmt.Sprintf(`{"text":%q}`, tc.text))
			if isErr != tc.isErr || len(texts) != 1 || !strings.HasPrefix(texts[0], tc.want) {
				t.Fatalf("%q (isError %v), want %q (%v)", texts, isErr, tc.want, tc.isErr)
			}
		})
	}

	// a result that holds a credential is redacted
	writeHookPolicy(t, policy, `{"hooks":[{"plugin":"secrets","tools":["echo"],"config":{"arguments":"allow"}}]}`, 0o600)
	h, url2 := serveHost(t, host.Config{PluginsDir: echoDir(t), PolicyFile: policy, Builtins: builtin.FS()})
	texts, isErr := callEcho(t, url2, "", "modern", fmt.Sprintf(`{"text":%q}`, "the key is "+key+"."))
	if isErr || len(texts) != 1 || texts[0] != "the key is [redacted:aws_access_key_id]." {
		t.Fatalf("%q (isError %v)", texts, isErr)
	}
	// results: block withholds it
	writeHookPolicy(t, policy, `{"hooks":[{"plugin":"secrets","tools":["echo"],"config":{"arguments":"allow","results":"block"}}]}`, 0o600)
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	texts, isErr = callEcho(t, url2, "", "", fmt.Sprintf(`{"text":%q}`, "the key is "+key+"."))
	if !isErr || len(texts) != 1 || texts[0] != "the result of echo held a credential (aws_access_key_id) and was withheld by the secrets guard" {
		t.Fatalf("%q (isError %v)", texts, isErr)
	}
}

// TestArgPolicyGuard: the argument-policy guard denies a call whose
// argument at a JSON path matches the operator's pattern, and lets the
// others run; a rule that does not parse denies every call.
func TestArgPolicyGuard(t *testing.T) {
	work := t.TempDir()
	plugins := filepath.Join(work, "plugins")
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, plugins, "plugins/guards/argpolicy", nil, nil)
	policy := filepath.Join(work, "policy.json")
	writeHookPolicy(t, policy, `{"hooks":[{"plugin":"argpolicy","tools":["echo"],"config":{"deny:text":"(^|[;&|]\\s*)rm\\s+-rf\\s+/"}}],"tenants":{
	  "alice":{"keys":[`+fmt.Sprintf("%q", keyLine(aliceKey))+`],"tools":["echo"],"hooks":[{"plugin":"argpolicy","config":{"deny:text":"("}}]},
	  "bob":{"keys":[`+fmt.Sprintf("%q", keyLine(bobKey))+`],"tools":["echo"]}}}`, 0o600)
	_, url := serveHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy})
	for _, tc := range []struct {
		name, key, era, text, want string
		isErr                      bool
	}{
		{"allowed", bobKey, "", "ls -la", "ls -la", false},
		{"denied", bobKey, "", "cd /; rm -rf /", "Blocked by the operator's hook (guard argpolicy): argument text matches the operator's rule deny:text", true},
		{"denied, modern", bobKey, "modern", "rm -rf /home", "Blocked by the operator's hook (guard argpolicy): argument text matches", true},
		{"a broken rule denies all", aliceKey, "", "ls", "Blocked by the operator's hook (guard argpolicy): the argument policy does not parse: deny:text", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			texts, isErr := callEcho(t, url, tc.key, tc.era, fmt.Sprintf(`{"text":%q}`, tc.text))
			if isErr != tc.isErr || len(texts) != 1 || !strings.HasPrefix(texts[0], tc.want) {
				t.Fatalf("%q (isError %v), want %q (%v)", texts, isErr, tc.want, tc.isErr)
			}
		})
	}
}

// TestAuditGuard: the audit-enrichment guard's additions (argument names,
// never values; content kinds; the error flag; the operator's labels)
// reach the audit log's entry of the call.
func TestAuditGuard(t *testing.T) {
	work := t.TempDir()
	plugins := filepath.Join(work, "plugins")
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, plugins, "plugins/guards/audit", nil, nil)
	policy := filepath.Join(work, "policy.json")
	writeHookPolicy(t, policy, `{"hooks":[{"plugin":"audit","config":{"label:team":"payments","other":"x"}}]}`, 0o600)
	auditPath := filepath.Join(work, "audit.log")
	_, url := serveHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy, TenancyConfig: host.TenancyConfig{AuditLog: auditPath}})
	texts, isErr := callEcho(t, url, "", "", `{"text":"a secret value"}`)
	if isErr || len(texts) != 1 || texts[0] != "a secret value" {
		t.Fatalf("%q (isError %v): the guard must not change what the model is shown", texts, isErr)
	}
	var entry struct {
		Method   string          `json:"method"`
		Tool     string          `json:"tool"`
		Enriched json.RawMessage `json:"enriched"`
	}
	waitFor(t, 5*time.Second, "the audit line", func() bool {
		b, _ := os.ReadFile(auditPath)
		for _, line := range strings.Split(string(b), "\n") {
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Method == "tools/call" {
				return true
			}
		}
		return false
	})
	want := `{"argument_names":["text"],"content_types":["text"],"is_error":false,"labels":{"team":"payments"}}`
	if entry.Tool != "echo" || string(entry.Enriched) != want {
		t.Fatalf("audit entry of %s enriched with %s, want %s", entry.Tool, entry.Enriched, want)
	}
	if strings.Contains(string(entry.Enriched), "secret value") {
		t.Fatal("an argument value reached the audit log")
	}
}

// TestGuardFamilies: a guard gets the families its grant gives it, like
// any plugin. Without the grant of the state family it imports, the host
// refuses it at load and the calls it guards fail closed; once a reloaded
// policy grants it, it keeps its count in state and denies every third.
func TestGuardFamilies(t *testing.T) {
	work := t.TempDir()
	plugins := filepath.Join(work, "plugins")
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, plugins, "host/hooks/testdata/stateguard", host.AllFamilies(), nil)
	policy := filepath.Join(work, "policy.json")
	hooks := `"hooks":[{"plugin":"stateguard","tools":["echo"]}]`
	writeHookPolicy(t, policy, `{`+hooks+`}`, 0o600)
	h, url := serveHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy})
	texts, isErr := callEcho(t, url, "", "", `{"text":"hi"}`)
	if !isErr || len(texts) != 1 || !strings.HasPrefix(texts[0], "Stopped: the operator's guard stateguard failed (the call fails closed): guard plugin stateguard is not loaded") {
		t.Fatalf("ungranted guard: %q (isError %v)", texts, isErr)
	}
	writeHookPolicy(t, policy, `{`+hooks+`,"plugins":{"stateguard":{"state":{}}}}`, 0o600)
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		texts, isErr := callEcho(t, url, "", "", `{"text":"hi"}`)
		want := "hi"
		if i%3 == 0 {
			want = fmt.Sprintf("Blocked by the operator's hook (guard stateguard): call %d of default", i)
		}
		if len(texts) != 1 || texts[0] != want || isErr != (i%3 == 0) {
			t.Fatalf("call %d: %q (isError %v), want %q", i, texts, isErr, want)
		}
	}
}

// keyTransport adds a tenant's key to every request of the go-sdk client.
type keyTransport struct{ key string }

func (b keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGuardChainEcho measures what three no-op C guards (each asked before
// and after) add to the echo call a real MCP client sees over HTTP: the
// go-sdk client, one session per tenant, a tenant without hooks and one
// with the three guards, calls one at a time in rounds that alternate the
// two (so the load of a shared machine hits them alike). It logs each
// one's median and p99 and their ratios (go test -v -run GuardChainEcho;
// make bench reads the line); it checks that every answer is echo's.
func TestGuardChainEcho(t *testing.T) {
	rounds, per := 20, 250
	if testing.Short() {
		rounds, per = 2, 20 // the check, not the figures
	}
	work := t.TempDir()
	plugins := filepath.Join(work, "plugins")
	testplugins.Package(t, plugins, "plugins/examples/echo", nil, nil)
	testplugins.Package(t, plugins, "plugins/examples/guard-c", nil, nil)
	noop := `{"plugin":"guard-c","tools":["echo"]}`
	policy := filepath.Join(work, "policy.json")
	writeHookPolicy(t, policy, `{"tenants":{`+
		`"plain":{"keys":[`+fmt.Sprintf("%q", keyLine("plain-secret-key-0123456789"))+`],"tools":["echo"]},`+
		`"guarded":{"keys":[`+fmt.Sprintf("%q", keyLine("guarded-secret-key-0123456789"))+`],"tools":["echo"],"hooks":[`+noop+`,`+noop+`,`+noop+`]}}}`, 0o600)
	_, url := serveHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	connect := func(key string) *sdkmcp.ClientSession {
		cl := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "chain-bench", Version: "1"}, nil)
		cs, err := cl.Connect(ctx, &sdkmcp.StreamableClientTransport{Endpoint: url + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: keyTransport{key}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	sessions := []*sdkmcp.ClientSession{connect("plain-secret-key-0123456789"), connect("guarded-secret-key-0123456789")}
	names := []string{"no hooks", "three C guards"}
	call := func(cs *sdkmcp.ClientSession) {
		res, err := cs.CallTool(ctx, &sdkmcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("echo: %+v", res)
		}
		if tc, ok := res.Content[0].(*sdkmcp.TextContent); !ok || tc.Text != "hi" {
			t.Fatalf("echo answered %+v", res.Content[0])
		}
	}
	for _, cs := range sessions { // warm the instances and the connections
		for range 100 {
			call(cs)
		}
	}
	lat := make([][]time.Duration, len(sessions))
	for range rounds {
		for i, cs := range sessions {
			for range per {
				t0 := time.Now()
				call(cs)
				lat[i] = append(lat[i], time.Since(t0))
			}
		}
	}
	q := func(ds []time.Duration, f float64) time.Duration { return ds[int(float64(len(ds)-1)*f)] }
	for i := range lat {
		slices.Sort(lat[i])
		t.Logf("%-15s median %8s p99 %8s (%d calls)", names[i], q(lat[i], 0.5), q(lat[i], 0.99), len(lat[i]))
	}
	t.Logf("chain-echo: median +%s (%.2fx), p99 %.2fx", q(lat[1], 0.5)-q(lat[0], 0.5),
		float64(q(lat[1], 0.5))/float64(q(lat[0], 0.5)), float64(q(lat[1], 0.99))/float64(q(lat[0], 0.99)))
}
