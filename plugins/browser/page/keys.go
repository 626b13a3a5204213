package main

import (
	"encoding/json"
	"strings"

	"github.com/aiodhq/aiod/sdk/cdp"
)

// key is one key of browser_press_key, as Puppeteer's US layout defines
// it: the DOM key and code, the Windows virtual key code, the text it
// types (if any) and its location (1 left, 2 right).
type key struct {
	key, code string
	keyCode   int
	text      string
	location  int
}

// keyNames are browser_press_key's keys in its schema's order.
var keyNames = []string{"Enter", "Tab", "Escape", "Backspace", "Delete", "Insert", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End", "ShiftLeft", "ShiftRight", "ControlLeft", "ControlRight", "AltLeft", "AltRight", "MetaLeft", "MetaRight", "CapsLock", "PrintScreen", "ScrollLock", "Pause", "ContextMenu"}

var keys = map[string]key{
	"Enter": {"Enter", "Enter", 13, "\r", 0}, "Tab": {"Tab", "Tab", 9, "", 0}, "Escape": {"Escape", "Escape", 27, "", 0},
	"Backspace": {"Backspace", "Backspace", 8, "", 0}, "Delete": {"Delete", "Delete", 46, "", 0}, "Insert": {"Insert", "Insert", 45, "", 0},
	"F1": {"F1", "F1", 112, "", 0}, "F2": {"F2", "F2", 113, "", 0}, "F3": {"F3", "F3", 114, "", 0}, "F4": {"F4", "F4", 115, "", 0},
	"F5": {"F5", "F5", 116, "", 0}, "F6": {"F6", "F6", 117, "", 0}, "F7": {"F7", "F7", 118, "", 0}, "F8": {"F8", "F8", 119, "", 0},
	"F9": {"F9", "F9", 120, "", 0}, "F10": {"F10", "F10", 121, "", 0}, "F11": {"F11", "F11", 122, "", 0}, "F12": {"F12", "F12", 123, "", 0},
	"ArrowLeft": {"ArrowLeft", "ArrowLeft", 37, "", 0}, "ArrowRight": {"ArrowRight", "ArrowRight", 39, "", 0},
	"ArrowUp": {"ArrowUp", "ArrowUp", 38, "", 0}, "ArrowDown": {"ArrowDown", "ArrowDown", 40, "", 0},
	"PageUp": {"PageUp", "PageUp", 33, "", 0}, "PageDown": {"PageDown", "PageDown", 34, "", 0},
	"Home": {"Home", "Home", 36, "", 0}, "End": {"End", "End", 35, "", 0},
	"ShiftLeft": {"Shift", "ShiftLeft", 16, "", 1}, "ShiftRight": {"Shift", "ShiftRight", 16, "", 2},
	"ControlLeft": {"Control", "ControlLeft", 17, "", 1}, "ControlRight": {"Control", "ControlRight", 17, "", 2},
	"AltLeft": {"Alt", "AltLeft", 18, "", 1}, "AltRight": {"Alt", "AltRight", 18, "", 2},
	"MetaLeft": {"Meta", "MetaLeft", 91, "", 1}, "MetaRight": {"Meta", "MetaRight", 92, "", 2},
	"CapsLock": {"CapsLock", "CapsLock", 20, "", 0}, "PrintScreen": {"PrintScreen", "PrintScreen", 44, "", 0},
	"ScrollLock": {"ScrollLock", "ScrollLock", 145, "", 0}, "Pause": {"Pause", "Pause", 19, "", 0},
	"ContextMenu": {"ContextMenu", "ContextMenu", 93, "", 0},
}

var pressKeySchema = func() string {
	enum, _ := json.Marshal(keyNames)
	desc, _ := json.Marshal("Name of the key to press or a character to generate, such as " + strings.Join(keyNames, ", "))
	return `{"type":"object","properties":{"key":{"type":"string","enum":` + string(enum) + `,"description":` + string(desc) + `}},"required":["key"],"additionalProperties":false,` + draft7 + `}`
}()

// press sends k's key down and up, as Puppeteer's keyboard.press does.
func press(s *cdp.Session, k key) error {
	down := map[string]any{"type": "rawKeyDown", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.keyCode}
	if k.text != "" {
		down["type"], down["text"], down["unmodifiedText"] = "keyDown", k.text, k.text
	}
	if k.location != 0 {
		down["location"] = k.location
	}
	if err := s.Call("Input.dispatchKeyEvent", down, nil); err != nil {
		return err
	}
	up := map[string]any{"type": "keyUp", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.keyCode}
	if k.location != 0 {
		up["location"] = k.location
	}
	return s.Call("Input.dispatchKeyEvent", up, nil)
}

// typeText types s one character at a time (key down with its text, key
// up; a newline is Enter), as Puppeteer's type does; past typedRunes
// characters the rest is inserted at once (Input.insertText), so a long
// value costs two commands per character only up to that bound.
func typeText(s *cdp.Session, text string) error {
	const typedRunes = 256
	n := 0
	for i, r := range text {
		if n == typedRunes {
			return s.Call("Input.insertText", map[string]any{"text": text[i:]}, nil)
		}
		n++
		if r == '\n' || r == '\r' {
			if err := press(s, keys["Enter"]); err != nil {
				return err
			}
			continue
		}
		ch := string(r)
		if err := s.Call("Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": ch, "text": ch, "unmodifiedText": ch}, nil); err != nil {
			return err
		}
		if err := s.Call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": ch}, nil); err != nil {
			return err
		}
	}
	return nil
}
