package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// pinPolicy writes a policy pinning every package of the plugins
// directory by its module's sha256, and returns its path.
func pinPolicy(t *testing.T, plugins string, extra ...map[string]any) string {
	t.Helper()
	ents, err := os.ReadDir(plugins)
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]map[string]string{}
	for _, e := range ents {
		mb, err := os.ReadFile(filepath.Join(plugins, e.Name(), "manifest.json"))
		if err != nil {
			continue
		}
		var m struct{ Name, Module string }
		if err := json.Unmarshal(mb, &m); err != nil {
			t.Fatal(err)
		}
		if m.Module == "" {
			m.Module = "plugin.wasm"
		}
		b, err := os.ReadFile(filepath.Join(plugins, e.Name(), m.Module))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		pins[m.Name] = map[string]string{"sha256": hex.EncodeToString(sum[:])}
	}
	doc := map[string]any{"plugins": pins}
	for _, e := range extra {
		for k, v := range e {
			doc[k] = v
		}
	}
	b, _ := json.Marshal(doc)
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dataDir is a --data-dir outside /tmp (a host path under /tmp would be,
// to a tenant, a path of its own /tmp), removed after the test.
func dataDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "aiod-e2e-lockdown-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestLockdownRefusesToStart: `aiod start --lockdown` without what it
// needs exits, naming each missing piece.
func TestLockdownRefusesToStart(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "a start-up refusal before any engine")
	bin, plugins := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "start", "--lockdown", "--port", freePort(t), "--plugins-dir", plugins,
		"--data-dir", dataDir(t), "--cache-dir", e2eCache()).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("started (err %v): %s", err, out)
	}
	for _, w := range []string{"lockdown: refusing to start", "authentication: set --api-key", `plugin echo: not pinned by the policy: add "plugins": {"echo": {"sha256": "`} {
		if !strings.Contains(string(out), w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// spec/lockdown.md §1's example refusal is of this start: each of its
	// lines is a line of the real one ("…" standing for a digest)
	example := specBlock(t, "aiod: lockdown: refusing to start:")
	if len(example) < 2 {
		t.Fatalf("spec/lockdown.md's example refusal has no lines: %q", example)
	}
	for _, l := range example {
		parts := strings.Split(l, "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		if re := regexp.MustCompile("(?m)^" + strings.Join(parts, "[0-9a-f]+") + "$"); !re.Match(out) {
			t.Errorf("spec/lockdown.md's example refusal line\n%s\nis not in the refusal:\n%s", l, out)
		}
	}
}

// specBlock is the first fenced block of spec/lockdown.md whose first line
// starts with first, one string a line.
func specBlock(t *testing.T, first string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "spec", "lockdown.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "\n```")
	for i := 1; i < len(blocks); i += 2 {
		_, body, _ := strings.Cut(blocks[i], "\n") // the fence's info string
		if strings.HasPrefix(body, first) {
			return strings.Split(strings.TrimRight(body, "\n"), "\n")
		}
	}
	t.Fatalf("spec/lockdown.md has no block starting %q", first)
	return nil
}

// specCommandLine is spec/lockdown.md's `aiod start --lockdown` command
// line as written: the arguments of its first lines, joined where a line
// ends in a backslash (the environment note after them is not part of
// it).
func specCommandLine(t *testing.T) []string {
	t.Helper()
	var argv []string
	for _, l := range specBlock(t, "aiod start --lockdown") {
		l, more := strings.CutSuffix(strings.TrimSpace(l), "\\")
		argv = append(argv, strings.Fields(l)...)
		if !more {
			break
		}
	}
	return argv
}

// TestLockdownSpecCommandLine: spec/lockdown.md's command line, run as
// written, each flag's value being the test's own (a data directory, a
// policy, a key, an audit log), starts and serves: a call runs in the
// sandbox as uid 10001, a request without the key is refused, and the
// audit log has the call's line. The port and the cache come from the
// environment, so the arguments are the spec's alone.
func TestLockdownSpecCommandLine(t *testing.T) {
	t.Parallel()
	argv := specCommandLine(t)
	if len(argv) < 3 || argv[0] != "aiod" || argv[1] != "start" {
		t.Fatalf("spec/lockdown.md's command line is not `aiod start ...`: %q", argv)
	}
	const key = "lockdown-spec-key"
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	values := map[string]string{"--data-dir": dataDir(t), "--policy": policy, "--api-key": key, "--audit-log": auditLog}
	args := argv[1:]
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			t.Fatalf("spec/lockdown.md's command line: %q is not a flag (%q)", a, argv)
		}
		name, _, inline := strings.Cut(a, "=")
		takesValue := inline || (i+1 < len(args) && !strings.HasPrefix(args[i+1], "--"))
		if !takesValue {
			continue
		}
		v, ok := values[name]
		if !ok {
			t.Fatalf("spec/lockdown.md's command line gives %s, for which this test has no value of its own", name)
		}
		delete(values, name)
		if inline {
			args[i] = name + "=" + v
		} else {
			args[i+1] = v
			i++
		}
	}
	if len(values) > 0 {
		t.Errorf("spec/lockdown.md's command line does not give %v", slices.Sorted(maps.Keys(values)))
	}
	a := startArgv(t, []string{"AIO_HOST=127.0.0.1", "AIO_PORT=" + freePort(t), "AIO_CACHE_DIR=" + e2eCache()}, args)
	if !strings.Contains(a.Logs(), "lockdown: processes run under bubblewrap") {
		t.Errorf("not locked down:\n%s", a.Logs())
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_execute_bash","arguments":{"cmd":"id -u; pwd; ls /srv /var/log 2>&1"}}}`
	if resp, _ := post(t, a.URL, body, nil); resp.StatusCode != 401 {
		t.Errorf("without the key: HTTP %d", resp.StatusCode)
	}
	resp, out := post(t, a.URL, body, map[string]string{"Authorization": "Bearer " + key})
	if resp.StatusCode != 200 || !strings.Contains(out, `10001\n/workspace\n`) || strings.Contains(out, `"isError":true`) {
		t.Fatalf("sandbox_execute_bash: HTTP %d %s", resp.StatusCode, out)
	}
	b, err := os.ReadFile(auditLog)
	if err != nil || !strings.Contains(string(b), `"tool":"sandbox_execute_bash"`) || !strings.Contains(string(b), `"tenant":"default"`) {
		t.Errorf("audit log (%v):\n%s", err, b)
	}
}

// TestLockdownServes: `aiod start --lockdown --policy FILE` with every
// plugin pinned serves seed 000's workflow in the sandbox: the commands
// run as uid 10001 without network, and the files are the tenant's, under
// the data directory.
//
// Two tenants, alice and bob, each with a key in the policy's tenants:
// the same probes run for both, neither sees the other's files, and the
// audit log has a line for each of their calls.
func TestLockdownServes(t *testing.T) {
	t.Parallel()
	onEngines(t, testLockdownServes)
}

func testLockdownServes(t *testing.T, engine string) {
	_, plugins := binaries(t)
	data := dataDir(t)
	tenants := []struct{ name, key string }{{"alice", "lockdown-e2e-key-alice"}, {"bob", "lockdown-e2e-key-bob"}}
	specs := map[string]any{}
	for _, tn := range tenants {
		sum := sha256.Sum256([]byte(tn.key))
		specs[tn.name] = map[string]any{"keys": []string{"sha256:" + hex.EncodeToString(sum[:])}, "tools": []string{"sandbox_*"}}
	}
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	a := start(t, []string{"AIOD_E2E_KEY=" + tenants[0].key}, "--lockdown", "--policy", pinPolicy(t, plugins, map[string]any{"tenants": specs}), "--data-dir", data, "--audit-log", auditLog, "--engine", engine)
	call := func(key string, id int, tool string, args any) (string, bool) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
		resp, body := post(t, a.URL, string(b), map[string]string{"Authorization": "Bearer " + key})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d %s", tool, resp.StatusCode, body)
		}
		var r struct {
			Result struct {
				Content []struct{ Text string }
				IsError bool
			}
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Result.Content) == 0 {
			t.Fatalf("%s: %s", tool, body)
		}
		return r.Result.Content[0].Text, r.Result.IsError
	}
	for _, tn := range tenants {
		if text, isErr := call(tn.key, 1, "sandbox_file_operations", map[string]any{"action": "write", "path": "/tmp/agent-data.txt", "content": "3\n7\n12\n5\n"}); isErr {
			t.Fatalf("%s write: %s", tn.name, text)
		}
		if text, _ := call(tn.key, 2, "sandbox_execute_bash", map[string]any{"cmd": "wc -l /tmp/agent-data.txt", "cwd": "/tmp"}); !strings.Contains(text, "4 /tmp/agent-data.txt") {
			t.Errorf("%s wc: %s", tn.name, text)
		}
		if text, _ := call(tn.key, 3, "sandbox_execute_code", map[string]any{"language": "python",
			"code": "nums = [int(n) for n in open(\"/tmp/agent-data.txt\").read().split()]\nopen(\"/tmp/agent-result.txt\", \"w\").write(str(sum(nums)))\nprint(\"sum written\")"}); !strings.Contains(text, "sum written") {
			t.Errorf("%s python: %s", tn.name, text)
		}
		if text, _ := call(tn.key, 4, "sandbox_file_operations", map[string]any{"action": "read", "path": "/tmp/agent-result.txt"}); !strings.Contains(text, `"content":"27"`) {
			t.Errorf("%s read: %s", tn.name, text)
		}
		if b, err := os.ReadFile(filepath.Join(data, "tenants", tn.name, "tmp", "agent-result.txt")); err != nil || string(b) != "27" {
			t.Errorf("%s's result on the host: %q %v", tn.name, b, err)
		}
		port := a.Base[strings.LastIndex(a.Base, ":")+1:]
		text, _ := call(tn.key, 5, "sandbox_execute_bash", map[string]any{"cmd": "id; touch /usr/x 2>&1; curl -sS -m 5 " + a.Base + "/health 2>&1; echo curl=$?; (exec 3<>/dev/tcp/127.0.0.1/" + port + ") 2>&1; echo tcp=$?"})
		for _, w := range []string{"uid=10001(sandbox)", "Read-only file system", "curl=7", "tcp=1"} {
			if !strings.Contains(text, w) {
				t.Errorf("%s probes lack %q: %s", tn.name, w, text)
			}
		}
	}
	// each wrote its own /tmp/agent-data.txt; now alice's differs and bob
	// still reads his own
	if text, isErr := call("lockdown-e2e-key-alice", 6, "sandbox_file_operations", map[string]any{"action": "write", "path": "/workspace/secret.txt", "content": "alice only"}); isErr {
		t.Fatalf("alice write: %s", text)
	}
	text, _ := call("lockdown-e2e-key-bob", 7, "sandbox_execute_bash", map[string]any{"cmd": "cat /workspace/secret.txt 2>&1; ls " + filepath.Join(data, "tenants") + " 2>&1"})
	if strings.Contains(text, "alice only") || !strings.Contains(text, "No such file") {
		t.Errorf("bob sees alice's file: %s", text)
	}
	if text, isErr := call("lockdown-e2e-key-bob", 8, "sandbox_file_operations", map[string]any{"action": "read", "path": "/workspace/secret.txt"}); !isErr || strings.Contains(text, "alice only") {
		t.Errorf("bob reads alice's file through the file tool: %s", text)
	}
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range tenants {
		if !strings.Contains(string(b), `"tenant":"`+tn.name+`"`) {
			t.Errorf("audit log has no line of %s:\n%s", tn.name, b)
		}
	}
	if strings.Contains(string(b), "alice only") || strings.Contains(string(b), "lockdown-e2e-key") {
		t.Errorf("audit log holds an argument value or a key:\n%s", b)
	}
}
