package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// aoidocs builds the Go Machine Mode test tool of host/machinetest (a
// tool written from the public specification) into the test's directory.
func aoidocs(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "aoidocs")
	cmd := exec.Command("go", "build", "-o", out, "./host/machinetest/testdata/aoidocs")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building aoidocs: %v\n%s", err, b)
	}
	return out
}

// aiodTools are the tools aiod's own CLI makes, registered with prefix
// "aiod" (spec/machine-mode.md §7).
var aiodTools = []string{"aiod_doctor", "aiod_key_new", "aiod_plugin_inspect", "aiod_plugin_test", "aiod_plugin_verify", "aiod_upstream_review"}

// TestMachineMode: bin/aiod publishes, with --machine-tools, bin/aiod
// itself (discovered through its own `capabilities` and `schema`) and the
// Go test tool; the go-sdk client and the TypeScript SDK v2 client call
// them in both protocol eras: aiod's own commands (success, a refusal, a
// missing file, a wrong argument), progress with and without a token, a
// cursor followed to the end, and a command that requires confirmation
// (accepted, declined, a client that cannot be asked). Every
// structuredContent validates against the published outputSchema, whose
// events are aiod's own event schemas.
func TestMachineMode(t *testing.T) {
	t.Parallel()
	defaultEngine(t, "the Machine Mode adapter is a plugin over the process family, not the engine's subject")
	bin, plugins := binaries(t)
	docs := aoidocs(t)
	regs, _ := json.Marshal(map[string]any{
		"aiod": map[string]any{"command": []string{bin}},
		"docs": map[string]any{"command": []string{docs, "docs"}},
	})
	ws := t.TempDir()
	a := start(t, nil, "--machine-tools", string(regs), "--workspace", ws)
	echo := filepath.Join(plugins, "echo")
	refused := filepath.Join(repoRoot(), "plugins", "builtin", "dist", "sandbox_get_context")

	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("go-sdk/"+era, func(t *testing.T) {
			cs := goSDK(t, a.URL, "", era)
			tools, schemas := listMachineTools(t, cs)
			for _, n := range aiodTools {
				if tools[n] == nil {
					t.Fatalf("%s is not listed: %v", n, slices.Sorted(mapKeys(tools)))
				}
			}
			if an := tools["aiod_key_new"].Annotations; an == nil || !an.ReadOnlyHint || tools["aiod_key_new"].Title != "A fresh API key" {
				t.Errorf("aiod_key_new: %+v %+v", tools["aiod_key_new"], an)
			}
			if an := tools["aiod_upstream_review"].Annotations; an == nil || an.ReadOnlyHint || an.DestructiveHint == nil || *an.DestructiveHint {
				t.Errorf("aiod_upstream_review annotations: %+v", an)
			}
			in, _ := json.Marshal(tools["aiod_plugin_verify"].InputSchema)
			var vin struct {
				Properties map[string]struct{ Type string } `json:"properties"`
				Required   []string                         `json:"required"`
			}
			json.Unmarshal(in, &vin)
			if vin.Properties["package"].Type != "string" || vin.Properties["policy"].Type != "string" || vin.Properties["output"].Type != "" || !slices.Equal(vin.Required, []string{"package"}) {
				t.Errorf("aiod_plugin_verify inputSchema: %s", in)
			}
			call := func(name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
				return callMachine(t, cs, schemas, name, args)
			}

			res, sc := call("aiod_key_new", map[string]any{})
			ev := machineEvents(sc)
			if res.IsError || len(ev) != 1 || ev[0]["type"] != "key" || sc["summary"].(map[string]any)["ok"] != true {
				t.Fatalf("aiod_key_new: %v", sc)
			}
			key := ev[0]["key"].(string)
			if sum := sha256.Sum256([]byte(key)); ev[0]["policy"] != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("the policy line is not the key's digest: %v", ev[0])
			}

			res, sc = call("aiod_plugin_inspect", map[string]any{"path": echo})
			if ev := machineEvents(sc); res.IsError || len(ev) != 1 || ev[0]["type"] != "module" || ev[0]["digest_ok"] != true {
				t.Errorf("aiod_plugin_inspect: %v", sc)
			}
			res, sc = call("aiod_plugin_verify", map[string]any{"package": echo})
			if ev := machineEvents(sc); res.IsError || ev[len(ev)-1]["type"] != "verdict" || ev[len(ev)-1]["loads"] != true {
				t.Errorf("aiod_plugin_verify echo: %v", sc)
			}
			// refused by the (absent) policy: isError, with aiod's error event
			res, sc = call("aiod_plugin_verify", map[string]any{"package": refused})
			if e, _ := sc["error"].(map[string]any); !res.IsError || e["category"] != "authz" || e["code"] != "PLUGIN_REFUSED" || e["retryable"] != false {
				t.Errorf("aiod_plugin_verify refused: %v", sc)
			}
			res, sc = call("aiod_plugin_inspect", map[string]any{"path": "/nonexistent/plugin"})
			if e, _ := sc["error"].(map[string]any); !res.IsError || e["category"] != "not_found" || e["source"] != nil {
				t.Errorf("aiod_plugin_inspect of nothing: %v", sc)
			}
			// a wrong argument: the adapter refuses it, nothing runs
			res, sc = call("aiod_plugin_inspect", map[string]any{"path": 5})
			if e, _ := sc["error"].(map[string]any); !res.IsError || e["code"] != "INVALID_ARGUMENTS" || e["source"] != "aiod" {
				t.Errorf("a wrong argument: %v", sc)
			}
			res, sc = call("aiod_doctor", map[string]any{"lockdown": true})
			var checks []string
			for _, e := range machineEvents(sc) {
				if e["type"] == "aoi:check" {
					checks = append(checks, e["name"].(string))
				}
			}
			if res.IsError || !slices.Contains(checks, "lockdown") || !slices.Contains(checks, "bash") {
				t.Errorf("aiod_doctor: %v", sc)
			}
		})
	}

	for _, era := range []string{"modern", "legacy"} {
		t.Run("ts-v2/"+era, func(t *testing.T) {
			r := runNode(t, nil, clientScript("ts-v2-machine.mjs"), a.URL, era)
			listed, _ := r["listed"].(map[string]any)
			for _, n := range append([]string{"docs_search", "docs_delete", "docs_progress"}, aiodTools...) {
				if l, _ := listed[n].(map[string]any); l == nil || l["hasOutputSchema"] != true {
					t.Errorf("%s listed as %v", n, listed[n])
				}
			}
			// progress: one notification per aoi:progress, only with a token
			ps, _ := r["progress"].([]any)
			var msgs []string
			for i, p := range ps {
				m := p.(map[string]any)
				if m["progress"] != float64(i+1) || m["total"] != float64(4) {
					t.Errorf("progress %d: %v", i, m)
				}
				msgs = append(msgs, fmt.Sprint(m["message"]))
			}
			if len(ps) != 4 || msgs[3] != "step 4 of 4" || r["extra"] != float64(0) {
				t.Errorf("progress: %v (%v without a token)", ps, r["extra"])
			}
			if w := structured(t, r["withToken"]); len(w["events"].([]any)) != 1 {
				t.Errorf("progress result: %v", w)
			}
			// the cursor followed to the end: the eight documents about agents, in order
			var ids []string
			pages, _ := r["pages"].([]any)
			for _, p := range pages {
				for _, e := range p.(map[string]any)["events"].([]any) {
					ids = append(ids, e.(map[string]any)["id"].(string))
				}
			}
			if j := strings.Join(ids, ","); len(pages) != 4 || j != "doc_1,doc_2,doc_3,doc_5,doc_6,doc_8,doc_9,doc_10" {
				t.Errorf("%d pages: %s", len(pages), j)
			}
			// confirmation: asked twice (accepted, declined), never without the capability
			asked, _ := r["asked"].([]any)
			if len(asked) != 2 || !strings.Contains(fmt.Sprint(asked[0].(map[string]any)["message"]), "doc_3") {
				t.Errorf("asked: %v", asked)
			}
			if acc := structured(t, r["accepted"]); isErr(r["accepted"]) || machineEvents(acc)[0]["type"] != "deleted" {
				t.Errorf("accepted: %v", r["accepted"])
			}
			for k, code := range map[string]string{"declined": "NOT_CONFIRMED", "unasked": "CONFIRMATION_UNAVAILABLE"} {
				sc := structured(t, r[k])
				if e, _ := sc["error"].(map[string]any); !isErr(r[k]) || e["code"] != code || len(machineEvents(sc)) != 0 {
					t.Errorf("%s: %v", k, r[k])
				}
			}
			// the accepted delete ran (in the workspace), the others did not
			if _, err := os.Stat(filepath.Join(ws, "deleted-doc_3")); err != nil {
				t.Errorf("the accepted delete did not run: %v", err)
			}
			for _, id := range []string{"doc_4", "doc_5"} {
				if _, err := os.Stat(filepath.Join(ws, "deleted-"+id)); err == nil {
					t.Errorf("the delete of %s ran", id)
				}
			}
			// aiod's own CLI through the TypeScript client
			if k := structured(t, r["key"]); isErr(r["key"]) || machineEvents(k)[0]["type"] != "key" {
				t.Errorf("aiod_key_new: %v", r["key"])
			}
			if m := structured(t, r["missing"]); !isErr(r["missing"]) || m["error"].(map[string]any)["code"] != "NOT_FOUND" {
				t.Errorf("aiod_plugin_inspect of nothing: %v", r["missing"])
			}
		})
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// listMachineTools lists the tools and resolves each outputSchema.
func listMachineTools(t *testing.T, cs *mcp.ClientSession) (map[string]*mcp.Tool, map[string]*jsonschema.Resolved) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, schemas := map[string]*mcp.Tool{}, map[string]*jsonschema.Resolved{}
	for _, tl := range lr.Tools {
		tools[tl.Name] = tl
		if tl.OutputSchema == nil {
			continue
		}
		b, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: outputSchema: %v", tl.Name, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: outputSchema does not resolve: %v", tl.Name, err)
		}
		schemas[tl.Name] = rs
	}
	return tools, schemas
}

// callMachine calls a Machine Mode tool and checks its structuredContent
// against the published outputSchema and the text block.
func callMachine(t *testing.T, cs *mcp.ClientSession, schemas map[string]*jsonschema.Resolved, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || schemas[name] == nil {
		t.Fatalf("%s: structuredContent %T, outputSchema %v", name, res.StructuredContent, schemas[name] != nil)
	}
	if err := schemas[name].Validate(sc); err != nil {
		b, _ := json.Marshal(sc)
		t.Fatalf("%s: structuredContent does not validate against the outputSchema: %v\n%s", name, err, b)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var fromText any
	if json.Unmarshal([]byte(text), &fromText) != nil {
		t.Fatalf("%s: the text block is not JSON: %s", name, text)
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(sc)
	if string(a) != string(b) {
		t.Fatalf("%s: text and structuredContent differ:\n%s\n%s", name, a, b)
	}
	return res, sc
}

func machineEvents(sc map[string]any) []map[string]any {
	var out []map[string]any
	l, _ := sc["events"].([]any)
	for _, e := range l {
		m, _ := e.(map[string]any)
		out = append(out, m)
	}
	return out
}

// structured is a TypeScript client's result's structuredContent.
func structured(t *testing.T, res any) map[string]any {
	t.Helper()
	m, _ := res.(map[string]any)
	sc, ok := m["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structuredContent: %v", res)
	}
	return sc
}

func isErr(res any) bool {
	m, _ := res.(map[string]any)
	return m["isError"] == true
}
