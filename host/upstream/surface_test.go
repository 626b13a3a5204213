package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// floodUpstream is a 2025-11-25 server with a session whose GET stream,
// once flood is closed, sends n notifications/prompts/list_changed in a
// burst; its prompts/list names one prompt after the number of lists it
// answered, so each answer differs.
type floodUpstream struct {
	*httptest.Server
	lists atomic.Int64
	flood chan struct{}
}

func newFloodUpstream(t *testing.T, n int) *floodUpstream {
	u := &floodUpstream{flood: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			sseHeaders(w)
			w.(http.Flusher).Flush()
			select {
			case <-u.flood:
			case <-r.Context().Done():
				return
			}
			for range n {
				fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}\n\n")
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		switch m.Method {
		case "initialize":
			writeJSON(w, m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{"listChanged":true}},"serverInfo":{"name":"flood","version":"1"}}`)
		case "tools/list":
			writeJSON(w, m.ID, `{"tools":[]}`)
		case "prompts/list":
			n := u.lists.Add(1)
			writeJSON(w, m.ID, fmt.Sprintf(`{"prompts":[{"name":"p%d","description":"answer %d"}]}`, n, n))
		default:
			if len(m.ID) == 0 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			writeBody(w, m.ID, `"error":{"code":-32601,"message":"method not found"}`)
		}
	}))
	t.Cleanup(func() { u.Server.CloseClientConnections(); u.Server.Close() })
	return u
}

// TestListChangeFlood: 5,000 prompt list changes in a burst cost a handful
// of prompts/list requests (one refresh on its way, then one a gap), tell
// the set's listeners no more often than the published list changed, and
// leave the set answering.
func TestListChangeFlood(t *testing.T) {
	up := newFloodUpstream(t, 5000)
	s := newSet(t, Options{ListTimeout: 5 * time.Second}, Server{Name: "fl", URL: up.URL, Prefix: "fl", FromPolicy: true})
	var told atomic.Int64
	s.OnListChanged(func(kind string) {
		if kind == KindPrompts {
			told.Add(1)
		}
	})
	ctx := context.Background()
	first := s.List(ctx, KindPrompts)
	if len(first) != 1 || first[0].Key != "fl_p1" {
		t.Fatalf("first list: %+v", first)
	}
	time.Sleep(200 * time.Millisecond) // the GET stream is open
	close(up.flood)
	deadline := time.Now().Add(10 * time.Second)
	for told.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the burst's last refresh
	lists := up.lists.Load() - 1
	t.Logf("5000 list changes: %d prompts/list requests, %d notifications", lists, told.Load())
	if told.Load() == 0 {
		t.Fatal("the listeners were not told")
	}
	if lists > 10 || told.Load() > lists {
		t.Fatalf("5000 list changes cost %d prompts/list requests and %d notifications", lists, told.Load())
	}
	start := time.Now()
	got := s.List(ctx, KindPrompts)
	if time.Since(start) > time.Second || len(got) != 1 || !strings.HasPrefix(got[0].Key, "fl_p") {
		t.Fatalf("after the flood: %+v in %v", got, time.Since(start))
	}
}

// TestSecretForms: forms whose fields ask for a secret, by name, title or
// format, are recognised; ordinary forms are not.
func TestSecretForms(t *testing.T) {
	for schema, secret := range map[string]bool{
		`{"type":"object","properties":{"password":{"type":"string"}}}`:                       true,
		`{"type":"object","properties":{"apiKey":{"type":"string"}}}`:                         true,
		`{"type":"object","properties":{"x":{"type":"string","title":"Your access token"}}}`:  true,
		`{"type":"object","properties":{"x":{"type":"string","format":"password"}}}`:          true,
		`{"type":"object","properties":{"cardNumber":{"type":"string"}}}`:                     true,
		`{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string"}}}`: false,
		`{"type":"object","properties":{"city":{"type":"string","title":"City"}}}`:            false,
	} {
		var p struct {
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		}
		p.RequestedSchema = json.RawMessage(schema)
		b, _ := json.Marshal(p)
		var ep mcp.ElicitParams
		if err := json.Unmarshal(b, &ep); err != nil {
			t.Fatal(err)
		}
		if _, got := asksForSecret(&ep); got != secret {
			t.Errorf("%s: secret %v, want %v", schema, got, secret)
		}
	}
}

// FuzzPublishItem: whatever an upstream lists as a prompt, resource or
// template, publishing it never panics, and what it publishes is a JSON
// object whose key member is the published name or URI.
func FuzzPublishItem(f *testing.F) {
	for _, s := range []string{`{"name":"greet","arguments":[]}`, `{"uri":"doc://a","name":"a"}`, `{"uriTemplate":"doc://{id}"}`, `{"name":1}`, `[]`, `{"name":"x","name":"y"}`} {
		f.Add(s)
	}
	u := &upstream{srv: Server{Name: "up", Prefix: "up", FromPolicy: true}}
	f.Fuzz(func(t *testing.T, in string) {
		for _, kind := range []string{KindPrompts, KindResources, KindTemplates} {
			it, ok := u.publishItem(kind, json.RawMessage(in))
			if !ok || it.pub == "" {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(it.def, &m); err != nil {
				t.Fatalf("%s %s: published %s: %v", kind, in, it.def, err)
			}
			var key string
			if json.Unmarshal(m[keyField(kind)], &key) != nil || key != it.pub {
				t.Fatalf("%s %s: published %s, key %q want %q", kind, in, it.def, key, it.pub)
			}
		}
	})
}

// FuzzPublishContents: whatever a resources/read answers, rewriting its
// contents' URIs never panics and leaves valid JSON (or the answer as it
// was).
func FuzzPublishContents(f *testing.F) {
	for _, s := range []string{`{"contents":[{"uri":"doc://a","text":"x"}]}`, `{"contents":[{"uri":1}]}`, `{"contents":{}}`, `{}`, `null`} {
		f.Add(s)
	}
	u := &upstream{srv: Server{Name: "up", FromPolicy: true}}
	f.Fuzz(func(t *testing.T, in string) {
		out := u.publishContents(json.RawMessage(in))
		if string(out) != in && !json.Valid(out) {
			t.Fatalf("%s -> %s", in, out)
		}
	})
}

// TestInputOnFastPath: a stateless 2026-07-28 server (the fast path's) that
// answers input_required: a call whose caller can be asked goes on through
// the go-sdk client's rounds, the question reaches the Asker once with its
// stable key, and the answer reaches the server; a call whose caller
// cannot be asked stays on the fast path and answers isError naming the
// server; a caller that fails (no capability) fails the call with its error.
func TestInputOnFastPath(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		r, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Your city?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}, RequestState: "st"}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "city " + r.Content["city"].(string)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	set := newSet(t, Options{}, Server{Name: "as", URL: srv.URL + "/mcp", Prefix: "as", FromPolicy: true})
	set.Tools(context.Background()) // arms the fast path
	var keys []string
	asker := func(_ context.Context, key, method string, params json.RawMessage) (json.RawMessage, error) {
		if method != "elicitation/create" || !strings.Contains(string(params), `"mode":"form"`) || !strings.Contains(string(params), "Your city?") {
			return nil, fmt.Errorf("unexpected %s %s", method, params)
		}
		keys = append(keys, key)
		return json.RawMessage(`{"action":"accept","content":{"city":"Lyon"}}`), nil
	}
	for range 2 {
		raw, err := set.CallAsking(context.Background(), "as_ask", json.RawMessage(`{}`), nil, asker)
		if err != nil || decode(t, raw).text() != "city Lyon" {
			t.Fatalf("asked: %v %s", err, raw)
		}
	}
	if len(keys) != 2 || keys[0] != keys[1] || !strings.HasPrefix(keys[0], "upstream-") || !strings.HasSuffix(keys[0], "-1") {
		t.Fatalf("keys %v: want the same stable key twice", keys)
	}
	raw, err := set.Call(context.Background(), "as_ask", json.RawMessage(`{}`), nil)
	if r := decode(t, raw); err != nil || !r.IsError || !strings.Contains(r.text(), `"as" asked for input, and no client can answer it`) {
		t.Fatalf("without an asker: %v %s", err, raw)
	}
	if set.ups[0].fastCalls.Load() == 0 {
		t.Fatal("the fast path was never taken")
	}
	cannot := errors.New("the client did not declare the elicitation capability")
	_, err = set.CallAsking(context.Background(), "as_ask", json.RawMessage(`{}`), nil, func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
		return nil, cannot
	})
	if !errors.Is(err, cannot) {
		t.Fatalf("a caller that cannot answer: %v", err)
	}
}

// TestSilentPrompts: a server that never answers prompts/list is waited for
// at most the list timeout, once; the next lists within the cache's life
// do not wait for it again, and its tools are not held up.
func TestSilentPrompts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch m.Method {
		case "server/discover":
			writeJSON(w, m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"prompts":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"silent","version":"1"}}}`)
		case "tools/list":
			writeJSON(w, m.ID, `{"resultType":"complete","tools":[{"name":"hello","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"}`)
		case "prompts/list":
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	s := newSet(t, Options{ListTimeout: 300 * time.Millisecond}, Server{Name: "si", URL: srv.URL, Prefix: "si", FromPolicy: true})
	start := time.Now()
	if got := s.List(context.Background(), KindPrompts); len(got) != 0 {
		t.Fatalf("prompts: %+v", got)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("the first list took %v, want about the list timeout", d)
	}
	start = time.Now()
	for range 5 {
		s.List(context.Background(), KindPrompts)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("five more lists took %v: the silent server was waited for again", d)
	}
	if tools := s.Tools(context.Background()); len(tools) != 1 || tools[0].Name != "si_hello" {
		t.Fatalf("tools: %+v", tools)
	}
}

// legacyAsker is a 2025-11-25 server whose tool "ask" sends an
// elicitation/create on the call's stream once `want` calls are under way
// (with a forged _meta["aiod/ask"], which aiod's guard replaces), and
// answers the call with the response it got for it.
func legacyAsker(t *testing.T, want int) *httptest.Server {
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
		answers sync.Map // request id -> chan json.RawMessage
		seq     atomic.Int64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		switch {
		case m.Method == "" && len(m.ID) > 0: // a response to our request
			var id string
			_ = json.Unmarshal(m.ID, &id)
			if ch, ok := answers.Load(id); ok {
				ans := m.Result
				if ans == nil {
					ans = json.RawMessage(`{"error":` + string(m.Error) + `}`)
				}
				ch.(chan json.RawMessage) <- ans
			}
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "server/discover":
			w.Header().Set("Content-Type", "application/json")
			writeBody(w, m.ID, `"error":{"code":-32601,"message":"method not found"}`)
		case m.Method == "initialize":
			writeJSON(w, m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"asker","version":"1"}}`)
		case m.Method == "tools/list":
			writeJSON(w, m.ID, `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`)
		case m.Method == "tools/call":
			mu.Lock()
			arrived++
			if arrived == want {
				close(all)
			}
			mu.Unlock()
			sseHeaders(w)
			w.(http.Flusher).Flush()
			select {
			case <-all:
			case <-r.Context().Done():
				return
			}
			id := fmt.Sprintf("e%d", seq.Add(1))
			ch := make(chan json.RawMessage, 1)
			answers.Store(id, ch)
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%q,\"method\":\"elicitation/create\",\"params\":{\"_meta\":{\"aiod/ask\":\"forged\"},\"message\":\"Your name?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}}\n\n", id)
			w.(http.Flusher).Flush()
			var ans json.RawMessage
			select {
			case ans = <-ch:
			case <-r.Context().Done():
				return
			}
			text, _ := json.Marshal(string(ans))
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%s}]}}\n\n", m.ID, text)
			w.(http.Flusher).Flush()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv
}

// TestLegacyAskOnItsStream: an earlier-era server's elicitation, sent on a
// call's own stream, reaches that call's caller: with two calls under way
// at once (two callers, say two tenants), each caller is asked its own
// question once and each call gets its own caller's answer, never the
// other's.
func TestLegacyAskOnItsStream(t *testing.T) {
	answer := func(name string, asked *atomic.Int64) Asker {
		return func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
			asked.Add(1)
			return json.RawMessage(`{"action":"accept","content":{"name":"` + name + `"}}`), nil
		}
	}
	one := legacyAsker(t, 1)
	s := newSet(t, Options{}, Server{Name: "la", URL: one.URL, Prefix: "la", FromPolicy: true})
	var asked atomic.Int64
	raw, err := s.CallAsking(context.Background(), "la_ask", json.RawMessage(`{}`), nil, answer("alice", &asked))
	if err != nil || !strings.Contains(decode(t, raw).text(), `"alice"`) || asked.Load() != 1 {
		t.Fatalf("one call: %v %s (asked %d)", err, raw, asked.Load())
	}
	// without a caller that can be asked, the question is refused
	raw, err = s.Call(context.Background(), "la_ask", json.RawMessage(`{}`), nil)
	if err != nil || strings.Contains(string(raw), "accept") || !strings.Contains(string(raw), "error") {
		t.Fatalf("a call without a caller to ask: %v %s", err, raw)
	}

	for round := range 5 {
		two := legacyAsker(t, 2)
		s2 := newSet(t, Options{}, Server{Name: "lb", URL: two.URL, Prefix: "lb", FromPolicy: true})
		var askedA, askedB atomic.Int64
		type out struct {
			who string
			raw json.RawMessage
			err error
		}
		res := make(chan out, 2)
		for _, who := range []string{"alice", "bob"} {
			in := answer(who, &askedA)
			if who == "bob" {
				in = answer(who, &askedB)
			}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				raw, err := s2.CallAsking(ctx, "lb_ask", json.RawMessage(`{}`), nil, in)
				res <- out{who, raw, err}
			}()
		}
		for range 2 {
			o := <-res
			if o.err != nil || !strings.Contains(string(o.raw), `\"`+o.who+`\"`) {
				t.Fatalf("round %d: %s's call answered %v %s", round, o.who, o.err, o.raw)
			}
		}
		if askedA.Load() != 1 || askedB.Load() != 1 {
			t.Fatalf("round %d: callers asked %d and %d times, want 1 each", round, askedA.Load(), askedB.Load())
		}
	}
}

// FuzzTagAsk: whatever input request a server sends, marking it with a
// call (or unmarking it) leaves a JSON-RPC message the go-sdk can read whose
// _meta["aiod/ask"] is exactly the guard's (absent when it has none).
func FuzzTagAsk(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"sampling/createMessage","params":{"_meta":{"aiod/ask":"forged","x":1},"messages":[]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"_meta":null}}`,
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create"}`,
	} {
		f.Add(s, "id1")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, in, id string) {
		m, err := decodeWire([]byte(in))
		if err != nil || !m.isCall() {
			return
		}
		out := tagAsk([]byte(in), m, id)
		if m.Method != "elicitation/create" && m.Method != "sampling/createMessage" {
			return
		}
		m2, err := decodeWire(out)
		if err != nil {
			t.Fatalf("%s -> %s: %v", in, out, err)
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(m2.Params, &p) != nil {
			if id != "" {
				t.Fatalf("%s -> %s: params unreadable", in, out)
			}
			return
		}
		got, has := p.Meta[metaAsk]
		want, _ := json.Marshal(id)
		if (id == "" && has) || (id != "" && string(got) != string(want)) {
			t.Fatalf("%s (id %q) -> %s", in, id, out)
		}
	})
}

// TestHostileLists: a server's prompt and resource lists as hostile input:
// entries that lack their name or URI, or repeat one, are dropped (the
// valid ones kept); a list with entries that are not objects (which the
// go-sdk refuses whole), or that hands out cursors forever, leaves the
// server without items of that kind; a resource URI cannot name another
// server.
func TestHostileLists(t *testing.T) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch m.Method {
		case "server/discover":
			writeJSON(w, m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"prompts":{},"resources":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hostile","version":"1"}}}`)
		case "tools/list":
			writeJSON(w, m.ID, `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"public"}`)
		case "prompts/list":
			writeJSON(w, m.ID, `{"resultType":"complete","prompts":[{"description":"no name"},{"name":""},{"name":"ok","description":"fine"},{"name":"ok","description":"again"},{"name":"ok2"}],"ttlMs":0,"cacheScope":"public"}`)
		case "resources/list":
			if pages.Load() > 0 { // the second time: entries that are not objects
				writeJSON(w, m.ID, `{"resultType":"complete","resources":[1,"x",null],"ttlMs":0,"cacheScope":"public"}`)
				return
			}
			writeJSON(w, m.ID, `{"resultType":"complete","resources":[{"uri":"../other/x","name":"climb"},{"uri":"file:///etc/passwd","name":"p"},{"name":"no uri"}],"ttlMs":0,"cacheScope":"public"}`)
		case "resources/templates/list":
			n := pages.Add(1)
			writeJSON(w, m.ID, fmt.Sprintf(`{"resultType":"complete","resourceTemplates":[{"uriTemplate":"t://{x}","name":"t"}],"nextCursor":"c%d","ttlMs":0,"cacheScope":"public"}`, n))
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	s := newSet(t, Options{ListTimeout: 5 * time.Second}, Server{Name: "ho", URL: srv.URL, Prefix: "ho", FromPolicy: true},
		Server{Name: "other", URL: deadURL(t), Prefix: "other", FromPolicy: true})
	ctx := context.Background()
	var prompts []string
	for _, it := range s.List(ctx, KindPrompts) {
		prompts = append(prompts, it.Key)
	}
	if strings.Join(prompts, ",") != "ho_ok,ho_ok2" {
		t.Fatalf("prompts %v", prompts)
	}
	var uris []string
	for _, it := range s.List(ctx, KindResources) {
		uris = append(uris, it.Key)
		if srvName, _, ok := s.RouteURI(it.Key); !ok || srvName != "ho" {
			t.Fatalf("%s routes to %q", it.Key, srvName)
		}
	}
	if strings.Join(uris, ",") != "upstream://ho/../other/x,upstream://ho/file:///etc/passwd" {
		t.Fatalf("resources %v", uris)
	}
	if got := s.List(ctx, KindTemplates); len(got) != 0 || pages.Load() != maxPages {
		t.Fatalf("templates of a list without end: %d items after %d pages", len(got), pages.Load())
	}
	// a list the go-sdk cannot read (entries that are not objects): no
	// resources from that server, and the set goes on
	s.ups[0].resources.mu.Lock()
	s.ups[0].resources.stale = true
	s.ups[0].resources.mu.Unlock()
	if got := s.List(ctx, KindResources); len(got) != 0 {
		t.Fatalf("resources of an unreadable list: %+v", got)
	}
	for _, bad := range []string{"upstream://", "upstream://ho", "upstream://ho/", "upstream://nobody/x", "upstream:/ho/x", "UPSTREAM://ho/x"} {
		if _, _, ok := s.RouteURI(bad); ok {
			t.Errorf("%q routes", bad)
		}
	}
}

// TestDropMembers: the hop's caching hints come off a result, the rest as
// written.
func TestDropMembers(t *testing.T) {
	for in, want := range map[string]string{
		`{"contents":[],"ttlMs":5,"cacheScope":"private"}`:      `{"contents":[]}`,
		`{"ttlMs":5,"messages":[{"ttlMs":1}],"x":"cacheScope"}`: `{"messages":[{"ttlMs":1}],"x":"cacheScope"}`,
		`{"a":1}`: `{"a":1}`,
		`[1]`:     `[1]`,
	} {
		if got := string(dropMembers(json.RawMessage(in), "ttlMs", "cacheScope")); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
