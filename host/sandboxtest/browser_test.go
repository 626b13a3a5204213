package sandboxtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/internal/testplugins"
)

// The viewport of the launched browser.
const vpW, vpH = 1024, 700

// testPage has a button, an input, a drag area and a tall body, and logs
// keys and mouse presses for the checks.
const testPage = `<!doctype html><html><head><title>aiod test</title></head>
<body style="margin:0;height:3000px">
<button id=b style="position:absolute;left:50px;top:50px;width:100px;height:40px" onclick="this.textContent='clicked'">go</button>
<input id=i style="position:absolute;left:50px;top:150px;width:300px;height:30px">
<div id=d style="position:absolute;left:50px;top:250px;width:400px;height:100px;background:#ccc"></div>
<script>
window.keys = [];
document.addEventListener('keydown', e => keys.push((e.ctrlKey ? 'ctrl+' : '') + (e.shiftKey ? 'shift+' : '') + e.key));
window.drag = [];
document.getElementById('d').addEventListener('mousedown', e => drag.push('down ' + e.clientX + ',' + e.clientY));
document.addEventListener('mouseup', e => drag.push('up ' + e.clientX + ',' + e.clientY));
document.addEventListener('mousemove', e => { if (e.buttons & 1) window.dragMoves = (window.dragMoves || 0) + 1; });
document.addEventListener('contextmenu', e => { window.context = e.clientX + ',' + e.clientY; e.preventDefault(); });
</script></body></html>`

var (
	browserOnce sync.Once
	browserSrv  *server
)

// browserServer is a host with the ten built-ins and the hostile cdp
// plugin, and a browser it launched (--browser launch).
func browserServer(t testing.TB) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("launches Chromium: make test runs it, make test-short does not")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatalf("chromium is not installed (.ci/run installs it): %v", err)
	}
	browserOnce.Do(func() {
		dir := plugins(t)
		// The built-ins and the hostile plugin, beside the built-ins'
		// directory (TestMain removes both).
		mixed := dir + "-browser"
		must(t, os.MkdirAll(mixed, 0o755))
		var order []string
		for _, b := range builtins {
			for _, f := range []string{"manifest.json", "plugin.wasm"} {
				writeFile(t, filepath.Join(mixed, b.name, f), readFile(t, filepath.Join(dir, b.name, f)))
			}
			order = append(order, b.name)
		}
		testplugins.Package(t, mixed, "host/sandboxtest/testdata/cdphostile", host.AllFamilies(), nil)
		order = append(order, "cdphostile")
		writeFile(t, filepath.Join(mixed, "order"), strings.Join(order, "\n")+"\n")
		browserSrv = startHost(t, host.Config{Builtins: os.DirFS(mixed),
			Browser: browser.Config{Mode: browser.Launch, Viewport: fmt.Sprintf("%dx%d", vpW, vpH)}})
		serversMu.Lock()
		servers["browser"] = browserSrv
		serversMu.Unlock()
	})
	if browserSrv == nil {
		t.Fatal("no browser server")
	}
	return browserSrv
}

// capabilities is GET /v1/capabilities.
func (s *server) capabilities(t testing.TB) map[string]any {
	t.Helper()
	resp, err := client.Get(strings.TrimSuffix(s.url, "/mcp") + "/v1/capabilities")
	must(t, err)
	defer resp.Body.Close()
	var env struct {
		Data map[string]any `json:"data"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&env))
	if env.Data == nil {
		t.Fatal("capabilities: no data")
	}
	return env.Data
}

// pageDriver is the test's own CDP session on the launched browser's page
// (through host/browser attached to it), to navigate and to read the page.
type pageDriver struct {
	t testing.TB
	b *browser.Browser
	s *browser.Session
}

func drive(t testing.TB, s *server) *pageDriver {
	t.Helper()
	var endpoint string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		br, _ := s.capabilities(t)["browser"].(map[string]any)
		if br["status"] == "ready" {
			endpoint, _ = br["endpoint"].(string)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	h, p, err := net.SplitHostPort(endpoint)
	if err != nil {
		t.Fatalf("browser endpoint %q: %v", endpoint, err)
	}
	port, _ := strconv.Atoi(p)
	b, err := browser.New(browser.Config{Host: h, Port: port})
	must(t, err)
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.Conn(ctx)
	must(t, err)
	ts, err := c.Targets(ctx)
	must(t, err)
	for _, ti := range ts {
		if ti.Type == "page" {
			sess, err := c.Attach(ctx, ti.TargetID)
			must(t, err)
			return &pageDriver{t: t, b: b, s: sess}
		}
	}
	t.Fatal("no page")
	return nil
}

func (d *pageDriver) navigate(url string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	loaded, stop := d.s.Subscribe("Page.loadEventFired")
	defer stop()
	_, err := cdp.Call(ctx, d.s, page.Enable, page.EnableParams{})
	must(d.t, err)
	if _, err := cdp.Call(ctx, d.s, page.Navigate, page.NavigateParams{URL: url}); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-loaded:
	case <-ctx.Done():
		d.t.Fatalf("%s did not load", url)
	}
}

// eval evaluates expr in the page and returns its JSON value.
func (d *pageDriver) eval(expr string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	yes := true
	res, err := cdp.Call(ctx, d.s, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: &yes})
	must(d.t, err)
	return string(res.Result.Value)
}

// waitEval polls expr until it is want (JSON), for effects that land a
// moment after the input (scrolling).
func (d *pageDriver) waitEval(expr, want string) {
	d.t.Helper()
	var got string
	for range 100 {
		var a, b any
		if got = d.eval(expr); json.Unmarshal([]byte(got), &a) == nil && json.Unmarshal([]byte(want), &b) == nil && jsonEqual(a, b) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.t.Errorf("%s = %s, want %s", expr, got, want)
}

func act(t *testing.T, s *server, action map[string]any) (string, bool) {
	t.Helper()
	r := s.call(t, "browser_gui_execute_action", map[string]any{"action": action})
	return r.Text(), r.IsError
}

func mustAct(t *testing.T, s *server, action map[string]any) string {
	t.Helper()
	text, isErr := act(t, s, action)
	if isErr || !strings.Contains(text, `"status":"success"`) {
		t.Fatalf("%v: %s", action, text)
	}
	return text
}

func TestBrowserNoBrowser(t *testing.T) {
	t.Parallel() // its own host (and browser), on free ports: it waits more than it computes
	defaultEngine(t, "the browser tools' answer without a browser: host-side CDP, no engine in it")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := startHost(t, host.Config{Builtins: os.DirFS(plugins(t)), Browser: browser.Config{Port: port}})
	defer s.stop()
	want := fmt.Sprintf("no browser reachable over CDP at 127.0.0.1:%d (set BROWSER_REMOTE_DEBUGGING_HOST/_PORT, or start aiod with --browser launch)", port)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		prefix string
	}{
		{"browser_get_info", map[string]any{}, "Failed to get browser info: "},
		{"browser_gui_screenshot", map[string]any{}, "Failed to take screenshot: "},
		{"browser_gui_execute_action", map[string]any{"action": map[string]any{"action_type": "CLICK", "x": 1, "y": 1}}, "Failed to execute CLICK action: "},
	} {
		r := s.call(t, tc.tool, tc.args)
		if !r.IsError || !strings.HasPrefix(r.Text(), tc.prefix) || !strings.Contains(r.Text(), want) {
			t.Errorf("%s: isError %v %q", tc.tool, r.IsError, r.Text())
		}
	}
	// Actions that need no browser still work; bad ones fail before it.
	if text, isErr := act(t, s, map[string]any{"action_type": "WAIT", "duration": 0.05}); isErr || !strings.Contains(text, "Waited 0.05 seconds") {
		t.Errorf("WAIT: %s", text)
	}
	br, _ := s.capabilities(t)["browser"].(map[string]any)
	missing, _ := br["missing"].([]any)
	if br["status"] != "absent" || len(missing) != 1 || !strings.Contains(fmt.Sprint(missing[0]), want) {
		t.Errorf("capabilities browser: %v", br)
	}
	s.alive(t)
}

func TestBrowserTools(t *testing.T) {
	defaultEngine(t, "the browser tools against Chromium: the CDP client is host-side")
	s := browserServer(t)
	d := drive(t, s)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	}))
	defer web.Close()
	d.navigate(web.URL)

	t.Run("get_info", func(t *testing.T) {
		r := s.call(t, "browser_get_info", map[string]any{})
		m := r.Object(t)
		vp := map[string]any{"height": float64(vpH), "width": float64(vpW)}
		if r.IsError || !strings.Contains(fmt.Sprint(m["user_agent"]), "Chrome/") || !strings.HasPrefix(fmt.Sprint(m["cdp_url"]), "ws://127.0.0.1:") ||
			!strings.Contains(fmt.Sprint(m["cdp_url"]), "/devtools/browser/") || m["vnc_url"] != nil || m["cdp_ui_url"] != nil ||
			!jsonEqual(m["viewport"], vp) || !jsonEqual(m["page_viewport"], vp) {
			t.Errorf("browser_get_info: %s", r.Text())
		}
		// aiod's key order: sorted, nested objects too.
		if !strings.HasPrefix(r.Text(), `{"cdp_ui_url":null,"cdp_url":"ws://`) || !strings.Contains(r.Text(), fmt.Sprintf(`"page_viewport":{"height":%d,"width":%d},"user_agent":`, vpH, vpW)) ||
			!strings.HasSuffix(r.Text(), fmt.Sprintf(`"viewport":{"height":%d,"width":%d},"vnc_url":null}`, vpH, vpW)) {
			t.Errorf("browser_get_info key order: %s", r.Text())
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		r := s.call(t, "browser_gui_screenshot", map[string]any{})
		if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "image" || r.Content[0].MimeType != "image/png" {
			t.Fatalf("screenshot: %+v", r)
		}
		b, err := base64.StdEncoding.DecodeString(r.Content[0].Data)
		must(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		must(t, err)
		if sz := img.Bounds().Size(); sz.X != vpW || sz.Y != vpH {
			t.Errorf("screenshot %v, want %dx%d", sz, vpW, vpH)
		}
	})

	t.Run("click", func(t *testing.T) {
		text := mustAct(t, s, map[string]any{"action_type": "CLICK", "x": 100, "y": 70})
		if !strings.Contains(text, "Clicked left button 1 time(s) at (100, 70)") {
			t.Errorf("CLICK: %s", text)
		}
		d.waitEval(`document.getElementById('b').textContent`, `"clicked"`)
		mustAct(t, s, map[string]any{"action_type": "RIGHT_CLICK", "x": 500, "y": 500})
		d.waitEval(`window.context`, `"500,500"`)
	})

	t.Run("typing", func(t *testing.T) {
		mustAct(t, s, map[string]any{"action_type": "CLICK", "x": 100, "y": 165})
		mustAct(t, s, map[string]any{"action_type": "TYPING", "text": "Hi, there! ünï 中文 ✓"})
		d.waitEval(`document.getElementById('i').value`, `"Hi, there! ünï 中文 ✓"`)
		d.eval(`keys.length = 0`)
		mustAct(t, s, map[string]any{"action_type": "HOTKEY", "keys": []string{"ctrl", "a"}})
		mustAct(t, s, map[string]any{"action_type": "PRESS", "key": "backspace"})
		mustAct(t, s, map[string]any{"action_type": "KEY_DOWN", "key": "shift"})
		mustAct(t, s, map[string]any{"action_type": "PRESS", "key": "x"})
		mustAct(t, s, map[string]any{"action_type": "KEY_UP", "key": "shift"})
		mustAct(t, s, map[string]any{"action_type": "PRESS", "key": "Return"})
		d.waitEval(`keys.join(' ')`, `"Control ctrl+a Backspace Shift shift+X Enter"`)
		d.waitEval(`document.getElementById('i').value`, `"X"`)
	})

	t.Run("drag", func(t *testing.T) {
		d.eval(`drag.length = 0`)
		mustAct(t, s, map[string]any{"action_type": "MOVE_TO", "x": 100, "y": 300})
		mustAct(t, s, map[string]any{"action_type": "DRAG_TO", "x": 300, "y": 320})
		mustAct(t, s, map[string]any{"action_type": "DRAG_REL", "x_offset": -50, "y_offset": 0})
		d.waitEval(`drag.join(' ')`, `"down 100,300 up 300,320 down 300,320 up 250,320"`)
		if n := d.eval(`window.dragMoves`); n == "null" || n == "0" {
			t.Errorf("no moves with the button held: %s", n)
		}
	})

	t.Run("scroll", func(t *testing.T) {
		mustAct(t, s, map[string]any{"action_type": "SCROLL", "dy": 3})
		d.waitEval(`scrollY`, `300`)
		mustAct(t, s, map[string]any{"action_type": "SCROLL", "dy": -1})
		d.waitEval(`scrollY`, `200`)
	})

	t.Run("errors", func(t *testing.T) {
		avail := "Available types: MOVE_TO, MOVE_REL, CLICK, RIGHT_CLICK, DOUBLE_CLICK, MOUSE_DOWN, MOUSE_UP, DRAG_TO, DRAG_REL, SCROLL, TYPING, PRESS, KEY_DOWN, KEY_UP, HOTKEY, WAIT, SET_CLIPBOARD"
		for _, tc := range []struct {
			action map[string]any
			want   string
		}{
			{map[string]any{"action_type": "FLY"}, "Invalid action_type: FLY. " + avail},
			{map[string]any{"action_type": "MOVE_TO", "x": 5}, "Failed to create MOVE_TO action: x and y must be given together"},
			{map[string]any{"action_type": "MOVE_TO"}, "Failed to create MOVE_TO action: x is required"},
			{map[string]any{"action_type": "CLICK", "x": 5000, "y": 10}, fmt.Sprintf("Failed to create CLICK action: coordinates (5000, 10) are outside the screen (%dx%d)", vpW, vpH)},
			{map[string]any{"action_type": "CLICK", "button": "side"}, `Failed to create CLICK action: button must be left, right or middle, not "side"`},
			{map[string]any{"action_type": "CLICK", "num_clicks": 4}, "Failed to create CLICK action: num_clicks must be 1, 2 or 3"},
			{map[string]any{"action_type": "SCROLL"}, "Failed to create SCROLL action: dx or dy must be non-zero"},
			{map[string]any{"action_type": "TYPING", "text": ""}, "Failed to create TYPING action: text must not be empty"},
			{map[string]any{"action_type": "PRESS", "key": "nokey"}, `Failed to create PRESS action: unknown key "nokey"`},
			{map[string]any{"action_type": "HOTKEY", "keys": []string{}}, "Failed to create HOTKEY action: keys must name at least one key"},
			{map[string]any{"action_type": "WAIT", "duration": -1}, "Failed to create WAIT action: duration must be a positive number of seconds"},
			{map[string]any{"action_type": "WINDOW_ACTIVATE", "window_id": 1}, "WINDOW_ACTIVATE needs a desktop with windows and an accessibility tree"},
			{map[string]any{"action_type": "NODE_FOCUS", "node_id": "n1"}, "NODE_FOCUS needs a desktop"},
		} {
			text, isErr := act(t, s, tc.action)
			if !isErr || !strings.HasPrefix(text, tc.want) {
				t.Errorf("%v: isError %v %q, want %q", tc.action, isErr, text, tc.want)
			}
		}
		r := s.call(t, "browser_gui_execute_action", map[string]any{})
		if !r.IsError || r.Text() != "action is required" {
			t.Errorf("no action: %s", r.Text())
		}
	})

	t.Run("clipboard", func(t *testing.T) {
		text := mustAct(t, s, map[string]any{"action_type": "SET_CLIPBOARD", "text": "copié ✓"})
		if !strings.Contains(text, "Set the clipboard to 7 character(s)") {
			t.Errorf("SET_CLIPBOARD: %s", text)
		}
		// Read it back as the page (the test grants clipboard-read).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := d.b.Conn(ctx)
		must(t, err)
		must(t, c.Call(ctx, "Browser.setPermission", map[string]any{"permission": map[string]any{"name": "clipboard-read"}, "setting": "granted", "origin": web.URL}, nil))
		yes := true
		res, err := cdp.Call(ctx, d.s, runtime.Evaluate, runtime.EvaluateParams{Expression: "navigator.clipboard.readText()", AwaitPromise: &yes, ReturnByValue: &yes, UserGesture: &yes})
		var got string
		if err != nil || res.ExceptionDetails != nil || json.Unmarshal(res.Result.Value, &got) != nil || got != "copié ✓" {
			t.Errorf("clipboard: %s %v %+v", res.Result.Value, err, res.ExceptionDetails)
		}
	})

	t.Run("wait", func(t *testing.T) {
		began := time.Now()
		text := mustAct(t, s, map[string]any{"action_type": "WAIT", "duration": 0.2})
		if el := time.Since(began); el < 200*time.Millisecond || !strings.Contains(text, "Waited 0.2 seconds") {
			t.Errorf("WAIT: %s after %v", text, el)
		}
	})

	t.Run("hostile", func(t *testing.T) {
		probe := func(args map[string]any) map[string]any {
			t.Helper()
			return s.call(t, "cdp_probe", args).Object(t)
		}
		for _, tc := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"op": "call", "method": "Page.navigate", "params": map[string]any{"url": "about:blank"}}, "denied: CDP method Page.navigate is outside the plugin's cdp scope"},
			{map[string]any{"op": "call", "method": "Target.attachToTarget"}, "denied: CDP method Target.attachToTarget is not available through aiod:cdp.call"},
			{map[string]any{"op": "call", "method": "Network.setCookies", "params": map[string]any{"cookies": []any{}}}, "denied: CDP method Network.setCookies must be named"},
			{map[string]any{"op": "browser", "method": "Browser.close"}, "denied: CDP method Browser.close is not available"},
			{map[string]any{"op": "call", "method": "Runtime.evaluate", "params": map[string]any{"expression": "'x'.repeat(2 << 20)", "returnByValue": true}}, "too_large: the answer to Runtime.evaluate is "},
			{map[string]any{"op": "call", "method": "Runtime.noSuchMethod"}, "invalid: Runtime.noSuchMethod: the browser answered: "},
		} {
			if got := fmt.Sprint(probe(tc.args)["call"]); !strings.HasPrefix(got, tc.want) {
				t.Errorf("%v: %s, want %s", tc.args, got, tc.want)
			}
		}
		m := probe(map[string]any{"op": "flood"})
		events, dropped := m["events"].(float64), m["dropped"].(float64)
		if m["error"] != "ok" || events == 0 || events > browser.MaxSessionEvents || dropped < 20000-browser.MaxSessionEvents || events+dropped < 20000 {
			t.Errorf("flood: %v", m)
		}
		// The page, the browser and the host are fine.
		d.waitEval(`1+1`, `2`)
		s.alive(t)
	})

	// Last: the browser dies in the middle of a call; that call fails,
	// and the next one works on the restarted browser.
	t.Run("crash", func(t *testing.T) {
		errc := make(chan string, 1)
		go func() {
			// Not s.call: no t.Fatal off the test's goroutine.
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": "browser_gui_execute_action", "arguments": map[string]any{"action": map[string]any{"action_type": "TYPING", "text": strings.Repeat("a", 5000)}}}})
			_, b := s.post(t, body)
			var r rpcResponse
			switch {
			case json.Unmarshal(b, &r) != nil || r.Result == nil:
				errc <- "bad answer: " + string(b)
			case !r.Result.IsError:
				errc <- "not an error: " + r.Result.Text()
			default:
				errc <- r.Result.Text()
			}
		}()
		time.Sleep(500 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := d.b.Conn(ctx)
		must(t, err)
		c.Raw(ctx, "Browser.crash", nil) // no answer: the browser is gone
		if text := <-errc; !strings.HasPrefix(text, "Failed to execute TYPING action: ") || !strings.Contains(text, "browser") {
			t.Errorf("the call in flight: %s", text)
		}
		r := s.call(t, "browser_gui_screenshot", map[string]any{})
		if r.IsError || len(r.Content) != 1 || r.Content[0].MimeType != "image/png" {
			t.Errorf("screenshot after the restart: %s", r.Text())
		}
		br, _ := s.capabilities(t)["browser"].(map[string]any)
		if br["status"] != "ready" || br["restarts"] != float64(1) {
			t.Errorf("capabilities after the restart: %v", br)
		}
	})
}

// BenchmarkBrowserScreenshot: browser_gui_screenshot through aiod (HTTP,
// the plugin, aiod:cdp) against the same Page.captureScreenshot sent
// directly over CDP from Go (issue: at most 1.3x).
func BenchmarkBrowserScreenshot(b *testing.B) {
	s := browserServer(b)
	d := drive(b, s)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	}))
	defer web.Close()
	d.navigate(web.URL)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_gui_screenshot","arguments":{}}}`)
	b.Run("aiod", func(b *testing.B) {
		for b.Loop() {
			if status, resp := s.post(b, body); status != 200 || !bytes.Contains(resp, []byte(`"image/png"`)) {
				b.Fatalf("%d %.200s", status, resp)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := cdp.Call(ctx, d.s, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
