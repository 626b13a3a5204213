package main

import (
	"strings"
)

// key is one key as CDP's Input.dispatchKeyEvent wants it.
type key struct {
	Key  string // DOM KeyboardEvent.key
	Code string // DOM KeyboardEvent.code
	VK   int    // Windows virtual key code
	Text string // the text the key types ("" for none)
	// Shift is set for a character typed with Shift on a US layout.
	Shift bool
	// Mod is the modifier bit the key holds (Alt 1, Ctrl 2, Meta 4,
	// Shift 8), 0 for other keys.
	Mod int
}

// Modifier bits of Input.dispatchKeyEvent / dispatchMouseEvent.
const (
	modAlt   = 1
	modCtrl  = 2
	modMeta  = 4
	modShift = 8
)

// named are pyautogui's key names (lower case) this display can press.
var named = map[string]key{
	"enter": {Key: "Enter", Code: "Enter", VK: 13, Text: "\r"}, "tab": {Key: "Tab", Code: "Tab", VK: 9, Text: "\t"},
	"space": {Key: " ", Code: "Space", VK: 32, Text: " "}, "backspace": {Key: "Backspace", Code: "Backspace", VK: 8},
	"delete": {Key: "Delete", Code: "Delete", VK: 46}, "esc": {Key: "Escape", Code: "Escape", VK: 27},
	"up": {Key: "ArrowUp", Code: "ArrowUp", VK: 38}, "down": {Key: "ArrowDown", Code: "ArrowDown", VK: 40},
	"left": {Key: "ArrowLeft", Code: "ArrowLeft", VK: 37}, "right": {Key: "ArrowRight", Code: "ArrowRight", VK: 39},
	"home": {Key: "Home", Code: "Home", VK: 36}, "end": {Key: "End", Code: "End", VK: 35},
	"pageup": {Key: "PageUp", Code: "PageUp", VK: 33}, "pagedown": {Key: "PageDown", Code: "PageDown", VK: 34},
	"insert": {Key: "Insert", Code: "Insert", VK: 45}, "capslock": {Key: "CapsLock", Code: "CapsLock", VK: 20},
	"numlock": {Key: "NumLock", Code: "NumLock", VK: 144}, "scrolllock": {Key: "ScrollLock", Code: "ScrollLock", VK: 145},
	"pause": {Key: "Pause", Code: "Pause", VK: 19}, "printscreen": {Key: "PrintScreen", Code: "PrintScreen", VK: 44},
	"apps":  {Key: "ContextMenu", Code: "ContextMenu", VK: 93},
	"shift": {Key: "Shift", Code: "ShiftLeft", VK: 16, Mod: modShift}, "shiftright": {Key: "Shift", Code: "ShiftRight", VK: 16, Mod: modShift},
	"ctrl": {Key: "Control", Code: "ControlLeft", VK: 17, Mod: modCtrl}, "ctrlright": {Key: "Control", Code: "ControlRight", VK: 17, Mod: modCtrl},
	"alt": {Key: "Alt", Code: "AltLeft", VK: 18, Mod: modAlt}, "altright": {Key: "Alt", Code: "AltRight", VK: 18, Mod: modAlt},
	"win": {Key: "Meta", Code: "MetaLeft", VK: 91, Mod: modMeta}, "winright": {Key: "Meta", Code: "MetaRight", VK: 92, Mod: modMeta},
	"multiply": {Key: "*", Code: "NumpadMultiply", VK: 106, Text: "*"}, "add": {Key: "+", Code: "NumpadAdd", VK: 107, Text: "+"},
	"subtract": {Key: "-", Code: "NumpadSubtract", VK: 109, Text: "-"}, "decimal": {Key: ".", Code: "NumpadDecimal", VK: 110, Text: "."},
	"divide": {Key: "/", Code: "NumpadDivide", VK: 111, Text: "/"},
}

// aliases map other names (pyautogui's and aiod's) onto named's.
var aliases = map[string]string{
	"return": "enter", "escape": "esc", "del": "delete", "pgup": "pageup", "pgdn": "pagedown",
	"control": "ctrl", "ctrlleft": "ctrl", "shiftleft": "shift", "altleft": "alt", "meta": "alt",
	"option": "alt", "optionleft": "alt", "optionright": "altright", "super": "win", "winleft": "win",
	"command": "win", "cmd": "win", "arrowleft": "left", "arrowright": "right", "arrowup": "up",
	"arrowdown": "down", "prtsc": "printscreen", "prtscr": "printscreen", "prntscrn": "printscreen",
	"print": "printscreen", "contextmenu": "apps", " ": "space", "\n": "enter", "\r": "enter", "\t": "tab",
}

// usPunct are the printable ASCII characters besides letters and digits:
// their code and virtual key on a US layout, and whether Shift types them.
var usPunct = map[byte]struct {
	code  string
	vk    int
	shift bool
}{
	'`': {"Backquote", 192, false}, '~': {"Backquote", 192, true}, '-': {"Minus", 189, false}, '_': {"Minus", 189, true},
	'=': {"Equal", 187, false}, '+': {"Equal", 187, true}, '[': {"BracketLeft", 219, false}, '{': {"BracketLeft", 219, true},
	']': {"BracketRight", 221, false}, '}': {"BracketRight", 221, true}, '\\': {"Backslash", 220, false}, '|': {"Backslash", 220, true},
	';': {"Semicolon", 186, false}, ':': {"Semicolon", 186, true}, '\'': {"Quote", 222, false}, '"': {"Quote", 222, true},
	',': {"Comma", 188, false}, '<': {"Comma", 188, true}, '.': {"Period", 190, false}, '>': {"Period", 190, true},
	'/': {"Slash", 191, false}, '?': {"Slash", 191, true},
	'!': {"Digit1", 49, true}, '@': {"Digit2", 50, true}, '#': {"Digit3", 51, true}, '$': {"Digit4", 52, true},
	'%': {"Digit5", 53, true}, '^': {"Digit6", 54, true}, '&': {"Digit7", 55, true}, '*': {"Digit8", 56, true},
	'(': {"Digit9", 57, true}, ')': {"Digit0", 48, true},
}

// lookupKey maps a pyautogui key name (case-insensitive for names, a
// single character as typed) to a key.
func lookupKey(name string) (key, bool) {
	if len(name) == 1 {
		if k, ok := charKey(name[0]); ok {
			return k, true
		}
	}
	n := strings.ToLower(name)
	if a, ok := aliases[n]; ok {
		n = a
	}
	if k, ok := named[n]; ok {
		return k, true
	}
	if len(n) >= 2 && len(n) <= 3 && n[0] == 'f' {
		if i := atoi(n[1:]); i >= 1 && i <= 24 {
			s := "F" + n[1:]
			return key{Key: s, Code: s, VK: 111 + i}, true
		}
	}
	if len(n) == 4 && strings.HasPrefix(n, "num") && n[3] >= '0' && n[3] <= '9' {
		d := string(n[3])
		return key{Key: d, Code: "Numpad" + d, VK: 96 + int(n[3]-'0'), Text: d}, true
	}
	return key{}, false
}

// charKey is the key typing printable ASCII c.
func charKey(c byte) (key, bool) {
	switch {
	case c >= 'a' && c <= 'z':
		u := string(c - 32)
		return key{Key: string(c), Code: "Key" + u, VK: int(c - 32), Text: string(c)}, true
	case c >= 'A' && c <= 'Z':
		return key{Key: string(c), Code: "Key" + string(c), VK: int(c), Text: string(c), Shift: true}, true
	case c >= '0' && c <= '9':
		return key{Key: string(c), Code: "Digit" + string(c), VK: int(c), Text: string(c)}, true
	case c == ' ':
		return named["space"], true
	}
	if p, ok := usPunct[c]; ok {
		return key{Key: string(c), Code: p.code, VK: p.vk, Text: string(c), Shift: p.shift}, true
	}
	return key{}, false
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
