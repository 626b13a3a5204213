package hooks_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/hooks"
	"github.com/aiodhq/aiod/sdk/abi"
)

func TestAddText(t *testing.T) {
	for _, tc := range []struct {
		name, res string
		want      string // the result after, "" when refused
	}{
		{"appends after the tool's blocks", `{"content":[{"type":"text","text":"a"}],"isError":false}`,
			`{"content":[{"type":"text","text":"a"},{"_meta":{"aiod.dev/hook":"after-tool n.sh"},"text":"[after-tool n.sh] x","type":"text"}],"isError":false}`},
		{"keeps the other members", `{"content":[],"structuredContent":{"k":1},"_meta":{"v":2}}`,
			`{"_meta":{"v":2},"content":[{"_meta":{"aiod.dev/hook":"after-tool n.sh"},"text":"[after-tool n.sh] x","type":"text"}],"structuredContent":{"k":1}}`},
		{"makes a content array", `{}`,
			`{"content":[{"_meta":{"aiod.dev/hook":"after-tool n.sh"},"text":"[after-tool n.sh] x","type":"text"}]}`},
		{"null content", `{"content":null}`,
			`{"content":[{"_meta":{"aiod.dev/hook":"after-tool n.sh"},"text":"[after-tool n.sh] x","type":"text"}]}`},
		{"not an object", `[1,2]`, ""},
		{"content not an array", `{"content":"text"}`, ""},
		{"not JSON", `{"content":[`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hooks.AddText([]byte(tc.res), "after-tool n.sh", "x")
			if tc.want == "" {
				if err == nil {
					t.Fatalf("accepted: %s", got)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

func TestBlocked(t *testing.T) {
	long := strings.Repeat("é", hooks.MaxReasonBytes) // two bytes each
	for _, tc := range []struct{ name, reason, want string }{
		{"names the hook and the reason", "no shell", "Blocked by the operator's hook (before-tool g.sh): no shell"},
		{"invalid UTF-8 is replaced", "bad \xff byte", "Blocked by the operator's hook (before-tool g.sh): bad \ufffd byte"},
		{"a long reason is clipped on a rune", long, "Blocked by the operator's hook (before-tool g.sh): " + long[:hooks.MaxReasonBytes] + " …[cut]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res struct {
				Content []struct{ Type, Text string } `json:"content"`
				IsError bool                          `json:"isError"`
			}
			if err := json.Unmarshal(hooks.Blocked("before-tool g.sh", tc.reason), &res); err != nil {
				t.Fatal(err)
			}
			if !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != tc.want {
				t.Fatalf("%+v, want isError %q", res, tc.want)
			}
		})
	}
}

// FuzzAddText: whatever a tool answered, AddText refuses it or returns a
// JSON object whose last content block is the hook's.
func FuzzAddText(f *testing.F) {
	for _, s := range []string{`{}`, `{"content":[{"type":"text","text":"a"}]}`, `{"content":null}`, `[]`, `{"content":{}}`, `"x"`, `{"a":1,"a":2}`} {
		f.Add([]byte(s), "line")
	}
	f.Fuzz(func(t *testing.T, res []byte, text string) {
		out, err := hooks.AddText(res, "after-tool n.sh", text)
		if err != nil {
			return
		}
		var obj struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(out, &obj); err != nil {
			t.Fatalf("AddText(%q) = %q: not a result object: %v", res, out, err)
		}
		last := obj.Content[len(obj.Content)-1]
		if meta, _ := last["_meta"].(map[string]any); meta[hooks.MetaKey] != "after-tool n.sh" {
			t.Fatalf("last block %v is not the hook's", last)
		}
	})
}

// TestGuardEventIsAHookEvent: the event a guard reads decodes to the
// abi.HookEvent of the call, whatever its strings hold.
func TestGuardEventIsAHookEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   hooks.Event
		cfg  map[string]string
	}{
		{"before", hooks.Event{Tenant: "alice", Era: "legacy", Session: "s-1", Tool: "echo", Input: json.RawMessage(`{"text":"hi"}`)}, map[string]string{"mode": "block"}},
		{"after", hooks.Event{Tenant: "default", Era: "modern", Tool: "up_x", Input: json.RawMessage(`{}`),
			Outcome: &hooks.Outcome{Result: json.RawMessage(`{"content":[],"isError":true}`)}}, nil},
		{"hostile strings", hooks.Event{Tenant: "t\"\\\n\u2028<>&", Tool: "a\x00b\xff", Input: json.RawMessage(`{"k":"\u0000"}`)}, map[string]string{"\"": "\n\xff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := hooks.GuardEvent(tc.cfg, &tc.ev)
			if err != nil || !json.Valid(b) {
				t.Fatalf("%s: %v", b, err)
			}
			var got abi.HookEvent
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := abi.HookEvent{Tenant: tc.ev.Tenant, Era: tc.ev.Era, Session: tc.ev.Session, Tool: tc.ev.Tool, Arguments: tc.ev.Input, Config: tc.cfg}
			if tc.ev.Outcome != nil {
				want.Result = tc.ev.Outcome.Result
			}
			// what encoding/json makes of the same strings
			wb, _ := json.Marshal(want)
			var w abi.HookEvent
			json.Unmarshal(wb, &w)
			// the host gives a guard without config "config":{}
			if len(got.Config) == 0 && len(w.Config) == 0 {
				got.Config, w.Config = nil, nil
			}
			if !bytes.HasPrefix(b, []byte(`{"config":`)) {
				t.Errorf("%s: the config is not the first member", b)
			}
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("got %+v\nwant %+v", got, w)
			}
		})
	}
}
