package hooks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
)

// TestDecodeAnswer: a guard's answer bytes are untrusted (the registry
// leaves them unchecked): one answer object or an error, whatever the
// guest wrote.
func TestDecodeAnswer(t *testing.T) {
	for _, tc := range []struct {
		in, action, err string
	}{
		{in: `{"action":"allow"}`, action: abi.HookAllow},
		{in: `{"action":"keep"}`, action: abi.HookKeep},
		{in: ` {"action" : "allow"} `, action: abi.HookAllow}, // not the SDKs' bytes: decoded
		{in: `{"action":"deny","reason":"no"}`, action: abi.HookDeny},
		{in: `{"action":"rewrite","arguments":{"a":1}}`, action: abi.HookRewrite},
		{in: `{"action":"allow"} {"action":"deny"}`, err: "not one JSON object"},
		{in: `{"action":"allow"}x`, err: "not one JSON object"},
		{in: `{"action":"allow"`, err: "not one JSON object"},
		{in: `[{"action":"allow"}]`, err: "not one JSON object"},
		{in: `null`, err: "not one JSON object"},
		{in: ``, err: "not one JSON object"},
		{in: "\xff\xfe", err: "not one JSON object"},
		{in: `{"action":"allow","extra":1}`, err: "not a hook answer"},
		{in: `{"action":42}`, err: "not a hook answer"},
		{in: strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000), err: "an answer that is not"},
	} {
		a, err := decodeAnswer([]byte(tc.in))
		name := tc.in
		if len(name) > 40 {
			name = name[:40]
		}
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error with %q", name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", name, err)
		case tc.err == "" && a.Action != tc.action:
			t.Errorf("%q: action %q, want %q", name, a.Action, tc.action)
		}
	}
}

// FuzzDecodeAnswer: decodeAnswer never panics, and accepts only one
// JSON object.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`{"action":"allow"}`, `{"action":"keep"}`, `{"action":"add","text":"x"}`,
		`{"action":"replace","result":{"content":[]}}`, `{"action":"allow"} {}`, `[]`, `{"action":"deny","reason":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAnswer(b)
		if err != nil {
			return
		}
		if a == nil || !json.Valid(b) || !isObject(b) {
			t.Fatalf("accepted %q", b)
		}
	})
}
