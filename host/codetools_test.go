package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/plugins/builtin"
)

// TestCodeToolsUpstreams: a program's calls of an upstream's tools go
// through the same catalogue as a client's: unannotated, they are the
// model's to call; widened by --code-tools they run; withheld by the
// pins, they are unknown to the program as to a client.
func TestCodeToolsUpstreams(t *testing.T) {
	t.Parallel() // its own host (and browser), on free ports: it waits more than it computes
	if !builtin.Present() {
		if testing.Short() {
			t.Skip("the built-in plugins are not built (make build; make test builds them)")
		}
		t.Fatal("the built-in plugins are not built (make build)")
	}
	up := newGoUpstream(t, true)
	emptyPins := filepath.Join(t.TempDir(), "pins.json")
	if err := os.WriteFile(emptyPins, []byte(`{"version":1,"servers":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	program := `for n in ["up_echo", "up_nothing"]:
    try:
        print(call(n, {"text": "hi"}))
    except ToolError as e:
        print(e.kind, e)`
	for _, tc := range []struct {
		name  string
		edit  func(*host.Config)
		want  string
		calls string // what a client's tools/call of up_echo answers
	}{
		{name: "not annotated read-only", edit: func(*host.Config) {},
			want: "refused up_echo may change something: it is not called from code; make that call yourself\nunknown unknown tool: up_nothing\n", calls: `"text":"hi"`},
		{name: "widened", edit: func(c *host.Config) { c.CodeTools = []string{"up_*"} },
			want: "hi\nunknown unknown tool: up_nothing\n", calls: `"text":"hi"`},
		{name: "withheld by the pins", edit: func(c *host.Config) { c.CodeTools, c.PinUpstreams = []string{"*"}, emptyPins },
			want: "unknown unknown tool: up_echo\nunknown unknown tool: up_nothing\n", calls: `"isError":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := startUpstreamHost(t, []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}}, func(c *host.Config) {
				c.Builtins = builtin.FS()
				tc.edit(c)
			})
			args, _ := json.Marshal(map[string]any{"language": "python", "code": program})
			a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_execute_code","arguments":`+string(args)+`}}`)
			if a.Error != nil || len(a.Result.Content) != 1 {
				t.Fatalf("sandbox_execute_code: %s", raw)
			}
			var out struct{ Status, Stdout, Stderr string }
			if err := json.Unmarshal([]byte(a.Result.Content[0].Text), &out); err != nil {
				t.Fatal(err)
			}
			if out.Status != "ok" || out.Stdout != tc.want {
				t.Fatalf("program: %s %q, want %q (stderr %q)", out.Status, out.Stdout, tc.want, out.Stderr)
			}
			_, raw = rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"hi"}}}`)
			if !strings.Contains(raw, tc.calls) {
				t.Errorf("a client's call of up_echo: %s, want %s", raw, tc.calls)
			}
		})
	}
}

// TestCodeToolsWithoutGrant: an operator's policy entry for the code tool
// without the process tools grant takes the channel away: programs run,
// and a call raises ToolError of kind unavailable.
func TestCodeToolsWithoutGrant(t *testing.T) {
	t.Parallel() // its own host (and browser), on free ports: it waits more than it computes
	if !builtin.Present() {
		if testing.Short() {
			t.Skip("the built-in plugins are not built (make build; make test builds them)")
		}
		t.Fatal("the built-in plugins are not built (make build)")
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"plugins":{"sandbox_execute_code":{"process":{"commands":["python3","node"],"cwd":["$SANDBOX"]}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startHost(t, host.Config{Builtins: builtin.FS(), PolicyFile: policy})
	for _, tc := range []struct{ lang, code string }{
		{"python", "try:\n    tools.sandbox_get_context()\nexcept ToolError as e:\n    print(e.kind, e)"},
		{"javascript", "try { tools.sandbox_get_context() } catch (e) { console.log(e.kind, e.message) }"},
	} {
		args, _ := json.Marshal(map[string]any{"language": tc.lang, "code": tc.code})
		a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_execute_code","arguments":`+string(args)+`}}`)
		if a.Error != nil || len(a.Result.Content) != 1 {
			t.Fatalf("sandbox_execute_code: %s", raw)
		}
		var out struct{ Status, Stdout string }
		if err := json.Unmarshal([]byte(a.Result.Content[0].Text), &out); err != nil {
			t.Fatal(err)
		}
		if want := "unavailable programs cannot call tools here (the host gave this run no tool channel)\n"; out.Status != "ok" || out.Stdout != want {
			t.Errorf("%s: %s %q, want %q", tc.lang, out.Status, out.Stdout, want)
		}
	}
}

// TestCodeToolsQuota: a program's calls take their tenant's
// calls_per_minute tokens: with a bucket of one, the call that runs the
// program takes it, and the program's call is answered limit, with an
// audit line of outcome quota.
func TestCodeToolsQuota(t *testing.T) {
	t.Parallel() // its own host (and browser), on free ports: it waits more than it computes
	const key = "code-quota-key-0123456789"
	policy := filepath.Join(t.TempDir(), "policy.json")
	p := `{"tenants":{"slow":{"keys":["` + keyLine(key) + `"],"tools":["sandbox_execute_code","sandbox_get_context"],"quotas":{"calls_per_minute":6}}}}`
	if err := os.WriteFile(policy, []byte(p), 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	url := startTenancyHost(t, host.Config{PolicyFile: policy, TenancyConfig: host.TenancyConfig{AuditLog: auditLog}})
	args, _ := json.Marshal(map[string]any{"language": "python", "code": "try:\n    tools.sandbox_get_context()\nexcept ToolError as e:\n    print(e.kind, e)"})
	r := do(t, "POST", url, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_execute_code","arguments":`+string(args)+`}}`, nil)
	var a rpcAnswer
	if r.status != 200 || json.Unmarshal([]byte(r.body), &a) != nil || len(a.Result.Content) != 1 {
		t.Fatalf("sandbox_execute_code: %d %s", r.status, r.body)
	}
	var out struct{ Status, Stdout string }
	if err := json.Unmarshal([]byte(a.Result.Content[0].Text), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Stdout, "limit quota exceeded: tenant slow is at its calls_per_minute quota (6)") {
		t.Fatalf("program: %s %q", out.Status, out.Stdout)
	}
	b, err := os.ReadFile(auditLog)
	if err != nil || !strings.Contains(string(b), `"tool":"sandbox_get_context"`) || !strings.Contains(string(b), `"outcome":"quota"`) || !strings.Contains(string(b), `"via":"sandbox_execute_code","step":1`) {
		t.Fatalf("audit log: %v\n%s", err, b)
	}
}

// TestCodeToolsGuarded: a program's calls pass the hook chain like a
// client's (spec/hooks.md: every kind of call, code mode's too): a guard
// that denies the tool makes the program's call raise ToolError with the
// guard's reason, in both languages.
func TestCodeToolsGuarded(t *testing.T) {
	t.Parallel() // its own host (and browser), on free ports: it waits more than it computes
	if !builtin.Present() {
		if testing.Short() {
			t.Skip("the built-in plugins are not built (make build; make test builds them)")
		}
		t.Fatal("the built-in plugins are not built (make build)")
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	// An argument policy that does not parse denies every call it guards.
	if err := os.WriteFile(policy, []byte(`{"hooks":[{"plugin":"argpolicy","tools":["sandbox_get_context"],"config":{"deny:x":"("}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startHost(t, host.Config{Builtins: builtin.FS(), PolicyFile: policy})
	for _, tc := range []struct{ lang, code string }{
		{"python", "try:\n    tools.sandbox_get_context()\n    print('ran')\nexcept ToolError as e:\n    print(e.kind, e)"},
		{"javascript", "try { tools.sandbox_get_context(); console.log('ran') } catch (e) { console.log(e.kind, e.message) }"},
	} {
		args, _ := json.Marshal(map[string]any{"language": tc.lang, "code": tc.code})
		a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_execute_code","arguments":`+string(args)+`}}`)
		if a.Error != nil || len(a.Result.Content) != 1 {
			t.Fatalf("sandbox_execute_code: %s", raw)
		}
		var out struct{ Status, Stdout string }
		if err := json.Unmarshal([]byte(a.Result.Content[0].Text), &out); err != nil {
			t.Fatal(err)
		}
		if out.Status != "ok" || !strings.Contains(out.Stdout, "Blocked by the operator's hook (guard argpolicy)") || strings.Contains(out.Stdout, "ran") {
			t.Errorf("%s: %s %q, want the guard's refusal", tc.lang, out.Status, out.Stdout)
		}
	}
	// Without the program, the same guard answers the client the same way.
	a, raw := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_get_context","arguments":{}}}`)
	if a.Error != nil || !a.Result.IsError || len(a.Result.Content) != 1 || !strings.Contains(a.Result.Content[0].Text, "guard argpolicy") {
		t.Errorf("sandbox_get_context from the client: %s", raw)
	}
}
