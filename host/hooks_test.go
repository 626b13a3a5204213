package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/plugins/builtin"
)

// hookScript writes an executable shell script (owner-writable only).
func hookScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// writePolicy writes the policy file with mode (whatever the umask).
func writeHookPolicy(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+".tmp", mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func needHookSandbox(t *testing.T) {
	t.Helper()
	for _, p := range []string{"bwrap", "prlimit"} {
		if _, err := exec.LookPath(p); err != nil {
			if testing.Short() {
				t.Skipf("%s is not installed: command hooks run in the bubblewrap sandbox", p)
			}
			t.Fatalf("command hooks run in the bubblewrap sandbox: %s not found", p)
		}
	}
}

// hookScripts are the test's hooks: guard.sh blocks a call whose input
// says "forbidden" (exit 2, its reason on stderr), note.sh adds a line
// naming the tool and the era, broken.sh fails (exit 1).
func hookScripts(t *testing.T, dir string) (guard, note, broken string) {
	guard = hookScript(t, dir, "guard.sh", `if grep -q forbidden; then echo "no forbidden words in $AIO_HOOK_TOOL" >&2; exit 2; fi; exit 0`)
	note = hookScript(t, dir, "note.sh", `era=$(grep -o '"era":"[a-z]*"' | head -n1); echo "seen $AIO_HOOK_TOOL $era"`)
	broken = hookScript(t, dir, "broken.sh", `echo oops >&2; exit 1`)
	return
}

// TestHooksEveryKindOfTool: the policy's hooks run around a plugin's, a
// built-in's and an upstream's tool, under both protocol eras (a go-sdk
// client for the legacy era, the 2026-07-28 request form for the modern
// one): a before-tool hook's exit 2 blocks the call with its reason, an
// after-tool hook's output is added to the result, marked as its own, and
// a failing after-tool hook is logged and leaves the result alone.
func TestHooksEveryKindOfTool(t *testing.T) {
	needHookSandbox(t)
	work := t.TempDir()
	guard, note, broken := hookScripts(t, work)
	policy := filepath.Join(work, "policy.json")
	writeHookPolicy(t, policy, `{"hooks":[
	  {"event":"before-tool","command":["`+guard+`"]},
	  {"event":"after-tool","command":["`+note+`"],"tools":["echo","sandbox_get_context","up_*"]},
	  {"event":"after-tool","command":["`+broken+`"],"tools":["echo"]}
	]}`, 0o600)
	up := newGoUpstream(t, false)
	var logMu sync.Mutex
	var logBuf strings.Builder
	url, _ := startUpstreamHost(t, []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}}, func(c *host.Config) {
		c.PolicyFile, c.Builtins = policy, builtin.FS()
		c.Logger = slog.New(slog.NewTextHandler(&lockedWriter{mu: &logMu, w: &logBuf}, nil))
	})

	cl := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "hooks-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := cl.Connect(ctx, &sdkmcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	type answer struct {
		texts   []string
		isError bool
	}
	viaSDK := func(t *testing.T, tool string, args map[string]any) answer {
		res, err := cs.CallTool(ctx, &sdkmcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		a := answer{isError: res.IsError}
		for _, c := range res.Content {
			if tc, ok := c.(*sdkmcp.TextContent); ok {
				a.texts = append(a.texts, tc.Text)
			}
		}
		return a
	}
	// the go-sdk client's era is the revision it negotiated
	sdkEra := "legacy"
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion >= "2026-07-28" {
		sdkEra = "modern"
	}
	raw := func(modern bool) func(t *testing.T, tool string, args map[string]any) answer {
		return func(t *testing.T, tool string, args map[string]any) answer {
			ab, _ := json.Marshal(args)
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(ab) + `}}`
			hdr := map[string]string(nil)
			if modern {
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(ab) + `,` + modernMeta + `}}`
				hdr = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
			}
			r := do(t, "POST", url+"/mcp", "", body, hdr)
			var env struct {
				Result struct {
					Content []struct {
						Text string          `json:"text"`
						Meta json.RawMessage `json:"_meta"`
					} `json:"content"`
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if r.status != 200 || json.Unmarshal([]byte(r.body), &env) != nil {
				t.Fatalf("%s: %d %s", tool, r.status, r.body)
			}
			a := answer{isError: env.Result.IsError}
			for _, c := range env.Result.Content {
				a.texts = append(a.texts, c.Text)
			}
			return a
		}
	}
	for _, era := range []struct {
		name, era string
		call      func(*testing.T, string, map[string]any) answer
	}{{"go-sdk", sdkEra, viaSDK}, {"legacy", "legacy", raw(false)}, {"modern", "modern", raw(true)}} {
		for _, tc := range []struct {
			kind, tool string
			args       map[string]any
			first      string // the tool's own first text (prefix)
		}{
			{"plugin", "echo", map[string]any{"text": "hello"}, "hello"},
			{"built-in", "sandbox_get_context", map[string]any{}, ""},
			{"upstream", "up_echo", map[string]any{"text": "hello"}, "hello"},
		} {
			t.Run(era.name+"/"+tc.kind+"/allowed", func(t *testing.T) {
				a := era.call(t, tc.tool, tc.args)
				if a.isError || len(a.texts) < 2 {
					t.Fatalf("answer %+v: want the tool's result and the hook's line", a)
				}
				if !strings.HasPrefix(a.texts[0], tc.first) {
					t.Errorf("first block %q, want the tool's own %q", a.texts[0], tc.first)
				}
				want := `[after-tool note.sh] seen ` + tc.tool + ` "era":"` + era.era + `"`
				if last := a.texts[len(a.texts)-1]; last != want {
					t.Errorf("last block %q, want %q", last, want)
				}
				for _, x := range a.texts {
					if strings.Contains(x, "oops") || strings.Contains(x, "broken.sh") {
						t.Errorf("a failed after-tool hook's output reached the model: %q", x)
					}
				}
			})
			t.Run(era.name+"/"+tc.kind+"/blocked", func(t *testing.T) {
				args := map[string]any{"text": "something forbidden"}
				a := era.call(t, tc.tool, args)
				want := "Blocked by the operator's hook (before-tool guard.sh): no forbidden words in " + tc.tool
				if !a.isError || len(a.texts) != 1 || a.texts[0] != want {
					t.Fatalf("answer %+v, want only isError %q", a, want)
				}
			})
		}
	}
	logMu.Lock()
	logged := logBuf.String()
	logMu.Unlock()
	if !strings.Contains(logged, "after-tool hook failed") || !strings.Contains(logged, "broken.sh") {
		t.Errorf("the failing after-tool hook was not logged:\n%s", logged)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestHooksTenantsAndReload: a tenant's own hooks run after the top-level
// ones and for it alone; a reloaded policy changes the hooks; a policy
// file with hooks that others may write is refused (at start, and at a
// reload: the previous hooks keep applying).
func TestHooksTenantsAndReload(t *testing.T) {
	needHookSandbox(t)
	work := t.TempDir()
	guard, note, _ := hookScripts(t, work)
	deny := hookScript(t, work, "deny.sh", `echo "not for $AIO_TENANT" >&2; exit 2`)
	policy := filepath.Join(work, "policy.json")
	tenants := func(aliceHooks string) string {
		return `"tenants":{
		  "alice":{"keys":["` + keyLine(aliceKey) + `"],"tools":["echo"],"hooks":[` + aliceHooks + `]},
		  "bob":{"keys":["` + keyLine(bobKey) + `"],"tools":["echo"]}}`
	}
	withHooks := `{"hooks":[{"event":"before-tool","command":["` + guard + `"]},{"event":"after-tool","command":["` + note + `"]}],` +
		tenants(`{"event":"before-tool","command":["`+deny+`"],"tools":["ech*"]}`) + `}`
	writeHookPolicy(t, policy, withHooks, 0o640)

	// group-writable: refused at start
	writeHookPolicy(t, policy, withHooks, 0o660)
	_, err := host.New(context.Background(), host.Config{PluginsDir: t.TempDir(), PolicyFile: policy, CacheDir: testplugins.CacheDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "writable by others than its owner") {
		t.Fatalf("New with a group-writable hooks policy: %v", err)
	}
	writeHookPolicy(t, policy, withHooks, 0o640)

	_, url := serveHost(t, host.Config{PluginsDir: echoDir(t), PolicyFile: policy, AdminKey: "adm"})
	text := func(t *testing.T, key, args string) (string, bool) {
		r := do(t, "POST", url+"/mcp", key, call("echo", args), nil)
		var env struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if r.status != 200 || json.Unmarshal([]byte(r.body), &env) != nil || len(env.Result.Content) == 0 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var parts []string
		for _, c := range env.Result.Content {
			parts = append(parts, c.Text)
		}
		return strings.Join(parts, "|"), env.Result.IsError
	}
	for _, tc := range []struct {
		name, key, args, want string
		isError               bool
	}{
		{"alice: her own hook blocks", aliceKey, `{"text":"hi"}`, "Blocked by the operator's hook (before-tool deny.sh): not for alice", true},
		{"alice: the top-level hook runs first", aliceKey, `{"text":"forbidden"}`, "Blocked by the operator's hook (before-tool guard.sh): no forbidden words in echo", true},
		{"bob: only the top-level hooks", bobKey, `{"text":"hi"}`, `hi|[after-tool note.sh] seen echo "era":"legacy"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := text(t, tc.key, tc.args)
			if got != tc.want || isErr != tc.isError {
				t.Fatalf("%q (isError %v), want %q (%v)", got, isErr, tc.want, tc.isError)
			}
		})
	}

	// a reload of a world-writable file that names hooks is refused: the
	// hooks stay
	writeHookPolicy(t, policy, withHooks, 0o646)
	_, body := adminDo(t, "POST", url+"/admin/reload", "adm")
	if pe, _ := body["data"].(map[string]any)["policy_error"].(string); !strings.Contains(pe, "writable by others than its owner") {
		t.Fatalf("reload of a world-writable hooks policy: %v", body)
	}
	if got, _ := text(t, bobKey, `{"text":"forbidden"}`); !strings.Contains(got, "guard.sh") {
		t.Fatalf("after a refused reload the hooks must stay: %q", got)
	}

	// a reload without hooks: calls run unhooked
	writeHookPolicy(t, policy, `{`+tenants("")+`}`, 0o600)
	adminDo(t, "POST", url+"/admin/reload", "adm")
	for _, key := range []string{aliceKey, bobKey} {
		if got, isErr := text(t, key, `{"text":"forbidden"}`); got != "forbidden" || isErr {
			t.Fatalf("after a reload without hooks: %q (isError %v)", got, isErr)
		}
	}
}

// TestHooksReloadUnderLoad: calls run while the policy's hooks (command
// hooks, then a guard plugin) are switched on and off by reloads again and
// again, and while a guard plugin that stays on is replaced by new
// versions of itself; none fails.
func TestHooksReloadUnderLoad(t *testing.T) {
	needHookSandbox(t)
	work := t.TempDir()
	guard, note, _ := hookScripts(t, work)
	plugins := echoDir(t)
	testplugins.Package(t, plugins, "host/hooks/testdata/testguard", nil, nil)
	for _, tc := range []struct{ name, on string }{
		{"commands", `{"hooks":[{"event":"before-tool","command":["` + guard + `"]},{"event":"after-tool","command":["` + note + `"]}]}`},
		{"guard", `{"hooks":[{"plugin":"testguard","config":{"before":"allow","after":"add"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := filepath.Join(work, "policy.json")
			reloadUnderLoad(t, plugins, policy, tc.on, func(i int) {
				body := tc.on
				if i%2 == 0 {
					body = `{}`
				}
				writeHookPolicy(t, policy, body, 0o600)
			})
		})
	}
	t.Run("guard-versions", func(t *testing.T) {
		dir := testplugins.Package(t, plugins, "plugins/examples/guard-c", nil, nil)
		manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		policy := filepath.Join(work, "policy-versions.json")
		h := reloadUnderLoad(t, plugins, policy, `{"hooks":[{"plugin":"guard-c","tools":["echo"]}]}`, func(i int) {
			// a new version of the guard, swapped in whole
			next := bytes.Replace(manifest, []byte(`"version": "1.0.0"`), []byte(fmt.Sprintf(`"version": "1.0.%d"`, i+1)), 1)
			if bytes.Equal(next, manifest) {
				t.Fatalf("no version in the manifest:\n%s", manifest)
			}
			tmp := filepath.Join(dir, ".manifest.json.tmp")
			if err := os.WriteFile(tmp, next, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "manifest.json")); err != nil {
				t.Fatal(err)
			}
		})
		var served string
		for _, p := range h.Registry().Catalog().Plugins {
			if p.Manifest.Name == "guard-c" {
				served = p.Manifest.Version
			}
		}
		if served != "1.0.10" {
			t.Errorf("guard-c %q served after the reloads, want the last version, 1.0.10", served)
		}
		os.RemoveAll(dir) // the other subtests' directory as it was
	})
}

// reloadUnderLoad runs calls of echo from four clients while step(i)
// changes what the host serves and /admin/reload takes it, ten times;
// policy (its hooks on) is the host's policy file.
func reloadUnderLoad(t *testing.T, plugins, policy, on string, step func(i int)) *host.Host {
	writeHookPolicy(t, policy, on, 0o600)
	h, url := serveHost(t, host.Config{PluginsDir: plugins, PolicyFile: policy, AdminKey: "adm"})
	var calls, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := do(t, "POST", url+"/mcp", "", call("echo", `{"text":"hi"}`), nil)
				calls.Add(1)
				if r.status != 200 || !strings.Contains(r.body, `"text":"hi"`) || strings.Contains(r.body, `"isError":true`) {
					failed.Add(1)
					t.Errorf("call during reloads: %d %s", r.status, r.body)
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		step(i)
		if st, b := adminDo(t, "POST", url+"/admin/reload", "adm"); st != 200 {
			t.Fatalf("reload: %d %v", st, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if calls.Load() == 0 || failed.Load() != 0 {
		t.Fatalf("%d calls, %d failed", calls.Load(), failed.Load())
	}
	t.Logf("%d calls during 10 reloads, none failed", calls.Load())
	return h
}

// echoDir is a plugins directory with the echo example.
func echoDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testplugins.Package(t, dir, "plugins/examples/echo", nil, nil)
	return dir
}
