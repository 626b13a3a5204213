package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/upstream"
)

// Names a plugin or an upstream chooses, each of which runs script when a
// page puts it into its markup: the admin page must show them as text.
const (
	hostileVersion = `1-<img src=x onerror=window.__pwnedVersion=1>`
	hostileTool    = `<img src=x onerror=window.__pwnedTool=1>`
	hostileDesc    = `<script>window.__pwnedDesc=1</script>`
	hostileDir     = `<img src=x onerror=window.__pwnedDir=1>`
	pageAdminKey   = "admin-key-for-the-page"
	pageAPIKey     = "api-key-not-admin"
	acmeKey        = "acme-tenant-key"
	secretArgument = "argument-value-never-shown-7c1e"
)

// hostileUpstream is a go-sdk MCP server listing "echo" and a tool whose
// name and description are markup.
func hostileUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("echoed"), nil })
	s.AddTool(&mcp.Tool{Name: hostileTool, Description: hostileDesc, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("x"), nil })
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// setVersion rewrites a manifest's version.
func setVersion(v string) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]any
		testplugins.Must(json.Unmarshal(b, &m))
		m["version"] = v
		out, err := json.Marshal(m)
		testplugins.Must(err)
		return out
	}
}

// adminHost is a host with the admin page on: the swap plugin linked to
// v1 (its version markup), a refused package whose directory name is
// markup, a tenant with quotas, and the hostile upstream behind pins that
// withhold everything at first.
type adminHost struct {
	url, link, v2, pins string
}

func startAdminHost(t *testing.T) adminHost {
	t.Helper()
	work := t.TempDir()
	v1 := testplugins.Package(t, filepath.Join(work, "versions", "1"), "host/plugin/testdata/swapv1", nil, setVersion(hostileVersion))
	v2 := testplugins.Package(t, filepath.Join(work, "versions", "2"), "host/plugin/testdata/swapv2", nil, setVersion("2.0.0"))
	dir := filepath.Join(work, "plugins")
	must(t, os.MkdirAll(filepath.Join(dir, hostileDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, hostileDir, "manifest.json"), []byte(`{"name": `), 0o644))
	link := filepath.Join(dir, "swap")
	relink(t, v1, link)
	sum := sha256.Sum256([]byte(acmeKey))
	policy := filepath.Join(work, "policy.json")
	must(t, os.WriteFile(policy, []byte(`{"tenants": {"acme": {"keys": ["sha256:`+hex.EncodeToString(sum[:])+`"], "tools": ["which"],
		"quotas": {"concurrent_calls": 3, "calls_per_minute": 600, "instances": 5, "sessions": 2}}}}`), 0o644))
	pins := filepath.Join(work, "pins.json")
	up := hostileUpstream(t)
	_, url := serveHost(t, host.Config{PluginsDir: dir, PolicyFile: policy, AdminKey: pageAdminKey, APIKey: pageAPIKey,
		Watch: true, WatchDebounce: 50 * time.Millisecond, PinUpstreams: pins, UpstreamListTimeout: 2 * time.Second,
		Upstreams: []upstream.Server{{Name: "up", URL: up.URL, Prefix: "up"}}})
	return adminHost{url: url, link: link, v2: v2, pins: pins}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// adminRequest sends one request to an admin route and returns its status,
// headers and body.
func adminRequest(t *testing.T, method, url string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func bearer(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }

// chromium is a headless Chromium (Debian's, as .ci/run installs it)
// driven through chromedp, with the page's Content-Security-Policy
// bypassed: the escaping alone must keep markup from running.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (.ci/run installs it): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	ctx, tcancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(tcancel)
	must(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	})))
	return ctx
}

// poll waits in the page until the JavaScript expression cond is true.
func poll(t *testing.T, ctx context.Context, what, cond string, d time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, text)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	must(t, err)
	return v
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAdminPage opens /admin/ in Chromium: without the key (and with the
// API key) it shows nothing but the key form; with it, the plugins,
// tenants, upstreams and recent calls, every name a plugin or upstream
// chose shown as text and none run; a plugin swapped on disk shows within a
// second of the host serving it; Accept pins a withheld upstream tool
// (which clients then see); Reload reloads.
func TestAdminPage(t *testing.T) {
	t.Parallel() // its own host (and browser), on free ports: it waits more than it computes
	if testing.Short() {
		t.Skip("launches Chromium: make test runs it, make test-short does not")
	}
	h := startAdminHost(t)
	ctx := chromium(t)

	// without the key: the page (401), and only its form
	must(t, chromedp.Do(ctx, chromedp.Navigate(h.url+"/admin/")))
	poll(t, ctx, "the key form", `!document.getElementById('login').hidden && document.getElementById('panels').hidden`, 10*time.Second)
	login := func(k string) {
		must(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#key"), k), chromedp.Click(chromedp.CSS(`#login button[type=submit]`))))
	}
	for _, k := range []string{pageAPIKey, acmeKey, "wrong"} {
		login(k)
		poll(t, ctx, "the refusal of a key that is not the admin key", `!document.getElementById('refused').hidden && document.getElementById('refused').textContent.includes('401')`, 10*time.Second)
		if text := eval[string](t, ctx, `document.body.innerText`); strings.Contains(text, "swap") || strings.Contains(text, "acme") || strings.Contains(text, "generation") {
			t.Fatalf("the page shows the host's data to the key %q:\n%s", k, text)
		}
		eval[bool](t, ctx, `document.getElementById('refused').hidden = true`)
	}

	login(pageAdminKey)
	poll(t, ctx, "the plugins", `document.querySelector('#plugins tr[data-row="swap"]') !== null`, 30*time.Second)
	row := func() string {
		return eval[string](t, ctx, `(document.querySelector('#plugins tr[data-row="swap"]') || {innerText: ''}).innerText`)
	}
	if r := row(); !strings.Contains(r, hostileVersion) || !strings.Contains(r, "unsigned") || !strings.Contains(r, "wazero") {
		t.Fatalf("swap row: %q", r)
	}
	if tr := eval[string](t, ctx, `document.querySelector('#tenants tr[data-row="acme"]').innerText`); !strings.Contains(tr, "0 / 3") || !strings.Contains(tr, "(600/min)") || !strings.Contains(tr, "0 / 5") {
		t.Fatalf("acme row: %q", tr)
	}
	poll(t, ctx, "the withheld upstream tools", `document.querySelectorAll('#upstreams button.accept').length === 2`, 30*time.Second)
	poll(t, ctx, "the refused package", `document.getElementById('refusedpkgs').innerText.includes(`+jsString(hostileDir)+`)`, 10*time.Second)

	// a call of tenant acme, with an argument value the page never shows
	req, _ := http.NewRequest("POST", h.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"which","arguments":{"text":"`+secretArgument+`"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "v1:"+secretArgument) {
		t.Fatalf("call as acme: %d %s", resp.StatusCode, b)
	}
	poll(t, ctx, "the call in the recent calls", `document.getElementById('calls').innerText.includes('which') && document.getElementById('calls').innerText.includes('acme')`, 10*time.Second)

	// every name shown as text, none run
	text := eval[string](t, ctx, `document.body.innerText`)
	for _, s := range []string{hostileVersion, hostileTool, hostileDir} {
		if !strings.Contains(text, s) {
			t.Errorf("the page does not show %q as text", s)
		}
	}
	if strings.Contains(text, secretArgument) {
		t.Error("the page shows a call's argument value")
	}
	if _, _, st := adminRequest(t, "GET", h.url+"/admin/state", bearer(pageAdminKey), ""); strings.Contains(st, secretArgument) {
		t.Error("/admin/state carries a call's argument value")
	}
	if ran := eval[[]string](t, ctx, `['__pwnedVersion','__pwnedTool','__pwnedDesc','__pwnedDir'].filter(k => k in window)`); len(ran) > 0 {
		t.Fatalf("markup from a plugin or upstream ran in the page: %v", ran)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('img, main script, main iframe').length`); n != 0 {
		t.Fatalf("the page holds %d elements made from names", n)
	}

	// a swap on disk, while the page is open
	gen := func() float64 {
		_, _, body := adminRequest(t, "GET", h.url+"/admin/plugins", bearer(pageAdminKey), "")
		var r struct {
			Data struct {
				Plugins []struct{ Name, Version string } `json:"plugins"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(body), &r)
		for _, p := range r.Data.Plugins {
			if p.Name == "swap" && p.Version == "2.0.0" {
				return 1
			}
		}
		return 0
	}
	served := make(chan time.Time, 1)
	start := time.Now()
	relink(t, h.v2, h.link)
	go func() {
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if gen() == 1 {
				served <- time.Now()
				return
			}
		}
		close(served)
	}()
	poll(t, ctx, "the swapped version on the page", `(document.querySelector('#plugins tr[data-row="swap"]') || {innerText: ''}).innerText.includes('2.0.0')`, time.Minute)
	shown := time.Now()
	at, ok := <-served
	if !ok {
		t.Fatal("the host never served version 2.0.0")
	}
	lag := shown.Sub(at)
	t.Logf("relink to served %v, to shown on the page %v (page after the host: %v)", at.Sub(start), shown.Sub(start), lag)
	if lag > time.Second {
		t.Fatalf("the page showed the swap %v after the host served it (want within a second)", lag)
	}

	// Accept: each withheld tool pinned as reviewed; clients see echo
	for left := 1; left >= 0; left-- {
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#upstreams button.accept`))))
		poll(t, ctx, "the accepted tool gone from the withheld ones", fmt.Sprintf(`document.querySelectorAll('#upstreams button.accept').length === %d`, left), 30*time.Second)
	}
	poll(t, ctx, "no tool withheld", `document.querySelectorAll('#upstreams button.accept').length === 0 && document.getElementById('upstreams').innerText.includes('none')`, 30*time.Second)
	var pf struct {
		Servers map[string]map[string]upstream.Pin `json:"servers"`
	}
	raw, err := os.ReadFile(h.pins)
	must(t, err)
	must(t, json.Unmarshal(raw, &pf))
	if _, ok := pf.Servers["up"]["echo"]; !ok || len(pf.Servers["up"]) != 2 {
		t.Fatalf("pin file after Accept: %s", raw)
	}
	if _, ok := pf.Servers["up"][hostileTool]; !ok {
		t.Fatalf("the markup-named tool is not pinned: %s", raw)
	}
	_, _, list := adminRequest(t, "POST", h.url+"/mcp", map[string]string{"Authorization": "Bearer " + pageAPIKey, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream"}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !strings.Contains(list, `"up_echo"`) {
		t.Fatalf("up_echo not listed once accepted: %s", list)
	}

	// Reload
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#reload`))))
	poll(t, ctx, "the reload's report", `document.getElementById('notice').innerText.includes('reload: generation')`, time.Minute)
	if ran := eval[[]string](t, ctx, `['__pwnedVersion','__pwnedTool','__pwnedDesc','__pwnedDir'].filter(k => k in window)`); len(ran) > 0 {
		t.Fatalf("markup ran: %v", ran)
	}
}

// TestAdminRoutes: the page's routes need the admin key (never the API key
// or a tenant's), every action is a POST another site cannot make a
// browser send (no cookie: the key in a header; a foreign Origin refused),
// nothing changes on a GET, and Accept pins only the definition reviewed.
func TestAdminRoutes(t *testing.T) {
	h := startAdminHost(t)
	u := h.url + "/admin/"
	// the page: with the key, 200 with its policy; without, 401: HTML for
	// a browser, JSON otherwise
	st, hd, body := adminRequest(t, "GET", u, bearer(pageAdminKey), "")
	csp := hd.Get("Content-Security-Policy")
	if st != 200 || !strings.Contains(body, `id="login"`) || !strings.Contains(csp, "script-src 'sha256-") || strings.Contains(csp, "unsafe-inline") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || hd.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("page with the key: %d, CSP %q", st, csp)
	}
	if strings.Contains(body, "swap") || strings.Contains(body, "acme") {
		t.Fatal("the page document carries the host's data (it must fetch it with the key)")
	}
	if st, _, body := adminRequest(t, "GET", u, map[string]string{"Accept": "text/html"}, ""); st != 401 || !strings.Contains(body, `id="login"`) {
		t.Fatalf("page without the key (a browser): %d", st)
	}
	for _, k := range []string{"", pageAPIKey, acmeKey, "wrong"} {
		hdr := map[string]string{}
		if k != "" {
			hdr = bearer(k)
		}
		for _, r := range []struct{ method, path, body string }{{"GET", "state", ""}, {"GET", "upstreams", ""}, {"GET", "plugins", ""},
			{"POST", "reload", ""}, {"POST", "upstreams/accept", `{"server":"up","tool":"echo","digest":"sha256:00"}`}} {
			st, hd, body := adminRequest(t, r.method, u+r.path, hdr, r.body)
			if st != 401 || hd.Get("WWW-Authenticate") != `Bearer realm="aiod-admin"` || strings.Contains(body, "swap") {
				t.Errorf("%s %s with key %q: %d %s", r.method, r.path, k, st, body)
			}
		}
	}
	// a foreign Origin (a page on another site posting with a stolen
	// layout) is refused before anything runs
	hdr := bearer(pageAdminKey)
	hdr["Origin"] = "https://evil.example"
	if st, _, _ := adminRequest(t, "POST", u+"reload", hdr, ""); st != 403 {
		t.Fatalf("reload from a foreign origin: %d", st)
	}
	generation := func() float64 {
		_, _, b := adminRequest(t, "GET", u+"state", bearer(pageAdminKey), "")
		var r struct {
			Data struct {
				Generation float64 `json:"generation"`
			} `json:"data"`
		}
		must(t, json.Unmarshal([]byte(b), &r))
		return r.Data.Generation
	}
	g0 := generation()
	// no action is a GET
	for _, p := range []string{"reload", "upstreams/accept"} {
		if st, _, _ := adminRequest(t, "GET", u+p, bearer(pageAdminKey), ""); st != 405 && st != 404 {
			t.Errorf("GET %s: %d", p, st)
		}
	}
	if g := generation(); g != g0 {
		t.Fatalf("a GET reloaded: generation %v then %v", g0, g)
	}
	if st, _, b := adminRequest(t, "POST", u+"reload", bearer(pageAdminKey), ""); st != 200 || generation() != g0+1 {
		t.Fatalf("reload: %d %s", st, b)
	}

	// Accept: a form post is refused; a digest other than the one listed
	// now pins nothing; the listed one pins that tool only
	form := bearer(pageAdminKey)
	form["Content-Type"] = "application/x-www-form-urlencoded"
	if st, _, _ := adminRequest(t, "POST", u+"upstreams/accept", form, "server=up&tool=echo&digest=x"); st != 415 {
		t.Fatalf("form post: %d", st)
	}
	js := bearer(pageAdminKey)
	js["Content-Type"] = "application/json"
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"server":"up","tool":"echo"}`, 400},
		{`not json`, 400},
		{`{"server":"nope","tool":"echo","digest":"sha256:00"}`, 404},
		{`{"server":"up","tool":"nope","digest":"sha256:00"}`, 404},
		{`{"server":"up","tool":"echo","digest":"sha256:0000"}`, 409},
	} {
		if st, _, b := adminRequest(t, "POST", u+"upstreams/accept", js, c.body); st != c.want {
			t.Errorf("accept %s: %d (want %d) %s", c.body, st, c.want, b)
		}
	}
	if _, err := os.Stat(h.pins); err == nil {
		t.Fatal("a refused accept wrote the pin file")
	}
	_, _, b := adminRequest(t, "GET", u+"upstreams", bearer(pageAdminKey), "")
	var ups struct {
		Data []upstream.ServerReview `json:"data"`
	}
	must(t, json.Unmarshal([]byte(b), &ups))
	if len(ups.Data) != 1 || !ups.Data[0].Reachable || !ups.Data[0].Pinned || len(ups.Data[0].Withheld) != 2 {
		t.Fatalf("upstreams: %s", b)
	}
	var digest string
	for _, w := range ups.Data[0].Withheld {
		if w.Tool == "echo" {
			digest = w.Digest
		}
	}
	if st, _, b := adminRequest(t, "POST", u+"upstreams/accept", js, fmt.Sprintf(`{"server":"up","tool":"echo","digest":%q}`, digest)); st != 200 {
		t.Fatalf("accept echo: %d %s", st, b)
	}
	_, _, b = adminRequest(t, "GET", u+"upstreams", bearer(pageAdminKey), "")
	ups.Data = nil
	must(t, json.Unmarshal([]byte(b), &ups))
	if len(ups.Data[0].Withheld) != 1 || ups.Data[0].Withheld[0].Tool != hostileTool {
		t.Fatalf("after accepting echo: %s", b)
	}
}
