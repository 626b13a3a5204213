package sandboxtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// pageForm has one field of every kind that takes text, each with a value
// already, and some that take none; every input and change event is
// counted by its target's id.
const pageForm = `<!doctype html><html><head><title>Form</title></head><body>
<input id=text type=text value="old">
<input id=plain value="old">
<input id=email type=email value="ann">
<input id=password type=password value="old">
<input id=search type=search value="old">
<input id=tel type=tel value="+1">
<input id=url type=url value="https://old.example">
<input id=number type=number value="7">
<input id=date type=date value="2020-01-01">
<input id=time type=time value="01:02">
<input id=datetime-local type=datetime-local value="2020-01-01T01:02">
<input id=month type=month value="2020-01">
<input id=week type=week value="2020-W01">
<textarea id=textarea>old</textarea>
<div id=editable contenteditable="true">old</div>
<input id=checkbox type=checkbox>
<input id=radio type=radio name=r>
<input id=range type=range>
<input id=color type=color>
<input id=file type=file>
<input id=submit type=submit value=Go>
<select id=select><option>a</option></select>
<button id=button>Press</button>
<p id=para>text</p>
<input id=disabled type=email disabled>
<input id=readonly type=text readonly value="fixed">
<input id=tracked type=email>
<script>
// as React's value tracker: a value property of the element's own, which
// a framework compares with the real value on an input event
const real = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
window.trackedSets = [];
Object.defineProperty(document.getElementById('tracked'), 'value', { configurable: true,
  get() { return real.get.call(this); }, set(v) { trackedSets.push(v); real.set.call(this, v); } });
window.events = {};
for (const type of ['input', 'change']) document.addEventListener(type, (e) => { const k = e.target.id + ':' + type; events[k] = (events[k] || 0) + 1; }, true);
</script>
</body></html>`

// TestPageToolsFill: browser_form_input_fill fills every field that takes
// text, as @agent-infra/mcp-server-browser's fill does (by type, its
// selection placed only where the element has one; by the value's setter
// and input and change events where typing cannot make the value), and
// the value read back through the page is the one given; a field that
// takes no text is refused, saying what it is.
func TestPageToolsFill(t *testing.T) {
	s := pageHost(t, pageToolsPackage(t, nil), true)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, pageForm)
	}))
	t.Cleanup(web.Close)
	read := func(t *testing.T, id string) (value string, events map[string]int) {
		t.Helper()
		var v struct {
			Value  string         `json:"value"`
			Events map[string]int `json:"events"`
		}
		got := evalJS(t, s, `() => { const el = document.getElementById(`+jsString(id)+`);
  const r = { value: el.isContentEditable ? el.innerText : el.value, events: {} };
  for (const k in events) if (k.startsWith(el.id + ':')) r.events[k.slice(el.id.length + 1)] = events[k];
  return r; }`)
		must(t, json.Unmarshal([]byte(got), &v))
		return v.Value, v.Events
	}
	setFields := map[string]bool{"email": true, "number": true, "date": true, "time": true, "datetime-local": true, "month": true, "week": true}
	for _, clear := range []bool{true, false} {
		ok(t, s, "browser_navigate", map[string]any{"url": web.URL + "/"})
		for _, tc := range []struct {
			id, value string
			appended  string // the value after a fill without clear ("": the value)
		}{
			{"text", "Zoë ✓ 中文", "oldZoë ✓ 中文"},
			{"plain", "no type", "oldno type"},
			{"email", "ann@example.com", "annann@example.com"},
			{"password", "s3cret!", "olds3cret!"},
			{"search", "wasm plugins", "oldwasm plugins"},
			{"tel", "+44 20 7946 0000", "+1+44 20 7946 0000"},
			{"url", "https://example.com/a?b=c", "https://old.examplehttps://example.com/a?b=c"},
			{"number", "42.5", "742.5"},
			{"date", "2026-12-04", ""},
			{"time", "13:45", ""},
			{"datetime-local", "2026-12-04T13:45", ""},
			{"month", "2026-12", ""},
			{"week", "2026-W49", ""},
			{"textarea", "line one\nline two", "oldline one\nline two"},
			{"editable", "edited ✓", "oldedited ✓"},
		} {
			t.Run(fmt.Sprintf("%s/clear=%v", tc.id, clear), func(t *testing.T) {
				want := tc.value
				if !clear && tc.appended != "" {
					want = tc.appended
				}
				args := map[string]any{"selector": "#" + tc.id, "value": tc.value}
				answer := `Successfully filled selector #` + tc.id + ` with: "` + tc.value + `"`
				if clear {
					args["clear"] = true
					answer += " (cleared existing text)"
				}
				r := pcall(t, s, "browser_form_input_fill", args)
				if r.IsError || r.Text() != answer {
					t.Errorf("fill: isError %v %q, want %q", r.IsError, r.Text(), answer)
				}
				value, events := read(t, tc.id)
				if value != want {
					t.Errorf("value read back %q, want %q", value, want)
				}
				if events["input"] == 0 {
					t.Errorf("no input event (events %v)", events)
				}
				// a field whose value is set gets a change event too, as
				// after a user's edit; a typed one gets it on blur
				if _, set := setFields[tc.id]; set && events["change"] == 0 {
					t.Errorf("no change event (events %v)", events)
				}
			})
		}
	}

	// by index, as the listing numbers it
	ok(t, s, "browser_navigate", map[string]any{"url": web.URL + "/"})
	if text := ok(t, s, "browser_form_input_fill", map[string]any{"index": 2, "value": "bob@example.com", "clear": true}); text != `Successfully filled index 2 with: "bob@example.com" (cleared existing text)` {
		t.Errorf("fill an email by index: %q", text)
	}
	if v, _ := read(t, "email"); v != "bob@example.com" {
		t.Errorf("email by index: %q", v)
	}

	// the element class's setter, not the page's own: a framework's tracker
	// sees the input event with a value it did not set
	if text := ok(t, s, "browser_form_input_fill", map[string]any{"selector": "#tracked", "value": "zoe@example.com"}); !strings.HasPrefix(text, "Successfully") {
		t.Errorf("fill #tracked: %q", text)
	}
	if v, events := read(t, "tracked"); v != "zoe@example.com" || events["input"] != 1 || events["change"] != 1 {
		t.Errorf("#tracked: %q, events %v", v, events)
	}
	if got := evalJS(t, s, "() => trackedSets"); got != "[]" {
		t.Errorf("the page's own value setter was called with %s", got)
	}

	for _, tc := range []struct{ selector, value, want string }{
		{"#checkbox", "on", `Failed to fill selector #checkbox: <input type="checkbox"> takes no text: use browser_click to check it`},
		{"#radio", "on", `Failed to fill selector #radio: <input type="radio"> takes no text: use browser_click to check it`},
		{"#range", "5", `Failed to fill selector #range: <input type="range"> takes no text`},
		{"#color", "#ff0000", `Failed to fill selector #color: <input type="color"> takes no text`},
		{"#file", "/etc/passwd", `Failed to fill selector #file: <input type="file"> takes no text`},
		{"#submit", "x", `Failed to fill selector #submit: <input type="submit"> takes no text: use browser_click to press it`},
		{"#select", "a", `Failed to fill selector #select: <select> takes no text: use browser_select to choose an option`},
		{"#button", "x", `Failed to fill selector #button: <button> takes no text: fill an input, a textarea or a contenteditable element`},
		{"#para", "x", `Failed to fill selector #para: <p> takes no text: fill an input, a textarea or a contenteditable element`},
		{"#disabled", "x@example.com", `Failed to fill selector #disabled: <input type="email"> is disabled`},
		{"#readonly", "x", `Failed to fill selector #readonly: <input type="text"> is read-only`},
		{"#date", "12/04/2026", `Failed to fill selector #date: "12/04/2026" is not a value of <input type="date"> (YYYY-MM-DD)`},
		{"#time", "1:45 pm", `Failed to fill selector #time: "1:45 pm" is not a value of <input type="time"> (HH:MM or HH:MM:SS)`},
		{"#number", "forty", `Failed to fill selector #number: "forty" is not a value of <input type="number"> (a number)`},
	} {
		r := pcall(t, s, "browser_form_input_fill", map[string]any{"selector": tc.selector, "value": tc.value, "clear": true})
		if !r.IsError || r.Text() != tc.want {
			t.Errorf("fill %s with %q: isError %v %q\nwant %q", tc.selector, tc.value, r.IsError, r.Text(), tc.want)
		}
	}
	if v, _ := read(t, "checkbox"); v != "on" {
		t.Errorf("the checkbox's value changed to %q", v)
	}
	if v, _ := read(t, "date"); v != "2026-12-04" && v != "2020-01-01" {
		t.Errorf("a refused date left %q", v)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "<", `\u003c`)
}
