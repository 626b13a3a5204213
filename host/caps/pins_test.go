package caps

import (
	"errors"
	"strings"
	"testing"
)

func TestPolicyPins(t *testing.T) {
	const pin = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name, doc string
		pins      map[string]string
		err       string
	}{
		{"none", `{"plugins": {"echo": {}}}`, nil, ""},
		{"pinned", `{"plugins": {"echo": {"sha256": "` + pin + `", "files": {"paths": [{"path": "/tmp", "mode": "ro"}]}}, "hash": {}}}`, map[string]string{"echo": pin}, ""},
		{"only a pin", `{"plugins": {"echo": {"sha256": "` + pin + `"}}, "limits": {"max_instances": 2}}`, map[string]string{"echo": pin}, ""},
		{"upper case", `{"plugins": {"echo": {"sha256": "` + strings.ToUpper(pin) + `"}}}`, nil, "64 lowercase hex"},
		{"short", `{"plugins": {"echo": {"sha256": "abc"}}}`, nil, "64 lowercase hex"},
		{"not a string", `{"plugins": {"echo": {"sha256": 1}}}`, nil, "64 lowercase hex"},
		{"unknown field still refused", `{"plugins": {"echo": {"sha256": "` + pin + `", "sha512": "x"}}}`, nil, "unknown field"},
		{"unknown top field still refused", `{"plugins": {"echo": {"sha256": "` + pin + `"}}, "plugin": {}}`, nil, "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Pins) != len(tc.pins) {
				t.Fatalf("pins %v, want %v", p.Pins, tc.pins)
			}
			for k, v := range tc.pins {
				if p.Pins[k] != v {
					t.Errorf("pin %s = %q, want %q", k, p.Pins[k], v)
				}
			}
		})
	}
	p, err := ParsePolicy([]byte(`{"plugins": {"echo": {"sha256": "` + pin + `", "files": {"paths": [{"path": "/tmp", "mode": "ro"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Plugins["echo"].Files == nil {
		t.Error("the capabilities beside the pin were lost")
	}
	if err := p.CheckPin("echo", pin); err != nil {
		t.Error(err)
	}
	other := strings.Repeat("f", 64)
	for _, c := range []struct{ name, digest, want string }{{"echo", other, "does not match the pin"}, {"hash", pin, `"hash": {"sha256": "` + pin}} {
		err := p.CheckPin(c.name, c.digest)
		if !errors.Is(err, ErrNotPinned) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckPin(%s) = %v, want ErrNotPinned and %q", c.name, err, c.want)
		}
	}
}
