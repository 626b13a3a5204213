package machinetest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/machinetools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shared is one host with the test's registrations, for the tests that do
// not change it.
var (
	sharedOnce sync.Once
	sharedFix  *fixture
)

func shared(t testing.TB) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the adapter plugin and runs a host (not in -short)")
	}
	_, docs := built(t)
	sharedOnce.Do(func() {
		// a host of its own, alive for the whole test binary: its
		// cleanup is the process's end
		sharedFix = startShared(t, registrations(t, docs))
	})
	if sharedFix == nil {
		t.Fatal("the shared host did not start")
	}
	return sharedFix
}

// TestDiscovery: each command of each registered tool is one MCP tool with
// the name, schemas and annotations seed 002's table gives; tools whose
// discovery fails or lies are refused with the reason, and the rest serve.
func TestDiscovery(t *testing.T) {
	f := shared(t)
	s := f.connect(t, clientOpts{era: "2025-11-25"})
	var names []string
	for n := range s.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"docs_crash", "docs_delete", "docs_fail", "docs_flood", "docs_hang", "docs_inspect", "docs_many", "docs_progress", "docs_prose", "docs_search",
		"notes_add", "notes_boom", "notes_list", "notes_slow_count",
		"tight_crash", "tight_delete", "tight_fail", "tight_flood", "tight_hang", "tight_inspect", "tight_many", "tight_progress", "tight_prose", "tight_search"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools:\n %v\nwant\n %v", names, want)
	}
	search := s.tools["docs_search"]
	if a := search.Annotations; a == nil || !a.ReadOnlyHint || a.DestructiveHint != nil && *a.DestructiveHint {
		t.Errorf("docs_search annotations: %+v", a)
	}
	del := s.tools["docs_delete"]
	if a := del.Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || !a.IdempotentHint {
		t.Errorf("docs_delete annotations: %+v", a)
	}
	if search.Title != "aoi-docs search" || !strings.HasPrefix(search.Description, "Search the documents for a word.") {
		t.Errorf("docs_search title %q description %q", search.Title, search.Description)
	}
	in := schemaOf(t, search.InputSchema)
	props, _ := in["properties"].(map[string]any)
	for p, typ := range map[string]string{"query": "string", "limit": "integer", "tag": "array", "exact_case": "boolean", "cursor": "string"} {
		ps, _ := props[p].(map[string]any)
		if ps["type"] != typ {
			t.Errorf("docs_search input %s: %v, want type %s", p, props[p], typ)
		}
	}
	if len(props) != 5 || !slices.Equal(anyStrings(in["required"]), []string{"query"}) {
		t.Errorf("docs_search inputSchema: %v", in)
	}
	dprops := schemaOf(t, del.InputSchema)["properties"].(map[string]any)
	for _, p := range []string{"id", "dry_run", "idempotency_key"} {
		if dprops[p] == nil {
			t.Errorf("docs_delete input has no %s: %v", p, dprops)
		}
	}
	if dprops["confirm"] != nil || dprops["cursor"] != nil {
		t.Errorf("docs_delete input: %v", dprops)
	}
	// the Python tool's flags were an object with type aliases, its
	// operand variadic; a bounded command with its own --limit gets no
	// other
	lprops := schemaOf(t, s.tools["notes_list"].InputSchema)["properties"].(map[string]any)
	if lprops["limit"].(map[string]any)["type"] != "integer" || lprops["contains"].(map[string]any)["type"] != "string" || lprops["cursor"] == nil || len(lprops) != 3 {
		t.Errorf("notes_list input: %v", lprops)
	}
	aprops := schemaOf(t, s.tools["notes_add"].InputSchema)["properties"].(map[string]any)
	if aprops["words"].(map[string]any)["type"] != "array" || aprops["idempotency_key"] == nil {
		t.Errorf("notes_add input: %v", aprops)
	}
	// the outputSchema carries the command's own event schema
	out := schemaOf(t, search.OutputSchema)
	ev := out["$defs"].(map[string]any)["event"].(map[string]any)
	if ev["title"] != "aoi-docs search event" || ev["$schema"] != nil {
		t.Errorf("docs_search outputSchema event: %v", ev)
	}

	// the refusals, each with its reason
	var mt *host.Host = f.h
	refused := map[string]string{}
	for _, p := range mt.Registry().Catalog().Plugins {
		if p.Manifest.Name == machinetools.Plugin {
			for _, r := range p.Refused() {
				refused[r.Name] = r.Reason
			}
		}
	}
	for name, frag := range map[string]string{
		"broken":    "capabilities: not one JSON object",
		"liar":      "capabilities lists event type item, which the schema does not allow",
		"badschema": "not a JSON Schema",
		"unlisted":  `describes command "other", not the one asked for`,
		"failing":   "capabilities exited with code 1",
		"missing":   "/nonexistent/aoi-cli",
		"pinned":    "not the pinned",
	} {
		if !strings.Contains(refused[name], frag) {
			t.Errorf("refusal of %s: %q, want it to say %q", name, refused[name], frag)
		}
	}
	if len(refused) != 7 {
		t.Errorf("refused: %v", refused)
	}

	// the admin API shows the same
	req, _ := http.NewRequest("GET", strings.TrimSuffix(f.url, "/mcp")+"/admin/plugins", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var admin struct {
		Data struct {
			Plugins []struct {
				Name    string            `json:"name"`
				Tools   []string          `json:"tools"`
				Refused map[string]string `json:"configuration_refused"`
			} `json:"plugins"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&admin); err != nil || len(admin.Data.Plugins) != 1 {
		t.Fatalf("admin plugins: %v %+v", err, admin)
	}
	ap := admin.Data.Plugins[0]
	if ap.Name != machinetools.Plugin || len(ap.Tools) != len(want) || !slices.Contains(ap.Tools, "docs_search") || len(ap.Refused) != 7 || ap.Refused["liar"] != refused["liar"] {
		t.Errorf("admin plugins: %+v", ap)
	}
}

func schemaOf(t *testing.T, v any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(v)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// TestCursor: a bounded search followed page by page through its
// next_cursor to the end, in Go and in Python, in both eras: every page's
// events and summary as the tool wrote them.
func TestCursor(t *testing.T) {
	f := shared(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := f.connect(t, clientOpts{era: era})
			cases := []struct {
				tool  string
				args  map[string]any
				idKey string
				want  []string
				pages int
			}{
				{"docs_search", map[string]any{"query": "agent", "limit": 3}, "id",
					[]string{"doc_1", "doc_2", "doc_3", "doc_5", "doc_6", "doc_8", "doc_9", "doc_10"}, 3},
				{"docs_search", map[string]any{"query": "agent", "limit": 2, "tag": []any{"spec"}}, "id",
					[]string{"doc_1", "doc_3", "doc_5", "doc_6", "doc_8", "doc_9", "doc_10"}, 4},
				{"notes_list", map[string]any{"limit": 3}, "text",
					[]string{"buy tea", "read the AOI-CLI spec", "water the plants", "call the agent vendor", "write the adapter", "test the cursor", "ship it"}, 3},
			}
			for _, c := range cases {
				var got []string
				args := c.args
				pages := 0
				for {
					res, sc := s.call(t, c.tool, args, nil)
					pages++
					if res.IsError {
						t.Fatalf("%s page %d: isError: %v", c.tool, pages, sc)
					}
					for _, e := range events(sc) {
						got = append(got, e[c.idKey].(string))
					}
					sum := summaryOf(sc)
					if sum["ok"] != true {
						t.Fatalf("%s: summary %v", c.tool, sum)
					}
					if sum["truncated"] != true {
						if sum["next_cursor"] != nil {
							t.Fatalf("%s: last page with a cursor: %v", c.tool, sum)
						}
						break
					}
					cur, _ := sum["next_cursor"].(string)
					if cur == "" || pages > 10 {
						t.Fatalf("%s: truncated without a cursor: %v", c.tool, sum)
					}
					args = mapWith(c.args, "cursor", cur)
				}
				if !slices.Equal(got, c.want) || pages != c.pages {
					t.Errorf("%s %v: %d pages %v, want %d pages %v", c.tool, c.args, pages, got, c.pages, c.want)
				}
			}
		})
	}
}

func mapWith(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for kk, vv := range m {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}

// TestErrorScopes: an error of item scope stays an event of a call that
// worked; one of process scope, an authn error that needs an interactive
// login and a summary with ok false make the call isError, with the whole
// error event (category, code, retryable, hint) in the result.
func TestErrorScopes(t *testing.T) {
	f := shared(t)
	s := f.connect(t, clientOpts{era: "2026-07-28"})

	res, sc := s.call(t, "docs_fail", map[string]any{"scope": "item"}, nil)
	evs := events(sc)
	if res.IsError || len(evs) != 3 || evs[1]["scope"] != "item" || evs[1]["code"] != "DOC_MISSING" || evs[2]["type"] != "aoi:warning" || errorOf(sc) != nil {
		t.Errorf("item scope: isError %v %v", res.IsError, sc)
	}

	res, sc = s.call(t, "docs_fail", map[string]any{"scope": "process"}, nil)
	e := errorOf(sc)
	if !res.IsError || e["category"] != "unavailable" || e["code"] != "INDEX_BUSY" || e["retryable"] != true || e["hint"] != "try again in a minute" || e["source"] != nil {
		t.Errorf("process scope: isError %v %v", res.IsError, sc)
	}
	if summaryOf(sc)["ok"] != false {
		t.Errorf("process scope summary: %v", sc)
	}

	res, sc = s.call(t, "docs_fail", map[string]any{"scope": "authn"}, nil)
	e = errorOf(sc)
	if !res.IsError || e["category"] != "authn" || e["code"] != "INTERACTIVE_REQUIRED" || e["retryable"] != false || !strings.Contains(e["hint"].(string), "aoi-docs login") {
		t.Errorf("authn: isError %v %v", res.IsError, sc)
	}

	res, sc = s.call(t, "docs_fail", map[string]any{"scope": "not-ok"}, nil)
	if !res.IsError || summaryOf(sc)["ok"] != false || errorOf(sc) != nil {
		t.Errorf("ok false: isError %v %v", res.IsError, sc)
	}

	// the adapter's own errors: arguments it cannot pass
	for _, args := range []map[string]any{{"scope": "item", "extra": 1}, {"scope": 3}, {}} {
		res, sc = s.call(t, "docs_fail", args, nil)
		e = errorOf(sc)
		if args["scope"] == nil {
			// a missing required flag is the tool's to refuse: the
			// adapter passes what it got
			continue
		}
		if !res.IsError || e["source"] != "aiod" || e["code"] != "INVALID_ARGUMENTS" || len(events(sc)) != 0 || sc["summary"] != nil {
			t.Errorf("arguments %v: %v", args, sc)
		}
	}
}

// TestMisbehaving: a tool that crashes before its summary (Go, and Python
// raising), one that floods stdout past its bound, one that never ends,
// and one that prints prose on stdout: each call fails with the reason,
// promptly, with the events read so far; stderr never reaches the client.
func TestMisbehaving(t *testing.T) {
	f := shared(t)
	s := f.connect(t, clientOpts{era: "2025-11-25"})
	cases := []struct {
		tool   string
		args   map[string]any
		code   string
		msg    string
		events int
		within time.Duration
	}{
		{"docs_crash", nil, "NO_SUMMARY", "ended without a summary (exit code 3)", 1, 20 * time.Second},
		{"notes_boom", nil, "NO_SUMMARY", "ended without a summary (exit code 1)", 1, 20 * time.Second},
		{"tight_flood", nil, "OUTPUT_LIMIT", "more than 65536 bytes", -1, 20 * time.Second},
		{"tight_hang", nil, "DEADLINE", "did not finish within 1.5s", 0, 20 * time.Second},
		{"docs_prose", nil, "NOT_MACHINE_MODE", `line 2 is not a JSON object (machine mode allows nothing else on stdout): "Found 1 result:"`, 0, 20 * time.Second},
	}
	for _, c := range cases {
		t0 := time.Now()
		res, sc := s.call(t, c.tool, c.args, nil)
		took := time.Since(t0)
		e := errorOf(sc)
		if !res.IsError || e["source"] != "aiod" || e["code"] != c.code || !strings.Contains(e["message"].(string), c.msg) || sc["summary"] != nil {
			t.Errorf("%s: isError %v error %v", c.tool, res.IsError, e)
		}
		if n := len(events(sc)); c.events >= 0 && n != c.events || c.events < 0 && n == 0 {
			t.Errorf("%s: %d events", c.tool, n)
		}
		if took > c.within {
			t.Errorf("%s took %s", c.tool, took)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if strings.Contains(text, "stderr-secret") || strings.Contains(text, "stderr-only") || strings.Contains(text, "Traceback") {
			t.Errorf("%s: stderr reached the client: %s", c.tool, text)
		}
	}
}

// TestEnvironment: the tool runs in the workspace with stdin closed, and
// of aiod's environment gets only the variables its registration names
// (and PATH).
func TestEnvironment(t *testing.T) {
	f := shared(t)
	s := f.connect(t, clientOpts{era: "2026-07-28"})
	res, sc := s.call(t, "docs_inspect", nil, nil)
	if res.IsError {
		t.Fatalf("inspect: %v", sc)
	}
	facts := events(sc)[0]
	names := anyStrings(facts["env_names"])
	if !slices.Equal(names, []string{"AIOD_MT_TOKEN", "PATH"}) {
		t.Errorf("environment names %v", names)
	}
	env := facts["env"].(map[string]any)
	if env["AIOD_MT_TOKEN"] != "token-for-docs" {
		t.Errorf("env %v", env)
	}
	ws, _ := filepath.EvalSymlinks(f.workspace)
	if facts["cwd"] != ws || facts["stdin"] != "" {
		t.Errorf("cwd %v (workspace %s), stdin %q", facts["cwd"], ws, facts["stdin"])
	}
	// tight names no variable
	_, sc = s.call(t, "tight_inspect", nil, nil)
	if names := anyStrings(events(sc)[0]["env_names"]); !slices.Equal(names, []string{"PATH"}) {
		t.Errorf("tight's environment names %v", names)
	}
}

// TestConfirm: a destructive command that requires confirmation asks the
// user through elicitation in both eras: accepted it runs (with
// --confirm), declined or cancelled it does not, and a client that cannot
// be asked gets an error without anything run; a dry run asks nothing.
func TestConfirm(t *testing.T) {
	f := shared(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var asked []string
			var mu sync.Mutex
			answer := func(action string, confirm bool) func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, r.Params.Message)
					mu.Unlock()
					if action != "accept" {
						return &mcp.ElicitResult{Action: action}, nil
					}
					return &mcp.ElicitResult{Action: action, Content: map[string]any{"confirm": confirm}}, nil
				}
			}
			id := "d-" + strings.ReplaceAll(era, "-", "")
			file := filepath.Join(f.workspace, "deleted-"+id)
			os.Remove(file)
			deleted := func() bool { _, err := os.Stat(file); return err == nil }

			for _, a := range []struct {
				action  string
				confirm bool
			}{{"decline", false}, {"cancel", false}, {"accept", false}} {
				s := f.connect(t, clientOpts{era: era, elicit: answer(a.action, a.confirm)})
				res, sc := s.call(t, "docs_delete", map[string]any{"id": id}, nil)
				if e := errorOf(sc); !res.IsError || e["code"] != "NOT_CONFIRMED" || deleted() {
					t.Errorf("%s (confirm %v): %v, deleted %v", a.action, a.confirm, sc, deleted())
				}
			}
			none := f.connect(t, clientOpts{era: era})
			res, sc := none.call(t, "docs_delete", map[string]any{"id": id}, nil)
			if e := errorOf(sc); !res.IsError || e["code"] != "CONFIRMATION_UNAVAILABLE" || deleted() {
				t.Errorf("no elicitation: %v", sc)
			}
			// a dry run needs no confirmation, and changes nothing
			mu.Lock()
			before := len(asked)
			mu.Unlock()
			res, sc = none.call(t, "docs_delete", map[string]any{"id": id, "dry_run": true}, nil)
			if evs := events(sc); res.IsError || len(evs) != 1 || evs[0]["type"] != "aoi:plan" || deleted() {
				t.Errorf("dry run: %v", sc)
			}
			// an operand cannot pass a flag: it comes after "--"
			res, sc = none.call(t, "docs_delete", map[string]any{"id": "--confirm", "dry_run": true}, nil)
			if evs := events(sc); res.IsError || len(evs) != 1 || evs[0]["type"] != "aoi:plan" || evs[0]["id"] != "--confirm" {
				t.Errorf("an operand that looks like a flag: %v", sc)
			}
			if _, err := os.Stat(filepath.Join(f.workspace, "deleted---confirm")); err == nil {
				t.Errorf("an operand confirmed the deletion")
			}

			yes := f.connect(t, clientOpts{era: era, elicit: answer("accept", true)})
			res, sc = yes.call(t, "docs_delete", map[string]any{"id": id, "idempotency_key": "k-1"}, nil)
			if evs := events(sc); res.IsError || len(evs) != 1 || evs[0]["type"] != "deleted" || !deleted() {
				t.Errorf("accepted: %v, deleted %v", sc, deleted())
			}
			if b, _ := os.ReadFile(file); string(b) != "k-1" {
				t.Errorf("idempotency key passed: %q", b)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != before+1 || before != 3 {
				t.Errorf("asked %d times: %q", len(asked), asked)
			}
			for _, m := range asked {
				if !strings.Contains(m, "delete") || !strings.Contains(m, id) {
					t.Errorf("the question does not say what runs: %q", m)
				}
			}
		})
	}
}

// TestProgress: aoi:progress events become notifications/progress when
// the client sent a token, in both eras (Go and Python); none without one.
func TestProgress(t *testing.T) {
	f := shared(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			s := f.connect(t, clientOpts{era: era, progress: func(p *mcp.ProgressNotificationParams) {
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			}})
			for _, c := range []struct {
				tool string
				args map[string]any
				n    int
			}{
				{"docs_progress", map[string]any{"steps": 4, "pause_ms": 50}, 4},
				{"notes_slow_count", map[string]any{"to": 3}, 3},
			} {
				mu.Lock()
				got = nil
				mu.Unlock()
				res, sc := s.call(t, c.tool, c.args, nil)
				if res.IsError || len(events(sc)) != 1 {
					t.Fatalf("%s: %v", c.tool, sc)
				}
				mu.Lock()
				if len(got) != 0 {
					t.Errorf("%s: %d notifications without a token", c.tool, len(got))
				}
				mu.Unlock()
				res, sc = s.call(t, c.tool, c.args, "tok-"+c.tool)
				if res.IsError {
					t.Fatalf("%s: %v", c.tool, sc)
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					mu.Lock()
					n := len(got)
					mu.Unlock()
					if n >= c.n || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				mu.Lock()
				if len(got) != c.n {
					t.Errorf("%s: %d notifications, want %d", c.tool, len(got), c.n)
				}
				for i, p := range got {
					if p.ProgressToken != "tok-"+c.tool || p.Progress != float64(i+1) || p.Total != float64(c.n) || !strings.Contains(p.Message, "") {
						t.Errorf("%s: notification %d: %+v", c.tool, i, p)
					}
				}
				mu.Unlock()
			}
		})
	}
}

// TestMany: a large stream (10,000 events) comes through whole.
func TestMany(t *testing.T) {
	f := shared(t)
	s := f.connect(t, clientOpts{era: "2026-07-28"})
	res, sc := s.call(t, "docs_many", map[string]any{"count": 10000}, nil)
	evs := events(sc)
	if res.IsError || len(evs) != 10000 || evs[9999]["id"] != "doc_10000" || summaryOf(sc)["count"] != float64(10000) {
		t.Fatalf("many: isError %v, %d events", res.IsError, len(evs))
	}
}
