// Command browseraction is the built-in plugin browser_gui_execute_action:
// one GUI action (aiod's vocabulary: mouse, keyboard, scroll, wait,
// clipboard) on the browser's viewport, which is this display, sent as CDP
// Input events over aiod:cdp. Keys are pyautogui's names and aiod's
// aliases (keys.go). The pointer's position, its pressed buttons and the
// held modifiers live in aiod:state between calls. Window and
// accessibility-node actions need a desktop and answer isError.
// spec/sandbox-tools.md describes the tool.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/cdp"
	"github.com/aiodhq/aiod/sdk/state"
)

// Name is the tool's (and the plugin's) name.
const Name = "browser_gui_execute_action"

// Types are the action types this display performs, in aiod's order.
var Types = []string{"MOVE_TO", "MOVE_REL", "CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "MOUSE_DOWN", "MOUSE_UP",
	"DRAG_TO", "DRAG_REL", "SCROLL", "TYPING", "PRESS", "KEY_DOWN", "KEY_UP", "HOTKEY", "WAIT", "SET_CLIPBOARD"}

// desktopTypes are aiod's actions on windows and accessibility nodes,
// which a browser viewport does not have.
var desktopTypes = map[string]bool{"WINDOW_ACTIVATE": true, "WINDOW_MINIMIZE": true, "NODE_FOCUS": true, "NODE_INVOKE": true, "NODE_SET_VALUE": true}

// Limits of the vocabulary.
const (
	MaxWait       = 10 * time.Second // WAIT
	MaxNotches    = 100              // SCROLL, per axis
	NotchPixels   = 100              // CSS px one scroll notch moves
	dragSteps     = 10               // mouseMoved events of a drag
	maxTypingRune = 100_000          // TYPING text
)

// InputSchema is the tool's input schema.
const InputSchema = `{"properties":{"action":{"description":"The action: {\"action_type\": one of MOVE_TO, MOVE_REL, CLICK, RIGHT_CLICK, DOUBLE_CLICK, MOUSE_DOWN, MOUSE_UP, DRAG_TO, DRAG_REL, SCROLL, TYPING, PRESS, KEY_DOWN, KEY_UP, HOTKEY, WAIT, SET_CLIPBOARD, and its parameters: x, y, x_offset, y_offset, button, num_clicks, dx, dy, text, use_clipboard, key, keys, duration}","properties":{"action_type":{"type":"string"}},"required":["action_type"],"type":"object"}},"required":["action"],"type":"object"}`

// OutputSchema is the schema of the answer, {status, action_performed}.
const OutputSchema = `{"additionalProperties":false,"properties":{"action_performed":{"type":"string"},"status":{"const":"success"}},"required":["action_performed","status"],"type":"object"}`

func init() {
	sdk.Plugin(sdk.Info{
		Name:        Name,
		Version:     "1.0.0",
		Description: "aiod built-in: GUI actions on the browser's display.",
		Capabilities: abi.Capabilities{
			CDP:   &abi.CDPScope{Methods: []string{"Runtime.evaluate", "Input.dispatchMouseEvent", "Input.dispatchKeyEvent", "Input.insertText", "Browser.setPermission"}},
			State: &abi.StateScope{MaxBytes: 4096},
		},
	})
	sdk.AddRawTool(sdk.Tool{
		Name:  Name,
		Title: "Browser action",
		Description: "Execute a browser action on the current display (the browser's viewport): move, click, drag, scroll, type, press keys, wait or set the clipboard. " +
			"Coordinates are CSS pixels from the viewport's top left. Returns: Dict containing `status` and `action_performed`.",
		InputSchema:  InputSchema,
		OutputSchema: OutputSchema,
		// A click can submit a form or delete what a page shows.
		Annotations: sdk.Behavior{Destructive: true, OpenWorld: true}.Annotations(),
	}, Run)
}

func main() {}

// params are every action's parameters (pointers: nil when absent).
type params struct {
	ActionType   string   `json:"action_type"`
	X            *float64 `json:"x"`
	Y            *float64 `json:"y"`
	XOffset      *float64 `json:"x_offset"`
	YOffset      *float64 `json:"y_offset"`
	Button       *string  `json:"button"`
	NumClicks    *int     `json:"num_clicks"`
	DX           *int     `json:"dx"`
	DY           *int     `json:"dy"`
	Text         *string  `json:"text"`
	UseClipboard *bool    `json:"use_clipboard"`
	Key          *string  `json:"key"`
	Keys         []string `json:"keys"`
	Duration     *float64 `json:"duration"`
}

// actionError is "Failed to create X action: ..." (aiod's text for bad
// parameters).
type actionError struct{ typ, msg string }

func (e *actionError) Error() string { return "Failed to create " + e.typ + " action: " + e.msg }

// Run performs the action.
func Run(_ *sdk.Ctx, args json.RawMessage) (*sdk.Result, error) {
	var in struct {
		Action json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(args, &in); err != nil || len(in.Action) == 0 || string(in.Action) == "null" {
		return sdk.ErrorResult("action is required"), nil
	}
	var p params
	if err := json.Unmarshal(in.Action, &p); err != nil {
		typ := "the"
		var t struct {
			T string `json:"action_type"`
		}
		if json.Unmarshal(in.Action, &t) == nil && t.T != "" {
			typ = t.T
		}
		return sdk.ErrorResult((&actionError{typ, err.Error()}).Error()), nil
	}
	switch {
	case p.ActionType == "":
		return sdk.ErrorResult("action_type is required. Available types: " + strings.Join(Types, ", ")), nil
	case desktopTypes[p.ActionType]:
		return sdk.ErrorResult(p.ActionType + " needs a desktop with windows and an accessibility tree; this display is the browser's viewport, driven over CDP. Available types: " + strings.Join(Types, ", ")), nil
	case !known(p.ActionType):
		return sdk.ErrorResult("Invalid action_type: " + p.ActionType + ". Available types: " + strings.Join(Types, ", ")), nil
	}
	if err := validate(&p); err != nil {
		return sdk.ErrorResult(err.Error()), nil
	}
	done, err := perform(&p)
	var ae *actionError
	if errors.As(err, &ae) {
		return sdk.ErrorResult(ae.Error()), nil
	}
	if err != nil {
		return sdk.ErrorResult("Failed to execute " + p.ActionType + " action: " + err.Error()), nil
	}
	return sdk.JSONResult(map[string]any{"status": "success", "action_performed": done}, false), nil
}

func known(t string) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// validate checks the parameters each type needs, without the browser.
func validate(p *params) error {
	bad := func(format string, a ...any) error { return &actionError{p.ActionType, fmt.Sprintf(format, a...)} }
	need := func(names ...string) error {
		for _, n := range names {
			missing := false
			switch n {
			case "x":
				missing = p.X == nil
			case "y":
				missing = p.Y == nil
			case "x_offset":
				missing = p.XOffset == nil
			case "y_offset":
				missing = p.YOffset == nil
			case "text":
				missing = p.Text == nil
			case "key":
				missing = p.Key == nil
			case "duration":
				missing = p.Duration == nil
			}
			if missing {
				return bad("%s is required", n)
			}
		}
		return nil
	}
	if (p.X == nil) != (p.Y == nil) {
		return bad("x and y must be given together")
	}
	if p.Button != nil && *p.Button != "left" && *p.Button != "right" && *p.Button != "middle" {
		return bad("button must be left, right or middle, not %q", *p.Button)
	}
	switch p.ActionType {
	case "MOVE_TO", "DRAG_TO":
		return need("x", "y")
	case "MOVE_REL", "DRAG_REL":
		return need("x_offset", "y_offset")
	case "CLICK":
		if p.NumClicks != nil && (*p.NumClicks < 1 || *p.NumClicks > 3) {
			return bad("num_clicks must be 1, 2 or 3")
		}
	case "SCROLL":
		if (p.DX == nil || *p.DX == 0) && (p.DY == nil || *p.DY == 0) {
			return bad("dx or dy must be non-zero")
		}
	case "TYPING":
		if err := need("text"); err != nil {
			return err
		}
		if *p.Text == "" {
			return bad("text must not be empty")
		}
		if utf8.RuneCountInString(*p.Text) > maxTypingRune {
			return bad("text is over %d characters", maxTypingRune)
		}
	case "SET_CLIPBOARD":
		return need("text")
	case "PRESS", "KEY_DOWN", "KEY_UP":
		if err := need("key"); err != nil {
			return err
		}
		if _, ok := lookupKey(*p.Key); !ok {
			return bad("unknown key %q", *p.Key)
		}
	case "HOTKEY":
		if len(p.Keys) == 0 {
			return bad("keys must name at least one key")
		}
		for _, k := range p.Keys {
			if _, ok := lookupKey(k); !ok && strings.ToLower(k) != "hyper" {
				return bad("unknown key %q", k)
			}
		}
	case "WAIT":
		if err := need("duration"); err != nil {
			return err
		}
		if !(*p.Duration > 0) || math.IsInf(*p.Duration, 0) {
			return bad("duration must be a positive number of seconds")
		}
	}
	return nil
}

// pointer is what the display remembers between calls.
type pointer struct {
	X       float64 `json:"x"`
	Y       float64 `json:"y"`
	Buttons int     `json:"buttons"` // left 1, right 2, middle 4
	Mods    int     `json:"mods"`    // held modifiers (KEY_DOWN)
}

const pointerKey = "pointer"

func loadPointer() pointer {
	var pt pointer
	if v, ok, err := state.Get(pointerKey); err == nil && ok {
		json.Unmarshal([]byte(v), &pt)
	}
	return pt
}

func savePointer(pt pointer) {
	b, _ := json.Marshal(pt)
	state.Set(pointerKey, string(b))
}

// display is the page being driven.
type display struct {
	s  *cdp.Session
	w  float64
	h  float64
	pt pointer
}

func open() (*display, error) {
	s, err := cdp.Page()
	if err != nil {
		return nil, err
	}
	var res struct {
		Result struct {
			Value struct{ W, H float64 } `json:"value"`
		} `json:"result"`
	}
	if err := s.Call("Runtime.evaluate", map[string]any{"expression": "({W: innerWidth, H: innerHeight})", "returnByValue": true}, &res); err != nil {
		return nil, err
	}
	return &display{s: s, w: res.Result.Value.W, h: res.Result.Value.H, pt: loadPointer()}, nil
}

// inside checks a point against the viewport.
func (d *display) inside(typ string, x, y float64) error {
	if x < 0 || y < 0 || x >= d.w || y >= d.h || math.IsNaN(x) || math.IsNaN(y) {
		return &actionError{typ, fmt.Sprintf("coordinates (%s, %s) are outside the screen (%sx%s)", num(x), num(y), num(d.w), num(d.h))}
	}
	return nil
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

var buttonBits = map[string]int{"left": 1, "right": 2, "middle": 4}

// editCommands are the editing commands of Ctrl+key shortcuts.
var editCommands = map[string]string{"a": "selectAll", "c": "copy", "x": "cut", "v": "paste", "z": "undo", "y": "redo"}

func (d *display) mouse(typ string, x, y float64, button string, clicks int, extra map[string]any) error {
	ev := map[string]any{"type": typ, "x": x, "y": y, "modifiers": d.pt.Mods, "buttons": d.pt.Buttons}
	if button != "" {
		ev["button"] = button
		ev["clickCount"] = clicks
	}
	for k, v := range extra {
		ev[k] = v
	}
	return d.s.Call("Input.dispatchMouseEvent", ev, nil)
}

func (d *display) moveTo(x, y float64) error {
	if err := d.mouse("mouseMoved", x, y, "", 0, nil); err != nil {
		return err
	}
	d.pt.X, d.pt.Y = x, y
	return nil
}

func (d *display) press(button string, clicks int) error {
	d.pt.Buttons |= buttonBits[button]
	return d.mouse("mousePressed", d.pt.X, d.pt.Y, button, clicks, nil)
}

func (d *display) release(button string, clicks int) error {
	d.pt.Buttons &^= buttonBits[button]
	return d.mouse("mouseReleased", d.pt.X, d.pt.Y, button, clicks, nil)
}

func (d *display) click(button string, n int) error {
	for i := 1; i <= n; i++ {
		if err := d.press(button, i); err != nil {
			return err
		}
		if err := d.release(button, i); err != nil {
			return err
		}
	}
	return nil
}

func (d *display) drag(x, y float64) error {
	x0, y0 := d.pt.X, d.pt.Y
	if err := d.press("left", 1); err != nil {
		return err
	}
	for i := 1; i <= dragSteps; i++ {
		f := float64(i) / dragSteps
		if err := d.moveTo(x0+(x-x0)*f, y0+(y-y0)*f); err != nil {
			return err
		}
	}
	return d.release("left", 1)
}

// keyEvent sends one key down or up with the held modifiers.
func (d *display) keyEvent(down bool, k key) error {
	mods := d.pt.Mods
	if k.Shift {
		mods |= modShift
	}
	if mods&modShift != 0 && len(k.Key) == 1 && k.Key[0] >= 'a' && k.Key[0] <= 'z' {
		// A held Shift types the capital.
		k.Key = strings.ToUpper(k.Key)
		if k.Text != "" {
			k.Text = k.Key
		}
	}
	ev := map[string]any{"key": k.Key, "code": k.Code, "windowsVirtualKeyCode": k.VK, "nativeVirtualKeyCode": k.VK}
	ev["modifiers"] = mods
	if !down {
		ev["type"] = "keyUp"
	} else if k.Text != "" && mods&(modCtrl|modAlt|modMeta) == 0 {
		ev["type"], ev["text"], ev["unmodifiedText"] = "keyDown", k.Text, k.Text
	} else {
		ev["type"] = "rawKeyDown"
		// Synthetic keys run no editing shortcut by themselves: name the
		// command Chromium would run for Ctrl+key.
		if cmd := editCommands[k.Key]; cmd != "" && mods&^modShift == modCtrl {
			ev["commands"] = []string{cmd}
		}
	}
	if k.Code == "" {
		delete(ev, "code")
	}
	return d.s.Call("Input.dispatchKeyEvent", ev, nil)
}

func (d *display) keyDown(k key) error {
	if err := d.keyEvent(true, k); err != nil {
		return err
	}
	d.pt.Mods |= k.Mod
	return nil
}

func (d *display) keyUp(k key) error {
	d.pt.Mods &^= k.Mod
	return d.keyEvent(false, k)
}

// typeText types text: printable ASCII (and newline, tab) as key presses,
// everything else inserted as text (Input.insertText), which types any
// script without a clipboard.
func (d *display) typeText(text string) error {
	var run strings.Builder
	flush := func() error {
		if run.Len() == 0 {
			return nil
		}
		err := d.s.Call("Input.insertText", map[string]any{"text": run.String()}, nil)
		run.Reset()
		return err
	}
	for _, r := range text {
		var k key
		ok := false
		switch {
		case r == '\n' || r == '\r':
			k, ok = named["enter"], true
		case r == '\t':
			k, ok = named["tab"], true
		case r < utf8.RuneSelf:
			k, ok = charKey(byte(r))
		}
		if !ok {
			run.WriteRune(r)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := d.keyDown(k); err != nil {
			return err
		}
		if err := d.keyUp(k); err != nil {
			return err
		}
	}
	return flush()
}

func perform(p *params) (string, error) {
	t := p.ActionType
	if t == "WAIT" {
		d := time.Duration(*p.Duration * float64(time.Second))
		capped := ""
		if d > MaxWait {
			d, capped = MaxWait, " (capped at 10s)"
		}
		time.Sleep(d)
		return "Waited " + num(d.Seconds()) + " seconds" + capped, nil
	}
	d, err := open()
	if err != nil {
		return "", err
	}
	button := "left"
	if p.Button != nil {
		button = *p.Button
	}
	// A point given or implied must be on the display.
	var tx, ty float64
	hasPoint := false
	switch t {
	case "MOVE_REL", "DRAG_REL":
		tx, ty, hasPoint = d.pt.X+*p.XOffset, d.pt.Y+*p.YOffset, true
	default:
		if p.X != nil {
			tx, ty, hasPoint = *p.X, *p.Y, true
		}
	}
	if hasPoint {
		if err := d.inside(t, tx, ty); err != nil {
			return "", err
		}
	}
	at := func() string { return "(" + num(d.pt.X) + ", " + num(d.pt.Y) + ")" }
	var done string
	switch t {
	case "MOVE_TO", "MOVE_REL":
		err = d.moveTo(tx, ty)
		done = "Moved mouse to " + at()
	case "CLICK", "RIGHT_CLICK", "DOUBLE_CLICK":
		n := 1
		switch {
		case t == "RIGHT_CLICK":
			button = "right"
		case t == "DOUBLE_CLICK":
			n = 2
		case p.NumClicks != nil:
			n = *p.NumClicks
		}
		if hasPoint {
			err = d.moveTo(tx, ty)
		}
		if err == nil {
			err = d.click(button, n)
		}
		done = fmt.Sprintf("Clicked %s button %d time(s) at %s", button, n, at())
	case "MOUSE_DOWN":
		err = d.press(button, 1)
		done = "Pressed " + button + " button at " + at()
	case "MOUSE_UP":
		err = d.release(button, 1)
		done = "Released " + button + " button at " + at()
	case "DRAG_TO", "DRAG_REL":
		from := at()
		err = d.drag(tx, ty)
		done = "Dragged from " + from + " to " + at()
	case "SCROLL":
		dx, dy := clampNotches(p.DX), clampNotches(p.DY)
		err = d.mouse("mouseWheel", d.pt.X, d.pt.Y, "", 0, map[string]any{"deltaX": dx * NotchPixels, "deltaY": dy * NotchPixels})
		done = fmt.Sprintf("Scrolled dx=%d dy=%d at %s", dx, dy, at())
	case "TYPING":
		err = d.typeText(*p.Text)
		done = fmt.Sprintf("Typed %d character(s)", utf8.RuneCountInString(*p.Text))
	case "PRESS":
		k, _ := lookupKey(*p.Key)
		if err = d.keyDown(k); err == nil {
			err = d.keyUp(k)
		}
		done = "Pressed key " + *p.Key
	case "KEY_DOWN":
		k, _ := lookupKey(*p.Key)
		err = d.keyDown(k)
		done = "Held down key " + *p.Key
	case "KEY_UP":
		k, _ := lookupKey(*p.Key)
		err = d.keyUp(k)
		done = "Released key " + *p.Key
	case "HOTKEY":
		var ks []key
		for _, name := range p.Keys {
			if strings.ToLower(name) == "hyper" {
				ks = append(ks, named["ctrl"], named["alt"], named["shift"])
				continue
			}
			k, _ := lookupKey(name)
			ks = append(ks, k)
		}
		for _, k := range ks {
			if err = d.keyDown(k); err != nil {
				break
			}
		}
		for i := len(ks) - 1; i >= 0; i-- {
			if e := d.keyUp(ks[i]); err == nil {
				err = e
			}
		}
		done = "Pressed hotkey " + strings.Join(p.Keys, "+")
	case "SET_CLIPBOARD":
		err = d.setClipboard(*p.Text)
		done = fmt.Sprintf("Set the clipboard to %d character(s)", utf8.RuneCountInString(*p.Text))
	}
	savePointer(d.pt)
	return done, err
}

func clampNotches(v *int) int {
	if v == nil {
		return 0
	}
	return max(-MaxNotches, min(MaxNotches, *v))
}

// setClipboard writes text to the page's clipboard (the async clipboard
// API, with the permission granted to the page's origin).
func (d *display) setClipboard(text string) error {
	var origin struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := d.s.Call("Runtime.evaluate", map[string]any{"expression": "location.origin", "returnByValue": true}, &origin); err != nil {
		return err
	}
	perm := map[string]any{"permission": map[string]any{"name": "clipboard-write"}, "setting": "granted"}
	if o := origin.Result.Value; strings.HasPrefix(o, "http") {
		perm["origin"] = o
	}
	if err := cdp.Browser("Browser.setPermission", perm, nil); err != nil {
		return err
	}
	q, _ := json.Marshal(text)
	var res struct {
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	expr := "navigator.clipboard.writeText(" + string(q) + ")"
	if err := d.s.Call("Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "userGesture": true}, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		msg := e.Text
		if e.Exception != nil {
			msg = e.Exception.Description
		}
		return fmt.Errorf("the page refused the clipboard: %s", msg)
	}
	return nil
}
