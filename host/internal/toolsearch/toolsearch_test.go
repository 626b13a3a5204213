package toolsearch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/mcp"
)

// sandboxTools are the seven sandbox_* built-ins, the default pins.
var sandboxTools = []string{"sandbox_execute_bash", "sandbox_execute_code", "sandbox_file_operations",
	"sandbox_str_replace_editor", "sandbox_get_context", "sandbox_get_packages", "sandbox_load_skill"}

// ctxKey carries a test's tenant: the names it may not see.
type ctxKey struct{}

type testTenant struct {
	hidden map[string]bool
	search *bool // nil: the host's setting
}

// testOptions are Options as the host makes them, over a test tenant in the
// context: hidden names are not visible, search is on unless the tenant
// turns it off (host default on).
func testOptions(pinned ...string) Options {
	return Options{
		Enabled: func(ctx context.Context, _ string) bool {
			if t, _ := ctx.Value(ctxKey{}).(*testTenant); t != nil && t.search != nil {
				return *t.search
			}
			return true
		},
		Visible: func(ctx context.Context, name string) bool {
			t, _ := ctx.Value(ctxKey{}).(*testTenant)
			return t == nil || !t.hidden[name]
		},
		Pinned: pinned,
	}
}

func tenantCtx(search *bool, hidden ...string) context.Context {
	t := &testTenant{hidden: map[string]bool{}, search: search}
	for _, h := range hidden {
		t.hidden[h] = true
	}
	return context.WithValue(context.Background(), ctxKey{}, t)
}

func ptr(b bool) *bool { return &b }

// names are the tool names of a tools/list array.
func names(t testing.TB, list []byte) []string {
	t.Helper()
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(list, &tools); err != nil {
		t.Fatalf("list %s: %v", list, err)
	}
	out := make([]string, len(tools))
	for i, x := range tools {
		out[i] = x.Name
	}
	return out
}

// callResult is a CallToolResult as the two tools answer.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent struct {
		Results []Result          `json:"results"`
		Tools   []json.RawMessage `json:"tools"`
		Unknown []string          `json:"unknown"`
	} `json:"structuredContent"`
	IsError bool `json:"isError"`
}

func call(t testing.TB, c *Catalog, ctx context.Context, name, args string) (callResult, []byte) {
	t.Helper()
	raw, err := c.CallTool(ctx, mcp.CallRequest{Name: name, Args: []byte(args)})
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s %s: result %s: %v", name, args, raw, err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("%s %s: content %s", name, args, raw)
	}
	return r, raw
}

func resultNames(r callResult) []string {
	out := make([]string, len(r.StructuredContent.Results))
	for i, x := range r.StructuredContent.Results {
		out[i] = x.Name
	}
	return out
}

func TestList(t *testing.T) {
	full := listing(testTools(t, 0))
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		pinned []string
		want   []string // nil: the whole catalogue, unchanged
	}{
		{"on, default pins", tenantCtx(nil), sandboxTools, append([]string{SearchTool, DescribeTool}, sandboxTools...)},
		{"on, pins in their order, a missing one left out", tenantCtx(nil), []string{"github_create_issue", "nope", "sandbox_execute_bash"},
			[]string{SearchTool, DescribeTool, "github_create_issue", "sandbox_execute_bash"}},
		{"on, a hidden pin left out", tenantCtx(nil, "sandbox_execute_code"), sandboxTools[:3],
			[]string{SearchTool, DescribeTool, "sandbox_execute_bash", "sandbox_file_operations"}},
		{"on, no pins", tenantCtx(nil), nil, []string{SearchTool, DescribeTool}},
		{"off for the tenant", tenantCtx(ptr(false)), sandboxTools, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(newStub(full), testOptions(tc.pinned...))
			got := c.ListTools(tc.ctx)
			if tc.want == nil {
				if string(got) != string(full) {
					t.Fatalf("tool search off changed tools/list (%d bytes, want %d)", len(got), len(full))
				}
				return
			}
			if n := names(t, got); !slices.Equal(n, tc.want) {
				t.Fatalf("listed %v, want %v", n, tc.want)
			}
			// the pinned tools are listed in their short form, or as
			// tools/list gives them with FullPins
			var defs []json.RawMessage
			_ = json.Unmarshal(got, &defs)
			o := testOptions(tc.pinned...)
			o.FullPins = true
			var fulls []json.RawMessage
			_ = json.Unmarshal(New(newStub(full), o).ListTools(tc.ctx), &fulls)
			if len(fulls) != len(defs) {
				t.Fatalf("with FullPins %d tools listed, else %d", len(fulls), len(defs))
			}
			for i, d := range defs[2:] {
				f := fulls[i+2]
				if !strings.Contains(string(full), string(f)) {
					t.Fatalf("pinned definition %s is not the catalogue's", f)
				}
				if want := shortDef(f); string(d) != string(want) {
					t.Fatalf("pinned definition %s, want the short form %s", d, want)
				}
				if len(d) >= len(f) {
					t.Fatalf("short form %d bytes, the whole definition %d", len(d), len(f))
				}
			}
		})
	}
}

func TestSearchFinds(t *testing.T) {
	c := New(newStub(listing(testTools(t, 0))), testOptions())
	for _, tc := range []struct {
		why, query, want string
	}{
		{"by the whole name", "github_create_pull_request", "github_create_pull_request"},
		{"by words of the name", "merge pull request", "github_merge_pull_request"},
		{"by camelCase and snake_case parts", "reverse geocode", "maps_reverse_geocode"},
		{"by the title", "Run a shell command", "sandbox_execute_bash"},
		{"by description words", "knowledge graph observations", "memory_add_observations"},
		{"by description words, inflected", "vulnerable dependencies", "github_list_dependabot_alerts"},
		{"by a property name", "thread_ts", "slack_reply_to_thread"},
		{"by a camelCase property name", "naturalLanguageQuery", "sentry_search_issues"},
		{"by a property's description", "IANA timezone name", "time_get_current_time"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			r, _ := call(t, c, context.Background(), SearchTool, fmt.Sprintf(`{"query":%q,"limit":5}`, tc.query))
			if r.IsError || !slices.Contains(resultNames(r), tc.want) {
				t.Fatalf("%q found %v, want %s among them", tc.query, resultNames(r), tc.want)
			}
			for _, x := range r.StructuredContent.Results {
				if x.Score <= 0 || x.Description == "" || strings.Contains(x.Description, "\n") {
					t.Fatalf("result %+v: want a positive score and a one-line description", x)
				}
			}
			var text struct{ Results []Result }
			if json.Unmarshal([]byte(r.Content[0].Text), &text) != nil || len(text.Results) != len(r.StructuredContent.Results) {
				t.Fatalf("text block %q is not the structured content", r.Content[0].Text)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	c := New(newStub(listing(testTools(t, 0))), testOptions())
	for _, tc := range []struct {
		args string
		want int
	}{
		{`{"query":"list"}`, DefaultLimit},
		{`{"query":"list","limit":1}`, 1},
		{`{"query":"list","limit":3}`, 3},
		{`{"query":"list","limit":50}`, 50},
		{`{"query":"list","limit":50.0}`, 50},
		{`{"query":"zzyzx"}`, 0},
	} {
		r, _ := call(t, c, context.Background(), SearchTool, tc.args)
		if r.IsError || len(r.StructuredContent.Results) != tc.want {
			t.Errorf("%s: %d results (isError %v), want %d", tc.args, len(r.StructuredContent.Results), r.IsError, tc.want)
		}
		res := r.StructuredContent.Results
		if !sort.SliceIsSorted(res, func(i, j int) bool { return res[i].Score > res[j].Score }) {
			t.Errorf("%s: results not best first: %+v", tc.args, res)
		}
	}
}

func TestAllowList(t *testing.T) {
	full := listing(testTools(t, 0))
	c := New(newStub(full), testOptions())
	hidden := []string{"github_create_pull_request", "github_merge_pull_request", "sandbox_execute_bash"}
	ctx := tenantCtx(nil, hidden...)
	// search never finds a hidden tool, even by its own name
	for _, q := range []string{"create pull request", "merge pull request", "github_create_pull_request", "shell command"} {
		r, _ := call(t, c, ctx, SearchTool, fmt.Sprintf(`{"query":%q,"limit":50}`, q))
		for _, n := range resultNames(r) {
			if slices.Contains(hidden, n) {
				t.Fatalf("%q found hidden %s", q, n)
			}
		}
	}
	// while another tenant finds it
	r, _ := call(t, c, context.Background(), SearchTool, `{"query":"github_create_pull_request","limit":1}`)
	if n := resultNames(r); len(n) != 1 || n[0] != "github_create_pull_request" {
		t.Fatalf("an unrestricted tenant found %v", n)
	}
	// describe answers for a hidden name exactly as for a missing one
	_, hiddenRaw := call(t, c, ctx, DescribeTool, `{"names":["github_create_pull_request"]}`)
	_, missingRaw := call(t, c, ctx, DescribeTool, `{"names":["github_create_pull_requestX"]}`)
	if got, want := strings.ReplaceAll(string(hiddenRaw), "github_create_pull_request", "NAME"), strings.ReplaceAll(string(missingRaw), "github_create_pull_requestX", "NAME"); got != want {
		t.Fatalf("describe of a hidden name:\n%s\nof a missing one:\n%s", got, want)
	}
	// and describes what the tenant may see, as tools/list gives it
	r, _ = call(t, c, ctx, DescribeTool, `{"names":["github_create_issue","sandbox_execute_bash","github_create_issue","nope"]}`)
	if len(r.StructuredContent.Tools) != 1 || !slices.Equal(r.StructuredContent.Unknown, []string{"sandbox_execute_bash", "nope"}) {
		t.Fatalf("described %d tools, unknown %v", len(r.StructuredContent.Tools), r.StructuredContent.Unknown)
	}
	if !strings.Contains(string(full), string(r.StructuredContent.Tools[0])) {
		t.Fatalf("described %s, not the catalogue's definition", r.StructuredContent.Tools[0])
	}
}

func TestDescribeFull(t *testing.T) {
	c := New(newStub(listing(testTools(t, 0))), testOptions())
	r, _ := call(t, c, context.Background(), DescribeTool, `{"names":["sandbox_execute_bash","github_get_me"]}`)
	if r.IsError || len(r.StructuredContent.Tools) != 2 {
		t.Fatalf("described %d", len(r.StructuredContent.Tools))
	}
	var bash map[string]json.RawMessage
	_ = json.Unmarshal(r.StructuredContent.Tools[0], &bash)
	for _, k := range []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"} {
		if bash[k] == nil {
			t.Errorf("sandbox_execute_bash described without %s", k)
		}
	}
}

func TestCallsByName(t *testing.T) {
	stub := newStub(listing(testTools(t, 0)))
	c := New(stub, testOptions(sandboxTools...))
	for _, name := range []string{"sandbox_execute_bash", "github_create_issue", "context7_get_library_docs"} {
		res, err := c.CallTool(tenantCtx(nil), mcp.CallRequest{Name: name, Args: []byte(`{}`)})
		if err != nil || !strings.Contains(string(res), "called "+name) {
			t.Fatalf("call %s: %s, %v", name, res, err)
		}
	}
	if _, err := c.CallTool(tenantCtx(nil), mcp.CallRequest{Name: "nope"}); err != mcp.ErrUnknownTool {
		t.Fatalf("call of a missing tool: %v", err)
	}
	// with tool search off the two names are the catalogue's (here: none)
	if _, err := c.CallTool(tenantCtx(ptr(false)), mcp.CallRequest{Name: SearchTool, Args: []byte(`{"query":"x"}`)}); err != mcp.ErrUnknownTool {
		t.Fatalf("search with tool search off: %v", err)
	}
	if got := len(stub.calls); got != 3 {
		t.Fatalf("%d calls reached the catalogue, want 3", got)
	}
}

func TestBadInput(t *testing.T) {
	c := New(newStub(listing(testTools(t, 0))), testOptions())
	for _, tc := range []struct {
		tool, args, want string
	}{
		{SearchTool, `{"query":""}`, "query must be a non-empty string"},
		{SearchTool, `{"query":"   "}`, "query must be a non-empty string"},
		{SearchTool, `{}`, "query must be a non-empty string"},
		{SearchTool, ``, "query must be a non-empty string"},
		{SearchTool, `{"query":7}`, "arguments: json: cannot unmarshal number"},
		{SearchTool, `{"query":"x","limit":0}`, "limit must be an integer from 1 to 50"},
		{SearchTool, `{"query":"x","limit":51}`, "limit must be an integer from 1 to 50"},
		{SearchTool, `{"query":"x","limit":-3}`, "limit must be an integer from 1 to 50"},
		{SearchTool, `{"query":"x","limit":2.5}`, "limit must be an integer from 1 to 50"},
		{SearchTool, `{"query":"x","limit":"10"}`, "limit must be an integer from 1 to 50"},
		{SearchTool, `{"query":"x","max":3}`, `unknown argument "max"`},
		{SearchTool, `["x"]`, "arguments must be a JSON object"},
		{DescribeTool, `{"names":"sandbox_execute_bash"}`, "names must be an array of tool names"},
		{DescribeTool, `{"names":[1,2]}`, "names must be an array of tool names"},
		{DescribeTool, `{"names":null}`, "names must be an array of tool names"},
		{DescribeTool, `{}`, "names must be an array of tool names"},
		{DescribeTool, `{"names":[]}`, "names must hold from 1 to 50 tool names"},
		{DescribeTool, `{"names":[` + strings.Repeat(`"a",`, 50) + `"a"]}`, "names must hold from 1 to 50 tool names"},
	} {
		r, raw := call(t, c, context.Background(), tc.tool, tc.args)
		if !r.IsError || !strings.Contains(r.Content[0].Text, tc.want) {
			t.Errorf("%s %s: %s, want a tool error saying %q", tc.tool, tc.args, raw, tc.want)
		}
	}
}

// TestRebuild: a swap of the catalogue (a reload) rebuilds the index, at
// once, and a hundred of them leave nothing behind.
func TestRebuild(t *testing.T) {
	defs := testTools(t, 0)
	stub := newStub(listing(defs[:40]))
	c := New(stub, testOptions())
	find := func(q string) []string {
		r, _ := call(t, c, context.Background(), SearchTool, fmt.Sprintf(`{"query":%q,"limit":3}`, q))
		return resultNames(r)
	}
	added := names(t, listing(defs[50:51]))[0]
	if n := find(added); slices.Contains(n, added) {
		t.Fatalf("found %v before the reload added it", n)
	}
	stub.swap(listing(defs[:60]))
	if n := find(added); !slices.Contains(n, added) {
		t.Fatalf("the reload's tool %s not found: %v", added, n)
	}
	stub.swap(listing(defs[:40]))
	if n := find(added); slices.Contains(n, added) {
		t.Fatalf("found %v after the reload removed it", n)
	}
	// the background rebuild after a swap: done without a search
	stub.swap(listing(defs[:61]))
	deadline := time.Now().Add(5 * time.Second)
	for c.cur.Load() == nil || len(c.cur.Load().tools) != 61 {
		if time.Now().After(deadline) {
			t.Fatal("no rebuild after a swap")
		}
		time.Sleep(time.Millisecond)
	}

	defs = defs[:200]
	full := listing(defs)
	measure := func() (int, uint64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	stub.swap(full)
	find("x")
	g0, h0 := measure()
	builds := c.Builds()
	for i := range 100 {
		l := listing(defs[:len(defs)-1-i%2]) // each differs from the one before (full, then 199, 198, 199, ...)
		stub.swap(l)
		if n := find("github_get_me"); !slices.Contains(n, "github_get_me") {
			t.Fatalf("rebuild %d: not found", i)
		}
	}
	time.Sleep(50 * time.Millisecond) // the swaps' background refreshes end
	g1, h1 := measure()
	if got := c.Builds() - builds; got < 100 {
		t.Fatalf("%d builds for 100 swaps", got)
	}
	if g1 > g0+2 {
		t.Fatalf("goroutines grew from %d to %d over 100 rebuilds", g0, g1)
	}
	if h1 > h0+4<<20 {
		t.Fatalf("heap grew from %d to %d bytes over 100 rebuilds", h0, h1)
	}
	t.Logf("100 rebuilds: goroutines %d -> %d, heap %d -> %d KiB", g0, g1, h0>>10, h1>>10)
}

// recallSet is testdata/recall.txt: query and expected tool.
func recallSet(t testing.TB) [][2]string {
	f, err := os.Open("testdata/recall.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, want, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("recall.txt: %q", line)
		}
		out = append(out, [2]string{strings.TrimSpace(q), strings.TrimSpace(want)})
	}
	return out
}

// TestRecall: over the whole test catalogue, the expected tool is among
// the first five results for at least 90% of the recall set's queries.
func TestRecall(t *testing.T) {
	defs := testTools(t, 0)
	c := New(newStub(listing(defs)), testOptions())
	ix := c.index(context.Background())
	set := recallSet(t)
	if len(set) < 100 {
		t.Fatalf("the recall set has %d queries, want at least 100", len(set))
	}
	found, first := 0, 0
	for _, qw := range set {
		if _, ok := ix.byName[qw[1]]; !ok {
			t.Fatalf("recall.txt expects %s, which the catalogue does not hold", qw[1])
		}
		r, _ := call(t, c, context.Background(), SearchTool, fmt.Sprintf(`{"query":%q,"limit":5}`, qw[0]))
		n := resultNames(r)
		switch i := slices.Index(n, qw[1]); {
		case i == 0:
			first++
			found++
		case i > 0:
			found++
		default:
			t.Logf("miss: %q -> %v, want %s", qw[0], n, qw[1])
		}
	}
	recall := float64(found) / float64(len(set))
	t.Logf("top-5 recall %.3f (%d/%d), top-1 %.3f, over %d tools", recall, found, len(set), float64(first)/float64(len(set)), len(defs))
	if recall < 0.9 {
		t.Fatalf("top-5 recall %.3f, want at least 0.9", recall)
	}
}

// TestListSize measures tools/list with and without tool search over the
// test catalogue (tokens: bytes/4, a rough rule of thumb for JSON).
func TestListSize(t *testing.T) {
	for _, n := range []int{500, 0} {
		defs := testTools(t, n)
		full := listing(defs)
		c := New(newStub(full), testOptions(sandboxTools...))
		with := c.ListTools(context.Background())
		t.Logf("%d tools: tools/list %d bytes (~%d tokens) without tool search, %d bytes (~%d tokens) with it (the two tools and the seven sandbox_* pins): %.1f%%",
			len(defs), len(full), len(full)/4, len(with), len(with)/4, 100*float64(len(with))/float64(len(full)))
		if len(with) >= len(full)/5 {
			t.Fatalf("the list with tool search is %d bytes, the catalogue's %d", len(with), len(full))
		}
		// the target: under 2,000 tokens by bytes/4 (gpt-tokenizer's o200k
		// counts fewer: BENCHMARKS.md, "Tool search")
		if len(with) >= 8000 {
			t.Fatalf("tools/list with tool search and the default pins is %d bytes (~%d tokens), want under 2,000 tokens", len(with), len(with)/4)
		}
	}
}

// TestSearchLatency: a search over the 500-tool catalogue answers within
// 2 ms at the 99th percentile over the recall set's queries (each query's
// best of 20 runs). Without -race only: make test runs it in its non-race
// pass (NORACE_RUN).
func TestSearchLatency(t *testing.T) {
	if raceEnabled {
		t.Skip("timing under -race says nothing of the real figure (BenchmarkSearch500 measures it)")
	}
	c := New(newStub(listing(testTools(t, 500))), testOptions())
	ctx := tenantCtx(nil, "github_create_issue")
	var args [][]byte
	for _, qw := range recallSet(t) {
		args = append(args, fmt.Appendf(nil, `{"query":%q}`, qw[0]))
	}
	c.index(ctx)
	// Each query's best of 20 runs, then the 99th percentile over the
	// queries: the search's own cost per query, without the moments the
	// process was not running (make test-short runs four packages at once
	// on two cores; every run's p99 is logged beside it).
	best := make([]time.Duration, len(args))
	var d []time.Duration
	for range 20 {
		for i, a := range args {
			start := time.Now()
			if _, err := c.CallTool(ctx, mcp.CallRequest{Name: SearchTool, Args: a}); err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			d = append(d, el)
			if best[i] == 0 || el < best[i] {
				best[i] = el
			}
		}
	}
	slices.Sort(d)
	slices.Sort(best)
	p50, p99 := best[len(best)/2], best[len(best)*99/100]
	t.Logf("search over 500 tools, each query's best of 20: p50 %v, p99 %v (%d queries); every run: p50 %v, p99 %v",
		p50, p99, len(best), d[len(d)/2], d[len(d)*99/100])
	if p99 > 2*time.Millisecond {
		t.Fatalf("p99 %v, want at most 2ms", p99)
	}
}

func BenchmarkSearch500(b *testing.B) {
	c := New(newStub(listing(testTools(b, 500))), testOptions())
	ctx := tenantCtx(nil, "github_create_issue")
	set := recallSet(b)
	args := make([][]byte, len(set))
	for i, qw := range set {
		args[i] = fmt.Appendf(nil, `{"query":%q}`, qw[0])
	}
	c.index(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := c.CallTool(ctx, mcp.CallRequest{Name: SearchTool, Args: args[i%len(args)]}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild500(b *testing.B) {
	l := listing(testTools(b, 500))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildIndex(l); err != nil {
			b.Fatal(err)
		}
	}
}
