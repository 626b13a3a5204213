package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/aoi"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/doctor"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// discovered is what `aiod capabilities` and `aiod schema` answer, read
// as a consumer does.
type discovered struct {
	commands map[string]map[string]any
	schemas  map[string]*jsonschema.Resolved
}

func discoverAiod(t *testing.T) *discovered {
	t.Helper()
	code, out, errOut := runCmd(t, "capabilities", "--output", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("capabilities: exit %d, stderr %s", code, errOut)
	}
	var caps struct {
		Tool        string           `json:"tool"`
		AOIVersions []string         `json:"aoi_versions"`
		Commands    []map[string]any `json:"commands"`
	}
	d := json.NewDecoder(strings.NewReader(out))
	if err := d.Decode(&caps); err != nil || d.More() {
		t.Fatalf("capabilities is not one JSON object: %v\n%s", err, out)
	}
	if caps.Tool != "aiod" || !slices.Equal(caps.AOIVersions, []string{"0.2"}) || len(caps.Commands) != 6 {
		t.Fatalf("capabilities: %s", out)
	}
	ds := &discovered{commands: map[string]map[string]any{}, schemas: map[string]*jsonschema.Resolved{}}
	for _, c := range caps.Commands {
		name := c["name"].(string)
		ds.commands[name] = c
		code, out, errOut := runCmd(t, "schema", "--output", "json", "--command", name)
		if code != 0 || errOut != "" {
			t.Fatalf("schema %s: exit %d, %s", name, code, errOut)
		}
		var sch jsonschema.Schema
		if err := json.Unmarshal([]byte(out), &sch); err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		rs, err := sch.Resolve(nil)
		if err != nil {
			t.Fatalf("schema %s does not resolve: %v", name, err)
		}
		ds.schemas[name] = rs
		var raw map[string]any
		json.Unmarshal([]byte(out), &raw)
		enum := raw["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any)
		if raw["command"] != name || fmt.Sprint(enum) != fmt.Sprint(c["event_types"]) {
			t.Errorf("schema %s: command %v, types %v; capabilities lists %v", name, raw["command"], enum, c["event_types"])
		}
	}
	return ds
}

// stream runs aiod with args and checks its stdout as the standard asks
// (aoi.Check: meta first, summary last, JSONL only, only the declared
// types), every event valid against the command's published schema, and
// the exit code the summary implies. It returns the events.
func (ds *discovered) stream(t *testing.T, command string, wantCode int, args ...string) []aoi.Line {
	t.Helper()
	code, out, errOut := runCmd(t, args...)
	c := ds.commands[command]
	var types []string
	for _, v := range c["event_types"].([]any) {
		types = append(types, v.(string))
	}
	evs, err := aoi.Check([]byte(out), command, types, func(ev aoi.Line) error { return ds.schemas[command].Validate(map[string]any(ev)) })
	if err != nil {
		t.Fatalf("aiod %s: the stream breaks the standard: %v\nstdout:\n%s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	if code != wantCode {
		t.Fatalf("aiod %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	sum := evs[len(evs)-1]
	if ok := sum["ok"].(bool); ok != (code == 0) {
		t.Fatalf("aiod %s: exit %d with ok %v", strings.Join(args, " "), code, ok)
	}
	return evs
}

func ofType(evs []aoi.Line, typ string) []aoi.Line {
	var out []aoi.Line
	for _, e := range evs {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// fatalError is the run's error of process scope, checked for its
// category and code.
func fatalError(t *testing.T, evs []aoi.Line, category, code string) aoi.Line {
	t.Helper()
	for _, e := range ofType(evs, aoi.TypeError) {
		if e["scope"] == "process" {
			if e["category"] != category || e["code"] != code || e["retryable"] != false {
				t.Fatalf("error %v, want %s/%s", e, category, code)
			}
			return e
		}
	}
	t.Fatalf("no error of process scope in %v", evs)
	return nil
}

// TestMachineDiscovery: capabilities is one JSON object listing the six
// commands; each command's schema resolves and allows exactly the types
// capabilities lists; discovery's usage errors write nothing on stdout.
func TestMachineDiscovery(t *testing.T) {
	ds := discoverAiod(t)
	for name, want := range map[string][2]bool{"plugin inspect": {true, false}, "upstream review": {false, false}, "key new": {true, false}, "doctor": {true, false}} {
		c := ds.commands[name]
		if c["read_only"] != want[0] || c["destructive"] != want[1] {
			t.Errorf("%s: read_only %v destructive %v", name, c["read_only"], c["destructive"])
		}
	}
	// the schemas hold each event type's members, not only the type
	for cmd, bad := range map[string]map[string]any{
		"key new":         {"type": "key", "policy": "sha256:00"},
		"doctor":          {"type": "aoi:summary", "ok": "yes", "count": 1, "truncated": false},
		"plugin test":     {"type": "answer", "engine": "wazero"},
		"upstream review": {"type": "aoi:error", "scope": "process", "category": "sadness", "code": "X", "message": "m", "retryable": false},
	} {
		if ds.schemas[cmd].Validate(bad) == nil {
			t.Errorf("%s: the schema accepts %v", cmd, bad)
		}
	}
	ops := ds.commands["plugin verify"]["operands"].([]any)
	if len(ops) != 1 || ops[0].(map[string]any)["name"] != "package" || ops[0].(map[string]any)["required"] != true {
		t.Errorf("plugin verify operands: %v", ops)
	}
	for _, args := range [][]string{
		{"schema", "--output", "json", "--command", "frob"},
		{"schema", "--output", "json"},
		{"schema", "--output", "jsonl", "--command", "doctor"},
		{"capabilities", "--output", "text"},
		{"capabilities", "--command", "doctor"},
		{"capabilities", "extra"},
		{"schema", "--command"},
	} {
		code, out, errOut := runCmd(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("aiod %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestMachineStreams: each command in machine mode, on success and on each
// kind of failure: only JSONL on stdout, meta first and summary last,
// every event valid against the published schema, the error taxonomy and
// the exit codes of spec/machine-mode.md §7.
func TestMachineStreams(t *testing.T) {
	ds := discoverAiod(t)

	evs := ds.stream(t, "key new", 0, "key", "new", "--output", "jsonl")
	k := ofType(evs, "key")
	if len(k) != 1 || k[0]["policy"] != caps.KeyLine(sha256.Sum256([]byte(k[0]["key"].(string)))) {
		t.Errorf("key new: %v", evs)
	}
	fatalError(t, ds.stream(t, "key new", 2, "key", "new", "--output=jsonl", "extra"), aoi.CategoryUsage, "INVALID_ARGUMENTS")
	fatalError(t, ds.stream(t, "key new", 2, "key", "new", "--output", "jsonl", "--frob"), aoi.CategoryUsage, "INVALID_ARGUMENTS")
	// the flag's other values are usage errors of the text mode
	if code, _, _ := runCmd(t, "key", "new", "--output", "yaml"); code != 2 {
		t.Errorf("--output yaml: exit %d", code)
	}

	evs = ds.stream(t, "doctor", 0, "doctor", "--output", "jsonl", "--workspace", t.TempDir())
	var planes []string
	for _, p := range ofType(evs, "plane") {
		planes = append(planes, p["name"].(string))
	}
	if !slices.Equal(planes, doctor.Domains) || len(ofType(evs, aoi.TypeCheck)) == 0 {
		t.Errorf("doctor: planes %v, want %v; %d checks", planes, doctor.Domains, len(ofType(evs, aoi.TypeCheck)))
	}
	fatalError(t, ds.stream(t, "doctor", 2, "doctor", "--output", "jsonl", "surplus"), aoi.CategoryUsage, "INVALID_ARGUMENTS")

	// plugin inspect and verify on a built-in package
	pkg, _ := filepath.Abs(filepath.Join("..", "..", "plugins", "builtin", "dist", "sandbox_get_context"))
	if _, err := os.Stat(filepath.Join(pkg, "manifest.json")); err != nil {
		t.Fatalf("%s: %v (make build makes it)", pkg, err)
	}
	evs = ds.stream(t, "plugin inspect", 0, "plugin", "inspect", "--output", "jsonl", "--", pkg)
	if m := ofType(evs, "module"); len(m) != 1 || m[0]["digest_ok"] != true || m[0]["form"] != "reactor" {
		t.Errorf("inspect: %v", evs)
	}
	e := fatalError(t, ds.stream(t, "plugin inspect", 3, "plugin", "inspect", "--output", "jsonl", filepath.Join(t.TempDir(), "nothing")), aoi.CategoryNotFound, "NOT_FOUND")
	if !strings.Contains(e["message"].(string), "nothing") {
		t.Errorf("not found: %v", e)
	}
	fatalError(t, ds.stream(t, "plugin inspect", 2, "plugin", "inspect", "--output", "jsonl"), aoi.CategoryUsage, "INVALID_ARGUMENTS")
	// an operand that looks like a flag (a client's argument, after the
	// adapter's "--") is an operand: a path, not --policy or --json
	e = fatalError(t, ds.stream(t, "plugin inspect", 3, "plugin", "inspect", "--output", "jsonl", "--", "--json"), aoi.CategoryNotFound, "NOT_FOUND")
	if !strings.Contains(e["message"].(string), "--json") {
		t.Errorf("flag-like operand: %v", e)
	}
	fatalError(t, ds.stream(t, "plugin verify", 3, "plugin", "verify", "--output", "jsonl", "--", "--policy=/etc/passwd"), aoi.CategoryNotFound, "NOT_FOUND")
	// a module that is not WebAssembly
	junk := filepath.Join(t.TempDir(), "junk.wasm")
	os.WriteFile(junk, []byte("not wasm at all"), 0o644)
	fatalError(t, ds.stream(t, "plugin inspect", 1, "plugin", "inspect", "--output", "jsonl", junk), aoi.CategoryValidation, "PLUGIN_UNREADABLE")

	// deny by default: refused, with a check per family
	evs = ds.stream(t, "plugin verify", 1, "plugin", "verify", pkg, "--output", "jsonl")
	fatalError(t, evs, aoi.CategoryAuthz, "PLUGIN_REFUSED")
	if c := ofType(evs, aoi.TypeCheck); len(c) == 0 || c[0]["name"] != "process" || c[0]["ok"] != false {
		t.Errorf("verify checks: %v", c)
	}
	// granted by a policy: loads
	pol := filepath.Join(t.TempDir(), "policy.json")
	os.WriteFile(pol, []byte(`{"plugins":{"sandbox_get_context":{"process":{"commands":["*"],"cwd":["$SANDBOX"],"shell":true}}}}`), 0o644)
	evs = ds.stream(t, "plugin verify", 0, "plugin", "verify", "--policy="+pol, "--output", "jsonl", "--", pkg)
	if v := ofType(evs, "verdict"); len(v) != 1 || v[0]["loads"] != true {
		t.Errorf("verify with a policy: %v", evs)
	}
	os.WriteFile(pol, []byte(`{"plugins": [}`), 0o644)
	fatalError(t, ds.stream(t, "plugin verify", 1, "plugin", "verify", "--policy="+pol, "--output", "jsonl", "--", pkg), aoi.CategoryValidation, "PLUGIN_UNREADABLE")

	// upstream review: a real MCP server, one that is gone, a change
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo text"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()
	pins := filepath.Join(t.TempDir(), "pins.json")
	servers := fmt.Sprintf(`{"up":{"url":%q,"prefix":"up"},"gone":{"url":"http://127.0.0.1:1/mcp","prefix":"gone"}}`, srv.URL)
	review := []string{"upstream", "review", "--pin-upstreams", pins, "--mcp-servers", servers, "--upstream-list-timeout", "1s", "--output", "jsonl"}
	evs = ds.stream(t, "upstream review", 1, review...)
	fatalError(t, evs, aoi.CategoryConflict, "CHANGES_PENDING")
	ch := ofType(evs, "change")
	if len(ch) != 1 || ch[0]["tool"] != "echo" || ch[0]["kind"] != "new" || len(ofType(evs, "server")) != 2 || len(ofType(evs, aoi.TypeWarning)) != 1 {
		t.Errorf("review: %v", evs)
	}
	evs = ds.stream(t, "upstream review", 0, append(review, "--accept")...)
	if sum := evs[len(evs)-1]; sum["accepted"] != float64(1) {
		t.Errorf("accept: %v", sum)
	}
	evs = ds.stream(t, "upstream review", 0, review...)
	if len(ofType(evs, "change")) != 0 {
		t.Errorf("after accept: %v", evs)
	}
	fatalError(t, ds.stream(t, "upstream review", 2, "upstream", "review", "--output", "jsonl"), aoi.CategoryUsage, "INVALID_ARGUMENTS")
	fatalError(t, ds.stream(t, "upstream review", 2, "upstream", "--output", "jsonl"), aoi.CategoryUsage, "INVALID_ARGUMENTS")
	os.WriteFile(pins, []byte("{not json"), 0o644)
	fatalError(t, ds.stream(t, "upstream review", 1, review...), aoi.CategoryValidation, "PINS_UNREADABLE")
}

// TestMachineNothingButJSONL: whatever the command's text mode would
// print on stdout (help, prose) stays off stdout in machine mode.
func TestMachineNothingButJSONL(t *testing.T) {
	for _, args := range [][]string{
		{"plugin", "inspect", "-h", "--output", "jsonl"},
		{"doctor", "-h", "--output", "jsonl"},
		{"key", "new", "-h", "--output", "jsonl"},
		{"upstream", "review", "-h", "--output", "jsonl"},
	} {
		_, out, _ := runCmd(t, args...)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !json.Valid([]byte(l)) || !bytes.HasPrefix([]byte(l), []byte(`{"type":"aoi:`)) {
				t.Errorf("aiod %s: stdout line %q", strings.Join(args, " "), l)
			}
		}
	}
}
