package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime/runtimetest"
)

// The page tools (plugins/browser/page, spec/page-tools.md) on hosts
// attached to the Chromium the browser tests launched (browserServer): one
// browser per test binary.

// pageToolNames are the page tools in @agent-infra/mcp-server-browser's order.
var pageToolNames = []string{"browser_navigate", "browser_go_back", "browser_go_forward", "browser_form_input_fill",
	"browser_get_markdown", "browser_get_text", "browser_read_links", "browser_new_tab", "browser_tab_list",
	"browser_switch_tab", "browser_close_tab", "browser_evaluate", "browser_get_download_list", "browser_screenshot",
	"browser_click", "browser_select", "browser_hover", "browser_get_clickable_elements", "browser_scroll",
	"browser_close", "browser_press_key"}

var (
	pageToolsOnce sync.Once
	pageToolsDir  string
)

// pageToolsPackage builds the page tools' package once; edit, when set,
// makes a variant of its manifest in a directory of its own (the same
// module).
func pageToolsPackage(t testing.TB, edit func([]byte) []byte) string {
	t.Helper()
	pageToolsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aiod-pagetools-")
		must(t, err)
		testplugins.Package(t, dir, "plugins/browser/page", host.AllFamilies(), nil)
		pageToolsDir = dir
	})
	if pageToolsDir == "" {
		t.Fatal("no page tools package")
	}
	if edit == nil {
		return pageToolsDir
	}
	dir := tmpDir(t)
	for _, f := range []string{"manifest.json", "plugin.wasm"} {
		b := readFile(t, filepath.Join(pageToolsDir, "browser_page_tools", f))
		if f == "manifest.json" {
			b = string(edit([]byte(b)))
		}
		writeFile(t, filepath.Join(dir, "browser_page_tools", f), b)
	}
	return dir
}

// browserEndpoint is the launched browser's DevTools host and port.
func browserEndpoint(t testing.TB) (string, int) {
	t.Helper()
	s := browserServer(t)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		br, _ := s.capabilities(t)["browser"].(map[string]any)
		if br["status"] == "ready" {
			ep, _ := br["endpoint"].(string)
			h, p, err := net.SplitHostPort(ep)
			must(t, err)
			port, _ := strconv.Atoi(p)
			return h, port
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the launched browser is not ready")
	return "", 0
}

// pageHost starts a host with the ten built-ins attached to the launched
// browser, with the page tools package dir (pageTools: asked for).
func pageHost(t testing.TB, dir string, pageTools bool) *server {
	t.Helper()
	return pageHostOn(t, dir, pageTools, runtimetest.Default)
}

// pageHostOn is pageHost on the named engine.
func pageHostOn(t testing.TB, dir string, pageTools bool, engine string) *server {
	t.Helper()
	h, port := browserEndpoint(t)
	s := startHost(t, host.Config{Builtins: os.DirFS(plugins(t)), Engine: engine,
		Browser:         browser.Config{Mode: browser.Attach, Host: h, Port: port},
		PageToolsConfig: host.PageToolsConfig{PageTools: pageTools, PageToolsFS: os.DirFS(dir)}})
	t.Cleanup(s.stop)
	return s
}

// pcall calls a page tool (their answers are the upstream's: a text that
// is not always the structured content, so not s.call's checks).
func pcall(t testing.TB, s *server, tool string, args any) *toolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r := s.rpc(t, "tools/call", map[string]any{"name": tool, "arguments": args})
	if r.Error != nil || r.Result == nil {
		t.Fatalf("%s: JSON-RPC error %+v", tool, r.Error)
	}
	return r.Result
}

// ok calls a tool that must succeed and returns its text.
func ok(t testing.TB, s *server, tool string, args any) string {
	t.Helper()
	r := pcall(t, s, tool, args)
	if r.IsError {
		t.Fatalf("%s %v: isError: %s", tool, args, r.Text())
	}
	return r.Text()
}

// evalJS is browser_evaluate's result, decoded.
func evalJS(t testing.TB, s *server, script string) string {
	t.Helper()
	text := ok(t, s, "browser_evaluate", map[string]any{"script": script})
	v, found := strings.CutPrefix(text, "Execution result:\n")
	if !found {
		t.Fatalf("browser_evaluate: %q", text)
	}
	return strings.TrimSuffix(v, "\n")
}

// The pages of the tests.
const (
	pageHome = `<!doctype html><html><head><title>Home</title></head><body style="margin:0">
<h1>Hello</h1><p>Some <b>bold</b> text.</p>
<a href="/two">Two</a> <a href="/file.txt" download>Get file</a>
<button id=b onclick="document.title='clicked'">Press</button>
<input id=name placeholder="Your name" value="x">
<select id=sel onchange="window.changed = this.value"><option value=a>A</option><option value=b>B</option></select>
<div id=hv onmouseover="this.textContent='hovered'" style="width:200px;height:30px">hover me</div>
<div style="height:1600px"></div>
<script>window.keys = []; document.addEventListener('keydown', e => keys.push(e.key));</script>
</body></html>`
	pageTwo = `<!doctype html><html><head><title>Two</title></head><body><p>second page</p>
<ul><li>one</li><li>two</li></ul><pre>code here</pre></body></html>`
)

func pageSite(t testing.TB) *httptest.Server {
	big := strings.Repeat("lorem ipsum ", 10_000) // 120,000 characters
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, pageHome)
		case "/two":
			fmt.Fprint(w, pageTwo)
		case "/big":
			fmt.Fprint(w, "<!doctype html><title>Big</title><body><p>"+big+"</p></body>")
		case "/file.txt":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Disposition", `attachment; filename="file.txt"`)
			fmt.Fprint(w, "file contents\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(web.Close)
	return web
}

func toolNames(t testing.TB, s *server) []string {
	t.Helper()
	status, body := s.post(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if status != 200 {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	var env struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	must(t, json.Unmarshal(body, &env))
	var names []string
	for _, tl := range env.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestPageToolsListed: the page tools come after the ten built-ins when
// asked for, and a host attached to a browser without --page-tools lists
// exactly the ten.
func TestPageToolsListed(t *testing.T) { onEngines(t, testPageToolsListed) }

func testPageToolsListed(t *testing.T, engine string) {
	dir := pageToolsPackage(t, nil)
	var ten []string
	for _, b := range builtins {
		ten = append(ten, b.name)
	}
	if got := toolNames(t, pageHostOn(t, dir, false, engine)); !slices.Equal(got, ten) {
		t.Errorf("attach without --page-tools lists %v, want the ten", got)
	}
	if got, want := toolNames(t, pageHostOn(t, dir, true, engine)), append(slices.Clone(ten), pageToolNames...); !slices.Equal(got, want) {
		t.Errorf("--page-tools lists %v\nwant %v", got, want)
	}
}

func TestPageTools(t *testing.T) {
	defaultEngine(t, "the page script and its answers in Chromium, not the engine (TestPageToolsListed loads the plugin on every engine)")
	s := pageHost(t, pageToolsPackage(t, nil), true)
	web := pageSite(t)
	home := web.URL + "/"

	t.Run("navigate", func(t *testing.T) {
		text := ok(t, s, "browser_navigate", map[string]any{"url": home})
		want := "Navigated to " + home + "\nclickable elements(Might be outdated, if an error occurs with the index element, use `browser_get_clickable_elements` to refresh it): \n" +
			"[]Hello\n[]Some\n[]bold\n[]text.\n" +
			`[0] [link href="/two"] <a>Two</a>` + "\n" +
			`[1] [download href="/file.txt"] <a>Get file</a>` + "\n" +
			`[2] [button id="b"] <button>Press</button>` + "\n" +
			`[3] [text placeholder="Your name" id="name"] <input>[placeholder: Your name]</input>` + "\n" +
			`[4] [select id="sel"] <select>[select]</select>` + "\n" +
			"[]hover me"
		if text != want {
			t.Errorf("browser_navigate:\n%s\nwant\n%s", text, want)
		}
		if got := ok(t, s, "browser_get_clickable_elements", nil); !strings.HasPrefix(got, "[]Hello\n") || !strings.Contains(got, `[2] [button id="b"] <button>Press</button>`) {
			t.Errorf("browser_get_clickable_elements:\n%s", got)
		}
	})

	t.Run("text", func(t *testing.T) {
		text := ok(t, s, "browser_get_text", nil)
		if !strings.HasPrefix(text, "Hello\n\nSome bold text.\n\nTwo Get file Press") || !strings.Contains(text, "hover me") {
			t.Errorf("browser_get_text: %q", text)
		}
	})

	t.Run("markdown", func(t *testing.T) {
		ok(t, s, "browser_navigate", map[string]any{"url": web.URL + "/two"})
		text := ok(t, s, "browser_get_markdown", nil)
		if want := "Two\nsecond page\n\n- one\n- two\n\n```\ncode here\n```"; text != want {
			t.Errorf("browser_get_markdown: %q, want %q", text, want)
		}
		ok(t, s, "browser_navigate", map[string]any{"url": home})
		if text := ok(t, s, "browser_get_markdown", nil); !strings.HasPrefix(text, "Home\n## Hello\n\nSome **bold** text.\n\n[Two](/two) [Get file](/file.txt)") {
			t.Errorf("browser_get_markdown: %q", text)
		}
	})

	t.Run("links", func(t *testing.T) {
		r := pcall(t, s, "browser_read_links", nil)
		want := `[{"text":"Two","href":"/two"},{"text":"Get file","href":"/file.txt"}]`
		var got, text any
		must(t, json.Unmarshal(r.StructuredContent, &got))
		must(t, json.Unmarshal([]byte(r.Text()), &text))
		if r.IsError || !jsonEqual(got, map[string]any{"links": mustJSON(t, want)}) || !jsonEqual(text, mustJSON(t, want)) ||
			!strings.Contains(r.Text(), "\n  {\n    \"text\": \"Two\",") {
			t.Errorf("browser_read_links: %s / %s", r.StructuredContent, r.Text())
		}
	})

	t.Run("click", func(t *testing.T) {
		ok(t, s, "browser_get_clickable_elements", nil)
		if text := ok(t, s, "browser_click", map[string]any{"index": 2}); text != "Clicked element: 2" {
			t.Errorf("browser_click: %q", text)
		}
		if got := evalJS(t, s, "() => document.title"); got != `"clicked"` {
			t.Errorf("after the click, title = %s", got)
		}
		r := pcall(t, s, "browser_click", map[string]any{"index": 99})
		if !r.IsError || !strings.HasPrefix(r.Text(), "Failed to click element: 99. Error: ") {
			t.Errorf("click on no element: %v %q", r.IsError, r.Text())
		}
		if r := pcall(t, s, "browser_click", nil); !r.IsError || r.Text() != "Element index undefined not found" {
			t.Errorf("click without index: %v %q", r.IsError, r.Text())
		}
	})

	t.Run("form", func(t *testing.T) {
		if text := ok(t, s, "browser_form_input_fill", map[string]any{"index": 3, "value": "Zoë ✓ 中文"}); text != `Successfully filled index 3 with: "Zoë ✓ 中文"` {
			t.Errorf("fill by index: %q", text)
		}
		if got := evalJS(t, s, "() => document.getElementById('name').value"); got != `"xZoë ✓ 中文"` {
			t.Errorf("value after fill = %s", got)
		}
		text := ok(t, s, "browser_form_input_fill", map[string]any{"selector": "#name", "value": "Ann", "clear": true})
		if text != `Successfully filled selector #name with: "Ann" (cleared existing text)` {
			t.Errorf("fill by selector: %q", text)
		}
		if got := evalJS(t, s, "() => document.getElementById('name').value"); got != `"Ann"` {
			t.Errorf("value after clear and fill = %s", got)
		}
		if r := pcall(t, s, "browser_form_input_fill", map[string]any{"value": "v"}); !r.IsError || r.Text() != "Either selector or index must be provided" {
			t.Errorf("fill without target: %q", r.Text())
		}
	})

	t.Run("select", func(t *testing.T) {
		if text := ok(t, s, "browser_select", map[string]any{"selector": "#sel", "value": "b"}); text != "Selected #sel with: b" {
			t.Errorf("browser_select: %q", text)
		}
		if got := evalJS(t, s, "() => [document.getElementById('sel').value, window.changed]"); got != "[\n  \"b\",\n  \"b\"\n]" {
			t.Errorf("after select: %s", got)
		}
		if text := ok(t, s, "browser_select", map[string]any{"index": 4, "value": "a"}); text != "Selected 4 with: a" {
			t.Errorf("browser_select by index: %q", text)
		}
		if r := pcall(t, s, "browser_select", map[string]any{"selector": "#b", "value": "a"}); !r.IsError || r.Text() != "Failed to select #b: Element is not a <select> element." {
			t.Errorf("select on a button: %q", r.Text())
		}
	})

	t.Run("hover", func(t *testing.T) {
		if text := ok(t, s, "browser_hover", map[string]any{"selector": "#hv"}); text != "Hovered #hv" {
			t.Errorf("browser_hover: %q", text)
		}
		if got := evalJS(t, s, "() => document.getElementById('hv').textContent"); got != `"hovered"` {
			t.Errorf("after hover: %s", got)
		}
	})

	t.Run("press_key", func(t *testing.T) {
		evalJS(t, s, "() => { document.getElementById('name').focus(); keys.length = 0; }")
		for _, k := range []string{"Enter", "Tab", "ArrowDown", "ShiftLeft"} {
			if text := ok(t, s, "browser_press_key", map[string]any{"key": k}); text != "Pressed key: "+k {
				t.Errorf("browser_press_key: %q", text)
			}
		}
		if got := evalJS(t, s, "() => keys.join(',')"); got != `"Enter,Tab,ArrowDown,Shift"` {
			t.Errorf("keys pressed: %s", got)
		}
	})

	t.Run("evaluate", func(t *testing.T) {
		if got := evalJS(t, s, "async () => ({ n: 1 + 1, s: 'a<b', l: [true, null] })"); got != "{\n  \"n\": 2,\n  \"s\": \"a<b\",\n  \"l\": [\n    true,\n    null\n  ]\n}" {
			t.Errorf("evaluate: %s", got)
		}
		if got := evalJS(t, s, "() => undefined"); got != "undefined" {
			t.Errorf("evaluate undefined: %s", got)
		}
		if r := pcall(t, s, "browser_evaluate", map[string]any{"script": "() => { throw new Error('boom') }"}); !r.IsError || r.Text() != "Script execution failed: boom" {
			t.Errorf("evaluate throwing: %v %q", r.IsError, r.Text())
		}
	})

	t.Run("scroll", func(t *testing.T) {
		evalJS(t, s, "() => scrollTo(0, 0)")
		if text := ok(t, s, "browser_scroll", map[string]any{"amount": 200}); text != "Scrolled 200 pixels. Did not reach the bottom of the page." {
			t.Errorf("browser_scroll: %q", text)
		}
		if got := evalJS(t, s, "() => scrollY"); got != "200" {
			t.Errorf("scrollY = %s", got)
		}
		if text := ok(t, s, "browser_scroll", map[string]any{"amount": 100000}); !strings.HasSuffix(text, "Reached the bottom of the page.") {
			t.Errorf("browser_scroll to the end: %q", text)
		}
		evalJS(t, s, "() => scrollTo(0, 0)")
		if text := ok(t, s, "browser_scroll", nil); text != fmt.Sprintf("Scrolled %d pixels. Did not reach the bottom of the page.", vpH) {
			t.Errorf("browser_scroll by a viewport: %q", text)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		size := func(r *toolResult) (int, int) {
			t.Helper()
			if r.IsError || len(r.Content) != 2 || r.Content[1].Type != "image" || r.Content[1].MimeType != "image/png" {
				t.Fatalf("browser_screenshot: %+v", r)
			}
			b, err := base64.StdEncoding.DecodeString(r.Content[1].Data)
			must(t, err)
			img, err := png.Decode(bytes.NewReader(b))
			must(t, err)
			return img.Bounds().Dx(), img.Bounds().Dy()
		}
		r := pcall(t, s, "browser_screenshot", map[string]any{"name": "home"})
		if w, h := size(r); w != vpW || h != vpH || r.Content[0].Text != fmt.Sprintf("Screenshot 'home' taken at %dx%d", vpW, vpH) {
			t.Errorf("screenshot %dx%d %q", w, h, r.Content[0].Text)
		}
		if w, h := size(pcall(t, s, "browser_screenshot", map[string]any{"selector": "#hv"})); w != 200 || h != 30 {
			t.Errorf("element screenshot %dx%d, want 200x30", w, h)
		}
		r = pcall(t, s, "browser_screenshot", map[string]any{"fullPage": true})
		if _, h := size(r); h <= vpH || !strings.HasPrefix(r.Content[0].Text, "Screenshot of the whole page taken at ") {
			t.Errorf("full page screenshot height %d %q", h, r.Content[0].Text)
		}
	})

	t.Run("back_forward", func(t *testing.T) {
		ok(t, s, "browser_navigate", map[string]any{"url": home})
		ok(t, s, "browser_navigate", map[string]any{"url": web.URL + "/two"})
		if text := ok(t, s, "browser_go_back", nil); text != "Navigated back" {
			t.Errorf("browser_go_back: %q", text)
		}
		if got := evalJS(t, s, "() => location.pathname"); got != `"/"` {
			t.Errorf("after back: %s", got)
		}
		if text := ok(t, s, "browser_go_forward", nil); text != "Navigated forward" {
			t.Errorf("browser_go_forward: %q", text)
		}
		if got := evalJS(t, s, "() => location.pathname"); got != `"/two"` {
			t.Errorf("after forward: %s", got)
		}
	})

	t.Run("download", func(t *testing.T) {
		ok(t, s, "browser_navigate", map[string]any{"url": home})
		if text := ok(t, s, "browser_click", map[string]any{"index": 1}); text != "Clicked element: 1, Downloading file file.txt" {
			t.Errorf("browser_click on a download: %q", text)
		}
		var list struct {
			List []map[string]any `json:"list"`
		}
		for range 100 {
			r := pcall(t, s, "browser_get_download_list", nil)
			must(t, json.Unmarshal(r.StructuredContent, &list))
			if len(list.List) == 1 && list.List[0]["state"] == "completed" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(list.List) != 1 || list.List[0]["suggestedFilename"] != "file.txt" || list.List[0]["url"] != web.URL+"/file.txt" ||
			list.List[0]["state"] != "completed" || list.List[0]["progress"] != float64(100) {
			t.Errorf("browser_get_download_list: %v", list)
		}
	})

	t.Run("bounded", func(t *testing.T) {
		ok(t, s, "browser_navigate", map[string]any{"url": web.URL + "/big"})
		for _, tool := range []string{"browser_get_text", "browser_get_markdown"} {
			text := ok(t, s, tool, nil)
			body, note, found := strings.Cut(text, "\n\n[aiod: the answer was cut at 100000 of its ")
			if !found || len([]rune(body)) != 100_000 || !strings.HasSuffix(note, " characters]") {
				t.Errorf("%s on a 120,000-character page: %d characters, ending %q", tool, len([]rune(text)), text[max(0, len(text)-80):])
			}
		}
	})

	t.Run("tabs", func(t *testing.T) {
		ok(t, s, "browser_close", nil)
		ok(t, s, "browser_navigate", map[string]any{"url": home})
		if text := ok(t, s, "browser_new_tab", map[string]any{"url": web.URL + "/two"}); text != "Opened new tab with URL: "+web.URL+"/two" {
			t.Errorf("browser_new_tab: %q", text)
		}
		r := pcall(t, s, "browser_tab_list", nil)
		want := fmt.Sprintf("Current Tab: [1] Two\nAll Tabs: \n[0] Title: Home (URL: %s/)\n[1] Title: Two (URL: %s/two)", web.URL, web.URL)
		if r.IsError || r.Text() != want {
			t.Errorf("browser_tab_list:\n%s\nwant\n%s", r.Text(), want)
		}
		var tl struct {
			TabList []map[string]any `json:"tabList"`
		}
		must(t, json.Unmarshal(r.StructuredContent, &tl))
		if len(tl.TabList) != 2 || tl.TabList[1]["active"] != true || tl.TabList[0]["active"] != false || tl.TabList[0]["index"] != float64(0) {
			t.Errorf("tabList: %s", r.StructuredContent)
		}
		if text := ok(t, s, "browser_get_text", nil); !strings.HasPrefix(text, "second page") {
			t.Errorf("text of the new tab: %q", text)
		}
		text := ok(t, s, "browser_switch_tab", map[string]any{"index": 0})
		if want := fmt.Sprintf("Switched to tab 0, All Tabs: \n[0] Home (%s/)\n[1] Two (%s/two)", web.URL, web.URL); text != want {
			t.Errorf("browser_switch_tab: %q, want %q", text, want)
		}
		if text := ok(t, s, "browser_get_text", nil); !strings.HasPrefix(text, "Hello") {
			t.Errorf("text after switching back: %q", text)
		}
		if r := pcall(t, s, "browser_switch_tab", map[string]any{"index": 5}); !r.IsError || r.Text() != "Invalid tab index: 5" {
			t.Errorf("switch to no tab: %q", r.Text())
		}
		if text := ok(t, s, "browser_close_tab", nil); text != "Closed current tab [0]" {
			t.Errorf("browser_close_tab: %q", text)
		}
		r = pcall(t, s, "browser_tab_list", nil)
		if want := fmt.Sprintf("Current Tab: [0] Two\nAll Tabs: \n[0] Title: Two (URL: %s/two)", web.URL); r.Text() != want {
			t.Errorf("after closing: %q", r.Text())
		}
		if text := ok(t, s, "browser_close", nil); text != "Closed browser" {
			t.Errorf("browser_close: %q", text)
		}
		if r := pcall(t, s, "browser_tab_list", nil); r.Text() != "Current Tab: [0] \nAll Tabs: \n[0] Title:  (URL: about:blank)" {
			t.Errorf("after browser_close: %q", r.Text())
		}
		if r := pcall(t, s, "browser_get_download_list", nil); string(r.StructuredContent) != `{"list":[]}` {
			t.Errorf("downloads after browser_close: %s", r.StructuredContent)
		}
	})

	// The current tab closed by someone else: the next call finds the
	// remaining tab (the session the plugin kept is gone with it).
	t.Run("tab_gone", func(t *testing.T) {
		ok(t, s, "browser_new_tab", map[string]any{"url": home})
		if text := ok(t, s, "browser_get_text", nil); !strings.HasPrefix(text, "Hello") {
			t.Fatalf("text of the new tab: %q", text)
		}
		d := drive(t, browserServer(t))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := d.b.Conn(ctx)
		must(t, err)
		ts, err := c.Targets(ctx)
		must(t, err)
		for _, ti := range ts {
			if ti.Type == "page" && ti.URL == home {
				must(t, c.Call(ctx, "Target.closeTarget", map[string]any{"targetId": ti.TargetID}, nil))
			}
		}
		if text := ok(t, s, "browser_get_text", nil); text != "" {
			t.Errorf("text after the current tab was closed: %q, want about:blank's", text)
		}
		if r := pcall(t, s, "browser_tab_list", nil); r.Text() != "Current Tab: [0] \nAll Tabs: \n[0] Title:  (URL: about:blank)" {
			t.Errorf("tabs after the current tab was closed: %q", r.Text())
		}
	})
}

// TestPageToolsNoBrowser: with no browser reachable every page tool but
// the download list (which, as upstream, needs none) answers isError
// saying what is missing.
func TestPageToolsNoBrowser(t *testing.T) {
	defaultEngine(t, "the page tools' answer without a browser: host-side")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := startHost(t, host.Config{Builtins: os.DirFS(plugins(t)), Browser: browser.Config{Port: port},
		PageToolsConfig: host.PageToolsConfig{PageTools: true, PageToolsFS: os.DirFS(pageToolsPackage(t, nil))}})
	defer s.stop()
	want := fmt.Sprintf("no browser reachable over CDP at 127.0.0.1:%d", port)
	args := map[string]map[string]any{
		"browser_navigate": {"url": "about:blank"}, "browser_form_input_fill": {"index": 0, "value": "v"},
		"browser_new_tab": {"url": "about:blank"}, "browser_switch_tab": {"index": 0}, "browser_evaluate": {"script": "() => 1"},
		"browser_click": {"index": 0}, "browser_select": {"index": 0, "value": "v"}, "browser_hover": {"index": 0},
		"browser_press_key": {"key": "Enter"},
	}
	// in parallel: each call waits for the host's attempt to reach the browser
	type answer struct {
		r   *toolResult
		err string
	}
	answers := make([]answer, len(pageToolNames))
	var wg sync.WaitGroup
	for i, tool := range pageToolNames {
		wg.Go(func() {
			a := args[tool]
			if a == nil {
				a = map[string]any{}
			}
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": a}})
			resp, err := client.Post(s.url, "application/json", bytes.NewReader(body))
			if err != nil {
				answers[i].err = err.Error()
				return
			}
			defer resp.Body.Close()
			var r rpcResponse
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Result == nil {
				answers[i].err = fmt.Sprintf("no result (%v, %+v)", err, r.Error)
				return
			}
			answers[i].r = r.Result
		})
	}
	wg.Wait()
	for i, tool := range pageToolNames {
		r := answers[i].r
		if r == nil {
			t.Errorf("%s: %s", tool, answers[i].err)
			continue
		}
		if tool == "browser_get_download_list" {
			if r.IsError || string(r.StructuredContent) != `{"list":[]}` {
				t.Errorf("%s: %v %s", tool, r.IsError, r.StructuredContent)
			}
			continue
		}
		if !r.IsError || !strings.Contains(r.Text(), want) {
			t.Errorf("%s: isError %v %q", tool, r.IsError, r.Text())
		}
	}
}

// TestBrowserInfoBehindProxy: browser_get_info's cdp_url is the proxy's
// when the request came through one (X-Forwarded-Proto/Host/Prefix, the
// query string echoed), the browser's own otherwise.
func TestBrowserInfoBehindProxy(t *testing.T) {
	defaultEngine(t, "the browser's address behind a proxy: host-side CDP")
	s := pageHost(t, pageToolsPackage(t, nil), false)
	info := func(query string, headers map[string]string) string {
		t.Helper()
		req, err := http.NewRequest("POST", s.url+query, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_get_info","arguments":{}}}`))
		must(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		must(t, err)
		defer resp.Body.Close()
		var r rpcResponse
		must(t, json.NewDecoder(resp.Body).Decode(&r))
		if r.Error != nil || r.Result == nil || r.Result.IsError {
			t.Fatalf("browser_get_info: %+v %+v", r.Error, r.Result)
		}
		var m struct {
			CDPURL string `json:"cdp_url"`
		}
		must(t, json.Unmarshal([]byte(r.Result.Text()), &m))
		return m.CDPURL
	}
	direct := info("", nil)
	_, id, found := strings.Cut(direct, "/devtools/browser/")
	if !strings.HasPrefix(direct, "ws://127.0.0.1:") || !found || id == "" {
		t.Fatalf("direct cdp_url %q", direct)
	}
	got := info("?sandbox=s1", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "sb.example.com, inner", "X-Forwarded-Prefix": "/box"})
	if want := "wss://sb.example.com/box/cdp/devtools/browser/" + id + "?sandbox=s1"; got != want {
		t.Errorf("behind a proxy: %s, want %s", got, want)
	}
	u, _ := url.Parse(s.url)
	if got, want := info("", map[string]string{"X-Forwarded-Prefix": "/p"}), "ws://"+u.Host+"/p/cdp/devtools/browser/"+id; got != want {
		t.Errorf("prefix only (the Host header): %s, want %s", got, want)
	}
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	must(t, json.Unmarshal([]byte(s), &v))
	return v
}

// TestPageToolsScope: the page tools' manifest names the CDP methods they
// send, no pattern and nothing of the browser's beyond tabs and the
// download folder; the host holds the plugin to it (a variant without
// Page.navigate is denied it, naming the method).
func TestPageToolsScope(t *testing.T) {
	defaultEngine(t, "the page tools' tab scope: the page script and the CDP client")
	b, err := os.ReadFile(filepath.Join(pageToolsPackage(t, nil), "browser_page_tools", "manifest.json"))
	must(t, err)
	var m struct {
		Capabilities struct {
			CDP struct {
				Methods    []string `json:"methods"`
				NewTargets bool     `json:"new_targets"`
			} `json:"cdp"`
		} `json:"capabilities"`
	}
	must(t, json.Unmarshal(b, &m))
	methods := slices.Clone(m.Capabilities.CDP.Methods)
	sort.Strings(methods)
	want := []string{"Browser.setDownloadBehavior", "Input.dispatchKeyEvent", "Input.dispatchMouseEvent", "Input.insertText",
		"Page.bringToFront", "Page.captureScreenshot", "Page.enable", "Page.getNavigationHistory", "Page.navigate",
		"Page.navigateToHistoryEntry", "Runtime.evaluate", "Target.closeTarget", "Target.createTarget"}
	if !slices.Equal(methods, want) || !m.Capabilities.CDP.NewTargets {
		t.Errorf("cdp scope %v (new_targets %v), want exactly %v", methods, m.Capabilities.CDP.NewTargets, want)
	}
	narrowed := pageToolsPackage(t, func(b []byte) []byte { return bytes.Replace(b, []byte(`"Page.navigate",`), nil, 1) })
	s := pageHost(t, narrowed, true)
	r := pcall(t, s, "browser_navigate", map[string]any{"url": "about:blank"})
	if !r.IsError || !strings.Contains(r.Text(), "CDP method Page.navigate is outside the plugin's cdp scope") {
		t.Errorf("navigate outside the scope: %v %q", r.IsError, r.Text())
	}
	// the rest of the plugin still works
	ok(t, s, "browser_get_text", nil)
}

// upstreamBrowser is @agent-infra/mcp-server-browser over stdio, attached
// to the browser at host:port.
type upstreamBrowser struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

// upstreamServer is the command line of @agent-infra/mcp-server-browser
// from the pinned Node tools (host/e2e/testdata/install.sh installs them
// if needed and prints Node 22's bin directory).
func upstreamServer(t testing.TB) (node, server string) {
	t.Helper()
	nodeBin := testplugins.NodeTools(t)
	modules := testplugins.NodeModules(nodeBin)
	return filepath.Join(nodeBin, "node"), filepath.Join(modules, "@agent-infra", "mcp-server-browser", "dist", "index.cjs")
}

func startUpstreamBrowser(t testing.TB, h string, port int) *upstreamBrowser {
	t.Helper()
	node, srv := upstreamServer(t)
	cmd := exec.Command(node, srv, "--cdp-endpoint", fmt.Sprintf("http://%s/json/version", net.JoinHostPort(h, strconv.Itoa(port))))
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	u := &upstreamBrowser{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	u.rpc(t, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "aiod-bench", "version": "1"}})
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return u
}

// TestPageToolsMatchUpstream: the page tools' descriptions and input and
// output schemas are those of @agent-infra/mcp-server-browser 1.2.29's
// tools/list, in its order.
func TestPageToolsMatchUpstream(t *testing.T) {
	defaultEngine(t, "the answers against the upstream's: the page script")
	h, port := browserEndpoint(t)
	u := startUpstreamBrowser(t, h, port)
	type tool struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	var up struct{ Tools []tool }
	must(t, json.Unmarshal(u.rpc(t, "tools/list", map[string]any{}), &up))
	s := pageHost(t, pageToolsPackage(t, nil), true)
	status, body := s.post(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	var ours struct {
		Result struct{ Tools []tool } `json:"result"`
	}
	if status != 200 || json.Unmarshal(body, &ours) != nil {
		t.Fatalf("tools/list: %d %.300s", status, body)
	}
	got := ours.Result.Tools[len(builtins):]
	if len(up.Tools) != len(pageToolNames) || len(got) != len(up.Tools) {
		t.Fatalf("%d upstream tools, %d page tools", len(up.Tools), len(got))
	}
	same := func(a, b json.RawMessage) bool {
		var x, y any
		_ = json.Unmarshal(a, &x)
		_ = json.Unmarshal(b, &y)
		return jsonEqual(x, y)
	}
	for i, w := range up.Tools {
		g := got[i]
		if g.Name != w.Name || g.Description != w.Description || !same(g.InputSchema, w.InputSchema) || !same(g.OutputSchema, w.OutputSchema) {
			t.Errorf("tool %d:\n ours %s %q\n  %s\n  %s\n upstream %s %q\n  %s\n  %s", i, g.Name, g.Description, g.InputSchema, g.OutputSchema, w.Name, w.Description, w.InputSchema, w.OutputSchema)
		}
	}
}

func (u *upstreamBrowser) rpc(t testing.TB, method string, params any) json.RawMessage {
	t.Helper()
	u.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": u.id, "method": method, "params": params})
	if _, err := u.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := u.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("upstream %s: %v", method, err)
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &m) == nil && m.ID == u.id {
			return m.Result
		}
	}
}

// BenchmarkPageGetText: browser_get_text on a local page through aiod
// (HTTP, the page tools plugin, aiod:cdp) against
// @agent-infra/mcp-server-browser 1.2.29 (stdio, Puppeteer) on the same
// Chromium, the calls interleaved; reports each median and the ratio
// (issue: aiod at least 2x faster).
func BenchmarkPageGetText(b *testing.B) {
	h, port := browserEndpoint(b)
	s := pageHost(b, pageToolsPackage(b, nil), true)
	web := pageSite(b)
	u := startUpstreamBrowser(b, h, port)
	ok(b, s, "browser_navigate", map[string]any{"url": web.URL + "/"})
	u.rpc(b, "tools/call", map[string]any{"name": "browser_navigate", "arguments": map[string]any{"url": web.URL + "/"}})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_get_text","arguments":{}}}`)
	upArgs := map[string]any{"name": "browser_get_text", "arguments": map[string]any{}}
	var ad, ud []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if status, resp := s.post(b, body); status != 200 || !bytes.Contains(resp, []byte("Hello")) {
			b.Fatalf("aiod: %d %.200s", status, resp)
		}
		t1 := time.Now()
		if res := u.rpc(b, "tools/call", upArgs); !bytes.Contains(res, []byte("Hello")) {
			b.Fatalf("upstream: %.200s", res)
		}
		ad, ud = append(ad, t1.Sub(t0)), append(ud, time.Since(t1))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	am, um := med(ad), med(ud)
	b.ReportMetric(am, "aiod-ms")
	b.ReportMetric(um, "upstream-ms")
	b.ReportMetric(um/am, "x-faster")
}
