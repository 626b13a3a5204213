package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/cdp"
	"github.com/aiodhq/aiod/sdk/state"
)

// DownloadDir is where the browser saves downloads (Browser.setDownloadBehavior).
const DownloadDir = "/tmp/aiod-downloads"

// navTimeoutMs bounds a navigation's wait for its page's load event.
const navTimeoutMs = 30_000

func errText(prefix string, err error) *sdk.Result { return sdk.ErrorResult(prefix + err.Error()) }

// stale is set when a call found the current tab gone (closed behind the
// plugin's back after its session was checked); the tool is then run once
// more, on the tab current() finds (retrying). One call at a time runs in
// an instance.
var stale bool

// retrying runs a tool, and once more if it found the current tab gone.
func retrying(run func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error)) func(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	return func(c *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
		stale = false
		r, err := run(c, raw)
		if stale {
			stale = false
			return run(c, raw)
		}
		return r, err
	}
}

// jsError is an exception thrown by a script in the page.
type jsError struct{ msg string }

func (e *jsError) Error() string { return e.msg }

type evalResult struct {
	Result struct {
		Type        string          `json:"type"`
		Value       json.RawMessage `json:"value"`
		Description string          `json:"description"`
	} `json:"result"`
	ExceptionDetails *struct {
		Text      string `json:"text"`
		Exception *struct {
			ClassName   string          `json:"className"`
			Description string          `json:"description"`
			Value       json.RawMessage `json:"value"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
}

// eval evaluates expr in the page (awaiting a promise) and decodes its
// value into out (nil: ignored); an exception is a *jsError with its
// message, as Puppeteer reports it.
func eval(s *cdp.Session, expr string, out any) (*evalResult, error) {
	var res evalResult
	err := s.CallTimeout("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true, "userGesture": true}, &res, navTimeoutMs)
	if err != nil {
		if errors.Is(err, cdp.ErrNotFound) { // the tab is gone: the next current() looks again
			_, _ = state.Delete(keyCurrent)
			stale = true
		}
		return nil, err
	}
	if d := res.ExceptionDetails; d != nil {
		msg := d.Text
		if e := d.Exception; e != nil {
			switch {
			case e.Description != "":
				msg, _, _ = strings.Cut(e.Description, "\n")
				if e.ClassName != "" {
					msg = strings.TrimPrefix(msg, e.ClassName+": ")
				}
			case len(e.Value) > 0:
				msg = string(e.Value)
				if u, err := strconv.Unquote(msg); err == nil {
					msg = u
				}
			}
		}
		return nil, &jsError{msg}
	}
	if out != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			return nil, fmt.Errorf("the page answered an unexpected value: %w", err)
		}
	}
	return &res, nil
}

// withLib is expr after the page script (page.js, installed once per
// document).
func withLib(expr string) string { return pageJS + ";\n" + expr }

// cutText is the text of an answer bounded to MaxText characters, with a
// note saying how much was left out.
type cutText struct {
	Text  string `json:"text"`
	Total int    `json:"total"`
}

func (c cutText) String() string {
	if c.Total <= len([]rune(c.Text)) {
		return c.Text
	}
	return c.Text + fmt.Sprintf("\n\n[aiod: the answer was cut at %d of its %d characters]", MaxText, c.Total)
}

// bound cuts a Go string to MaxText characters, with the same note.
func bound(s string) string {
	r := []rune(s)
	if len(r) <= MaxText {
		return s
	}
	return cutText{Text: string(r[:MaxText]), Total: len(r)}.String()
}

// prepare readies a page for a tool that may navigate or download: the
// Page domain's events (downloads) and where downloads go. A tenant's
// session may not set the browser's download behaviour; its downloads
// then follow the browser's default.
func prepare(s *cdp.Session) {
	_ = s.Call("Page.enable", nil, nil)
	_ = cdp.Browser("Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": DownloadDir}, nil)
}

// waitLoad waits (at most ms) for the page's document to finish loading;
// a navigation that replaced the document mid-wait is waited for again.
func waitLoad(s *cdp.Session, ms int) error {
	deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
	const expr = `new Promise((r) => { if (document.readyState === 'complete') r(true); else addEventListener('load', () => r(true), { once: true }); setTimeout(() => r(false), %d); })`
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("timeout")
		}
		var ok bool
		_, err := eval(s, fmt.Sprintf(expr, left.Milliseconds()), &ok)
		if err == nil && ok {
			return nil
		}
		if err == nil && !ok {
			return errors.New("timeout")
		}
		var je *jsError
		if errors.As(err, &je) || errors.Is(err, cdp.ErrNotFound) || errors.Is(err, cdp.ErrUnavailable) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // the context was replaced: wait in the new one
	}
}

// listClickables numbers the page's clickable elements and answers their
// listing ("" when there are none).
func listClickables(s *cdp.Session) (string, error) {
	var c cutText
	if _, err := eval(s, withLib(fmt.Sprintf("window.__aiod.list(%d)", MaxText)), &c); err != nil {
		return "", err
	}
	return c.String(), nil
}

func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// num formats a tool's number argument as JavaScript would.
func num(f *float64) string {
	if f == nil {
		return "undefined"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// elemExpr is a script expression for the element an index (from the last
// listing) or a CSS selector names.
func elemExpr(index *float64, selector string) string {
	if index != nil {
		return "(window.__aiod ? window.__aiod.el(" + num(index) + ") : null)"
	}
	sel, _ := json.Marshal(selector)
	return "document.querySelector(" + string(sel) + ")"
}

// waitSelector waits up to 10 s for selector to match an element.
func waitSelector(s *cdp.Session, selector string) error {
	sel, _ := json.Marshal(selector)
	var ok bool
	_, err := eval(s, fmt.Sprintf(`new Promise((r) => { const t0 = Date.now(); const f = () => { if (document.querySelector(%s)) r(true); else if (Date.now() - t0 > 10000) r(false); else setTimeout(f, 50); }; f(); })`, sel), &ok)
	if err == nil && !ok {
		return &jsError{"Waiting for selector `" + selector + "` failed"} // Puppeteer's words
	}
	return err
}

// point is where an element is, for the mouse: its centre in viewport
// coordinates once scrolled into view, and whether the element is what
// the mouse would hit there.
type point struct {
	Found bool    `json:"found"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Hit   bool    `json:"hit"`
}

func locate(s *cdp.Session, expr string) (point, error) {
	var p point
	_, err := eval(s, `(() => { const el = `+expr+`;
  if (!el) return { found: false };
  let r = el.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) { el.scrollIntoView({ block: 'center', inline: 'center' }); r = el.getBoundingClientRect(); }
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const top = document.elementFromPoint(x, y);
  return { found: true, x, y, hit: !!top && (top === el || el.contains(top)) };
})()`, &p)
	return p, err
}

func mouse(s *cdp.Session, typ string, x, y float64, clicks int) error {
	p := map[string]any{"type": typ, "x": x, "y": y}
	if typ != "mouseMoved" {
		p["button"], p["clickCount"] = "left", clicks
	}
	return s.Call("Input.dispatchMouseEvent", p, nil)
}

// ---- the tools ----

func navigate(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		URL string `json:"url"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Navigation failed ", err), nil
	}
	s, err := current()
	if err != nil {
		return errText("Navigation failed ", err), nil
	}
	prepare(s)
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := s.CallTimeout("Page.navigate", map[string]any{"url": a.URL}, &nav, navTimeoutMs); err != nil {
		if errors.Is(err, cdp.ErrTimeout) {
			return sdk.TextResult("Navigation timeout, but page might still be usable:"), nil
		}
		return errText("Navigation failed ", err), nil
	}
	if nav.ErrorText != "" {
		return sdk.ErrorResult("Navigation failed " + nav.ErrorText + " at " + a.URL), nil
	}
	if err := waitLoad(s, navTimeoutMs); err != nil {
		if err.Error() == "timeout" || errors.Is(err, cdp.ErrTimeout) {
			return sdk.TextResult("Navigation timeout, but page might still be usable:"), nil
		}
		return errText("Navigation failed ", err), nil
	}
	list, _ := listClickables(s)
	text := "Navigated to " + a.URL
	if list != "" {
		text += "\nclickable elements(Might be outdated, if an error occurs with the index element, use `browser_get_clickable_elements` to refresh it): \n" + list
	} else {
		text += "No clickable elements found"
	}
	return sdk.TextResult(text), nil
}

func history(delta int, done, timeout, failed string) (*sdk.Result, error) {
	s, err := current()
	if err != nil {
		return sdk.ErrorResult(failed + ": " + err.Error()), nil
	}
	var h struct {
		CurrentIndex int `json:"currentIndex"`
		Entries      []struct {
			ID  int    `json:"id"`
			URL string `json:"url"`
		} `json:"entries"`
	}
	if err := s.Call("Page.getNavigationHistory", nil, &h); err != nil {
		return sdk.ErrorResult(failed), nil
	}
	i := h.CurrentIndex + delta
	if i < 0 || i >= len(h.Entries) {
		return sdk.TextResult(done), nil // nothing there: Puppeteer answers null, the tool succeeds
	}
	prepare(s)
	if err := s.Call("Page.navigateToHistoryEntry", map[string]any{"entryId": h.Entries[i].ID}, nil); err != nil {
		return sdk.ErrorResult(failed), nil
	}
	// wait for the entry's document
	want, _ := json.Marshal(h.Entries[i].URL)
	deadline := time.Now().Add(navTimeoutMs * time.Millisecond)
	for time.Now().Before(deadline) {
		var ok bool
		if _, err := eval(s, "location.href === "+string(want)+" && document.readyState === 'complete'", &ok); err == nil && ok {
			return sdk.TextResult(done), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return sdk.TextResult(timeout), nil
}

func goBack(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	return history(-1, "Navigated back", "Back navigation timeout, but page might still be usable:", "Could not navigate back")
}

func goForward(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	return history(1, "Navigated forward", "forward navigation timeout, but page might still be usable:", "Could not navigate forward")
}

func formInputFill(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Selector string   `json:"selector"`
		Index    *float64 `json:"index"`
		Value    string   `json:"value"`
		Clear    bool     `json:"clear"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to fill: ", err), nil
	}
	fail := func(err error) (*sdk.Result, error) {
		if a.Selector != "" {
			return sdk.ErrorResult("Failed to fill selector " + a.Selector + ": " + err.Error()), nil
		}
		return sdk.ErrorResult("Failed to fill index " + num(a.Index) + ": " + err.Error()), nil
	}
	s, err := current()
	if err != nil {
		return fail(err)
	}
	var ident string
	switch {
	case a.Index != nil:
		ident = "index " + num(a.Index)
	case a.Selector != "":
		if err := waitSelector(s, a.Selector); err != nil {
			return fail(err)
		}
		ident = "selector " + a.Selector
	default:
		return sdk.ErrorResult("Either selector or index must be provided"), nil
	}
	// focus it, and either the caret at the end or (clear) everything
	// selected for typing, or (a field typing cannot fill) its value set
	// (page.js fill)
	var f struct {
		Found bool `json:"found"`
		Typed bool `json:"typed"`
	}
	value, _ := json.Marshal(a.Value)
	if _, err := eval(s, withLib("window.__aiod.fill("+elemExpr(a.Index, a.Selector)+", "+string(value)+", "+strconv.FormatBool(a.Clear)+")"), &f); err != nil {
		return fail(err)
	}
	if !f.Found {
		return sdk.ErrorResult("No form input found for " + ident), nil
	}
	if f.Typed {
		if a.Clear {
			if err := press(s, keys["Backspace"]); err != nil {
				return fail(err)
			}
		}
		if err := typeText(s, a.Value); err != nil {
			return fail(err)
		}
	}
	var got string
	if _, err := eval(s, `(() => { const el = `+elemExpr(a.Index, a.Selector)+`; return (el && (el.value || el.textContent)) || ''; })()`, &got); err != nil {
		return fail(err)
	}
	valid := strings.Contains(got, a.Value)
	if a.Value == "" {
		valid = got == ""
	}
	verb := "Maybe failed"
	if valid {
		verb = "Successfully"
	}
	text := verb + " filled " + ident + ` with: "` + a.Value + `"`
	if a.Clear {
		text += " (cleared existing text)"
	}
	return sdk.TextResult(text), nil
}

func getMarkdown(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	s, err := current()
	if err != nil {
		return errText("Failed to get markdown: ", err), nil
	}
	var c cutText
	if _, err := eval(s, withLib(fmt.Sprintf("window.__aiod.markdown(%d)", MaxText)), &c); err != nil {
		return errText("Failed to get markdown: ", err), nil
	}
	return sdk.TextResult(c.String()), nil
}

// getTextExpr is the page's text, cut in the page (so a huge page costs
// no huge CDP answer).
var getTextExpr = fmt.Sprintf(`(() => { const t = document.body.innerText; return t.length > %d ? { text: t.slice(0, %d), total: t.length } : { text: t, total: t.length }; })()`, MaxText, MaxText)

func getText(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	s, err := current()
	if err != nil {
		return errText("Failed to get text: ", err), nil
	}
	var c cutText
	if _, err := eval(s, getTextExpr, &c); err != nil {
		return errText("Failed to get text: ", err), nil
	}
	return sdk.TextResult(c.String()), nil
}

type link struct {
	Text string `json:"text"`
	Href string `json:"href"`
}

// maxLinks bounds browser_read_links' answer.
const maxLinks = 2000

func readLinks(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	failed := func(err error) (*sdk.Result, error) {
		r := sdk.ErrorResult("Failed to read links: " + err.Error())
		r.Structured = map[string]any{"links": []link{}}
		return r, nil
	}
	s, err := current()
	if err != nil {
		return failed(err)
	}
	links := []link{}
	if _, err := eval(s, fmt.Sprintf(`Array.from(document.querySelectorAll('a[href]')).map((el) => ({ text: el.innerText.slice(0, 1000), href: (el.getAttribute('href') || '').slice(0, 4000) })).filter((l) => l.href).slice(0, %d)`, maxLinks), &links); err != nil {
		return failed(err)
	}
	b, _ := json.MarshalIndent(links, "", "  ")
	return &sdk.Result{Content: []sdk.Content{sdk.Text(unescapeHTML(b))}, Structured: map[string]any{"links": links}}, nil
}

// unescapeHTML undoes encoding/json's \u003c, \u003e and \u0026, which
// JSON.stringify does not write.
func unescapeHTML(b []byte) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
}

func newTab(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		URL string `json:"url"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to open new tab: ", err), nil
	}
	id, err := createTab(a.URL)
	if err != nil {
		return errText("Failed to open new tab: ", err), nil
	}
	if s, err := cdp.Attach(id); err == nil {
		prepare(s)
		_ = s.Call("Page.bringToFront", nil, nil)
		_ = waitLoad(s, 5000)
	}
	return sdk.TextResult("Opened new tab with URL: " + a.URL), nil
}

type tabInfo struct {
	Index  int    `json:"index"`
	Active bool   `json:"active"`
	Title  string `json:"title"`
	URL    string `json:"url"`
}

func tabInfos() ([]cdp.Target, []tabInfo, int, error) {
	tabs, active, err := tabList0()
	if err != nil {
		return nil, nil, 0, err
	}
	out := make([]tabInfo, len(tabs))
	for i, t := range tabs {
		title := t.Title
		// the browser titles an untitled page with its URL; the page's own title is ""
		if _, rest, _ := strings.Cut(t.URL, "://"); title == t.URL || title == rest {
			title = ""
		}
		out[i] = tabInfo{Index: i, Active: i == active, Title: title, URL: t.URL}
	}
	return tabs, out, active, nil
}

func tabList(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	_, tabs, active, err := tabInfos()
	if err != nil {
		r := sdk.ErrorResult("Failed to get tab list: " + err.Error())
		r.Structured = map[string]any{"tabList": []tabInfo{}}
		return r, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Current Tab: [%d] %s\nAll Tabs: \n", active, tabs[active].Title)
	for i, t := range tabs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%d] Title: %s (URL: %s)", t.Index, t.Title, t.URL)
	}
	return &sdk.Result{Content: []sdk.Content{sdk.Text(bound(b.String()))}, Structured: map[string]any{"tabList": tabs}}, nil
}

func switchTab(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Index float64 `json:"index"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to switch tab: ", err), nil
	}
	tabs, infos, _, err := tabInfos()
	if err != nil {
		return errText("Failed to switch tab: ", err), nil
	}
	i := int(a.Index)
	if a.Index != math.Trunc(a.Index) || i < 0 || i >= len(tabs) {
		return sdk.ErrorResult("Invalid tab index: " + num(&a.Index)), nil
	}
	if err := setActive(tabs[i].TargetID); err != nil {
		return errText("Failed to switch tab: ", err), nil
	}
	if s, err := cdp.Attach(tabs[i].TargetID); err == nil {
		_ = s.Call("Page.bringToFront", nil, nil)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Switched to tab %d, All Tabs: \n", i)
	for j, t := range infos {
		if j > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%d] %s (%s)", j, t.Title, t.URL)
	}
	return sdk.TextResult(bound(b.String())), nil
}

func closeTab(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	tabs, active, err := tabList0()
	if err != nil {
		return errText("Failed to close tab [0]: ", err), nil
	}
	if err := closeTarget(tabs[active].TargetID); err != nil {
		return sdk.ErrorResult(fmt.Sprintf("Failed to close tab [%d]: %v", active, err)), nil
	}
	_, _ = state.Delete(keyActive)
	_, _ = state.Delete(keyCurrent)
	return sdk.TextResult(fmt.Sprintf("Closed current tab [%d]", active)), nil
}

func evaluate(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Script string `json:"script"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Script execution failed: ", err), nil
	}
	s, err := current()
	if err != nil {
		return errText("Script execution failed: ", err), nil
	}
	res, err := eval(s, "("+a.Script+")()", nil)
	if err != nil {
		return errText("Script execution failed: ", err), nil
	}
	out := "undefined"
	if len(res.Result.Value) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, res.Result.Value, "", "  ") == nil {
			out = unescapeUnicode(b.String())
		}
	}
	return sdk.TextResult(bound("Execution result:\n" + out + "\n")), nil
}

func screenshot(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Name      *string  `json:"name"`
		Selector  string   `json:"selector"`
		Index     *float64 `json:"index"`
		Width     *float64 `json:"width"`
		Height    *float64 `json:"height"`
		FullPage  bool     `json:"fullPage"`
		Highlight bool     `json:"highlight"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to take screenshot: ", err), nil
	}
	s, err := current()
	if err != nil {
		return errText("Failed to take screenshot: ", err), nil
	}
	var m struct{ W, H, SX, SY, PW, PH float64 }
	if _, err := eval(s, `({ W: innerWidth, H: innerHeight, SX: scrollX, SY: scrollY, PW: Math.max(document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body ? document.body.scrollWidth : 0), PH: Math.max(document.documentElement.scrollHeight, document.documentElement.clientHeight, document.body ? document.body.scrollHeight : 0) })`, &m); err != nil {
		return errText("Failed to take screenshot: ", err), nil
	}
	w, h := m.W, m.H
	if a.Width != nil {
		w = *a.Width
	}
	if a.Height != nil {
		h = *a.Height
	}
	params := map[string]any{"format": "png"}
	clipped := false
	if a.Selector != "" || a.Index != nil {
		var r struct {
			Found      bool
			X, Y, W, H float64
		}
		if _, err := eval(s, `(() => { const el = `+elemExpr(a.Index, a.Selector)+`; if (!el) return { Found: false };
  el.scrollIntoView({ block: 'center', inline: 'center' }); const r = el.getBoundingClientRect();
  return { Found: r.width > 0 && r.height > 0, X: r.left + scrollX, Y: r.top + scrollY, W: r.width, H: r.height }; })()`, &r); err == nil && r.Found {
			params["clip"] = map[string]any{"x": r.X, "y": r.Y, "width": r.W, "height": r.H, "scale": 1}
			params["captureBeyondViewport"] = true
			clipped = true
		}
		// no such element: the viewport, as the upstream tool falls back
	}
	switch {
	case clipped:
	case a.FullPage:
		params["clip"] = map[string]any{"x": 0, "y": 0, "width": m.PW, "height": m.PH, "scale": 1}
		params["captureBeyondViewport"] = true
	case a.Width != nil || a.Height != nil:
		params["clip"] = map[string]any{"x": m.SX, "y": m.SY, "width": w, "height": h, "scale": 1}
		params["captureBeyondViewport"] = true
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := s.CallTimeout("Page.captureScreenshot", params, &shot, navTimeoutMs); err != nil {
		return errText("Failed to take screenshot: ", err), nil
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) == 0 {
		return sdk.ErrorResult("Element not found: " + a.Selector + num(a.Index)), nil
	}
	name := "undefined"
	if a.Name != nil {
		name = *a.Name
	}
	text := fmt.Sprintf("Screenshot '%s' taken at %sx%s", name, num(&w), num(&h))
	if a.FullPage {
		text = fmt.Sprintf("Screenshot of the whole page taken at %sx%s", num(&m.PW), num(&m.PH))
	}
	return &sdk.Result{Content: []sdk.Content{sdk.Text(text), sdk.Image(png, "image/png")}}, nil
}

func click(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Index *float64 `json:"index"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to click element: ", err), nil
	}
	if a.Index == nil {
		return sdk.ErrorResult("Element index undefined not found"), nil
	}
	fail := func(err error) (*sdk.Result, error) {
		return sdk.ErrorResult(fmt.Sprintf("Failed to click element: %s. Error: %v", num(a.Index), err)), nil
	}
	s, err := current()
	if err != nil {
		return fail(err)
	}
	prepare(s)
	before := len(loadDownloads())
	p, err := locate(s, elemExpr(a.Index, ""))
	if err != nil {
		return fail(err)
	}
	if !p.Found {
		return fail(fmt.Errorf("no element has index %s on this page (list them with browser_get_clickable_elements)", num(a.Index)))
	}
	if p.Hit {
		err = mouse(s, "mouseMoved", p.X, p.Y, 0)
		if err == nil {
			err = mouse(s, "mousePressed", p.X, p.Y, 1)
		}
		if err == nil {
			err = mouse(s, "mouseReleased", p.X, p.Y, 1)
		}
	}
	if !p.Hit || err != nil {
		// covered by another element or out of reach: the element's own click()
		if _, err := eval(s, "(() => { const el = "+elemExpr(a.Index, "")+"; if (el) el.click(); })()", nil); err != nil {
			return fail(err)
		}
	}
	dl := syncDownloads(s, 200)
	suggestion := ""
	if len(dl) > before {
		if f := dl[len(dl)-1].SuggestedFilename; f != "" {
			suggestion = ", Downloading file " + f
		}
	}
	return sdk.TextResult("Clicked element: " + num(a.Index) + suggestion), nil
}

// target is what select and hover do first, as mcp-server-browser does:
// the current tab, the element's name in answers (its selector, else its
// index), the selector waited for, and the error answer for verb; res is
// the answer to return at once when it is not nil.
func target(verb string, index *float64, selector string) (s *cdp.Session, what string, fail func(error) (*sdk.Result, error), res *sdk.Result) {
	what = selector
	if what == "" {
		what = num(index)
	}
	fail = func(err error) (*sdk.Result, error) {
		return sdk.ErrorResult("Failed to " + verb + " " + what + ": " + err.Error()), nil
	}
	s, err := current()
	if err == nil && index == nil {
		if selector == "" {
			return nil, what, fail, sdk.ErrorResult("No selector undefined or index undefined provided")
		}
		err = waitSelector(s, selector)
	}
	if err != nil {
		res, _ = fail(err)
	}
	return s, what, fail, res
}

func selectOption(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Index    *float64 `json:"index"`
		Selector string   `json:"selector"`
		Value    string   `json:"value"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to select: ", err), nil
	}
	s, what, fail, res := target("select", a.Index, a.Selector)
	if res != nil {
		return res, nil
	}
	val, _ := json.Marshal(a.Value)
	var found bool
	if _, err := eval(s, `(() => { const el = `+elemExpr(a.Index, a.Selector)+`; if (!el) return false;
  if (el.nodeName.toLowerCase() !== 'select') throw new Error('Element is not a <select> element.');
  const v = `+string(val)+`;
  for (const o of el.options) { o.selected = false; }
  for (const o of el.options) { if (o.value === v) { o.selected = true; if (!el.multiple) break; } }
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return true; })()`, &found); err != nil {
		return fail(err)
	}
	if !found {
		return sdk.ErrorResult("No form input found"), nil
	}
	return sdk.TextResult("Selected " + what + " with: " + a.Value), nil
}

func hover(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Index    *float64 `json:"index"`
		Selector string   `json:"selector"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to hover: ", err), nil
	}
	s, what, fail, res := target("hover", a.Index, a.Selector)
	if res != nil {
		return res, nil
	}
	p, err := locate(s, elemExpr(a.Index, a.Selector))
	if err != nil {
		return fail(err)
	}
	if !p.Found {
		return sdk.ErrorResult("No element found"), nil
	}
	if err := mouse(s, "mouseMoved", p.X, p.Y, 0); err != nil {
		return fail(err)
	}
	return sdk.TextResult("Hovered " + what), nil
}

func clickables(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	s, err := current()
	if err != nil {
		return sdk.ErrorResult("Page not found: " + err.Error()), nil
	}
	list, err := listClickables(s)
	if err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	if list == "" {
		return sdk.TextResult("Failed to parse DOM tree"), nil
	}
	return sdk.TextResult(list), nil
}

func scroll(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Amount *float64 `json:"amount"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to scroll: ", err), nil
	}
	fail := sdk.ErrorResult("Failed to scroll: " + num(a.Amount))
	s, err := current()
	if err != nil {
		return sdk.ErrorResult("Failed to scroll: " + num(a.Amount) + ": " + err.Error()), nil
	}
	var r struct {
		ActualScroll float64 `json:"actualScroll"`
		IsAtBottom   bool    `json:"isAtBottom"`
	}
	if _, err := eval(s, `((amount) => {
  const before = window.scrollY;
  if (amount) window.scrollBy(0, amount); else window.scrollBy(0, window.innerHeight);
  const actualScroll = window.scrollY - before;
  const scrollHeight = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);
  const clientHeight = window.innerHeight || document.documentElement.clientHeight;
  return { actualScroll, isAtBottom: Math.abs(scrollHeight - window.scrollY - clientHeight) <= 1 };
})(`+num(a.Amount)+`)`, &r); err != nil {
		return fail, nil
	}
	bottom := "Did not reach the bottom of the page."
	if r.IsAtBottom {
		bottom = "Reached the bottom of the page."
	}
	return sdk.TextResult("Scrolled " + num(&r.ActualScroll) + " pixels. " + bottom), nil
}

// closeBrowser ends the session's browsing: the browser is shared (aiod's
// own, or one aiod attached to), so rather than closing it, every tab is
// closed but a fresh about:blank, and the downloads list and tab state
// are forgotten, which is what the next call of the upstream tool sees
// after it relaunched its browser.
func closeBrowser(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	tabs, _, err := tabList0()
	if err != nil {
		return errText("Failed to close browser: ", err), nil
	}
	if _, err := createTab("about:blank"); err != nil {
		return errText("Failed to close browser: ", err), nil
	}
	for _, t := range tabs {
		if err := closeTarget(t.TargetID); err != nil && !errors.Is(err, cdp.ErrNotFound) {
			return errText("Failed to close browser: ", err), nil
		}
	}
	clearDownloads()
	return sdk.TextResult("Closed browser"), nil
}

func pressKey(_ *sdk.Ctx, raw json.RawMessage) (*sdk.Result, error) {
	var a struct {
		Key string `json:"key"`
	}
	if err := decode(raw, &a); err != nil {
		return errText("Failed to press key: ", err), nil
	}
	k, ok := keys[a.Key]
	if !ok {
		return sdk.ErrorResult("Failed to press key: " + a.Key), nil
	}
	s, err := current()
	if err != nil {
		return sdk.ErrorResult("Failed to press key: " + a.Key + ": " + err.Error()), nil
	}
	if err := press(s, k); err != nil {
		return sdk.ErrorResult("Failed to press key: " + a.Key + ": " + err.Error()), nil
	}
	return sdk.TextResult("Pressed key: " + a.Key), nil
}

// unescapeUnicode writes the \uXXXX escapes of a JSON text's strings as
// the characters (the browser escapes every non-ASCII character;
// JSON.stringify, whose layout the upstream tool answers, does not),
// except control characters and lone surrogates.
func unescapeUnicode(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
		return rune(v), err == nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] != 'u' {
			b.WriteString(s[i : i+2])
			i++
			continue
		}
		r, ok := hex4(i)
		switch {
		case !ok || r < 0x20:
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
				b.WriteRune(utf16.DecodeRune(r, lo))
				i += 11
				continue
			}
		case r >= 0xDC00 && r < 0xE000:
		default:
			b.WriteRune(r)
			i += 5
			continue
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}
