package rules_test

import (
	"strings"
	"testing"

	"github.com/aiodhq/aiod/plugins/guards/argpolicy/rules"
)

func TestMatch(t *testing.T) {
	cfg := map[string]string{
		"deny:cmd":          `(^|[;&|]\s*)rm\s+-rf\s+/`,
		"deny:files.*.path": `^/etc/`,
		"deny:opts.force":   `^true$`,
		"deny:n":            `^4[0-9]$`,
		"unrelated":         "ignored",
	}
	rs, err := rules.Parse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args, at string // at "": allowed
	}{
		{"clean", `{"cmd":"ls -la"}`, ""},
		{"the command", `{"cmd":"cd /tmp; rm -rf /"}`, "cmd"},
		{"at the start", `{"cmd":"rm  -rf /home"}`, "cmd"},
		{"not at a command start", `{"cmd":"echo rm -rf /"}`, ""},
		{"any element", `{"files":[{"path":"/tmp/a"},{"path":"/etc/shadow"}]}`, "files.1.path"},
		{"a boolean", `{"opts":{"force":true}}`, "opts.force"},
		{"a number keeps its digits", `{"n":42}`, "n"},
		{"a number outside", `{"n":4.2e1}`, ""},
		{"an object is not a value", `{"cmd":{"x":"rm -rf /"}}`, ""},
		{"missing path", `{"other":"rm -rf /"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, at, ok, err := rules.Match(rs, []byte(tc.args))
			if err != nil || ok != (tc.at != "") || at != tc.at {
				t.Fatalf("Match = %v %q %v %v, want at %q", r, at, ok, err, tc.at)
			}
		})
	}
	if _, _, _, err := rules.Match(rs, []byte(`{"cmd":`)); err == nil {
		t.Error("arguments that are not JSON were matched")
	}
}

func TestParseRefuses(t *testing.T) {
	many := map[string]string{}
	for i := 0; i <= rules.MaxRules; i++ {
		many["deny:k"+strings.Repeat("x", i)] = "a"
	}
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"bad pattern", map[string]string{"deny:cmd": "("}, "deny:cmd"},
		{"empty path", map[string]string{"deny:": "a"}, "path"},
		{"empty segment", map[string]string{"deny:a..b": "a"}, "path"},
		{"long pattern", map[string]string{"deny:a": strings.Repeat("a", rules.MaxPattern+1)}, "longer"},
		{"too many", many, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rules.Parse(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzMatch: whatever the arguments, Match returns.
func FuzzMatch(f *testing.F) {
	rs, err := rules.Parse(map[string]string{"deny:*.*": "x", "deny:a.0": "y"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{}`, `{"a":["y"]}`, `{"b":{"c":"x"}}`, `[1]`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { rules.Match(rs, b) })
}
