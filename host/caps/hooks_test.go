package caps_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/caps"
)

func TestPolicyHooks(t *testing.T) {
	many := `{"hooks":[` + strings.TrimSuffix(strings.Repeat(`{"event":"before-tool","command":["/bin/true"]},`, caps.MaxHooks+1), ",") + `]}`
	for _, tc := range []struct {
		name, policy string
		want         string // "" accepted; else a substring of the error
	}{
		{"before and after", `{"hooks":[{"event":"before-tool","command":["/etc/aiod/guard.sh","-v"],"tools":["sandbox_*"],"timeout_ms":5000},{"event":"after-tool","command":["/usr/bin/logger"]}]}`, ""},
		{"in a tenant", `{"tenants":{"alice":{"keys":[],"hooks":[{"event":"after-tool","command":["/bin/true"]}]}}}`, ""},
		{"a guard plugin", `{"hooks":[{"plugin":"secrets","tools":["*"],"fail_open":true,"config":{"mode":"block"}}]}`, ""},
		{"a guard with a command", `{"hooks":[{"plugin":"secrets","command":["/bin/true"]}]}`, "takes no event, command"},
		{"a guard with a bad name", `{"hooks":[{"plugin":"../x"}]}`, "not a plugin name"},
		{"fail_open on a command", `{"hooks":[{"event":"before-tool","command":["/bin/true"],"fail_open":true}]}`, "for guard plugins"},
		{"no event", `{"hooks":[{"command":["/bin/true"]}]}`, "event is required"},
		{"unknown event", `{"hooks":[{"event":"run-start","command":["/bin/true"]}]}`, `event "run-start"`},
		{"no command", `{"hooks":[{"event":"before-tool"}]}`, "command is required"},
		{"relative program", `{"hooks":[{"event":"before-tool","command":["guard.sh"]}]}`, "absolute, clean path"},
		{"unclean program", `{"hooks":[{"event":"before-tool","command":["/etc/../tmp/x"]}]}`, "absolute, clean path"},
		{"NUL in an argument", `{"hooks":[{"event":"before-tool","command":["/bin/true","a\u0000b"]}]}`, "NUL"},
		{"empty glob", `{"hooks":[{"event":"before-tool","command":["/bin/true"],"tools":[""]}]}`, "glob"},
		{"negative timeout", `{"hooks":[{"event":"before-tool","command":["/bin/true"],"timeout_ms":-1}]}`, "timeout_ms"},
		{"huge timeout", `{"hooks":[{"event":"before-tool","command":["/bin/true"],"timeout_ms":9223372036854775807}]}`, "timeout_ms"},
		{"unknown member", `{"hooks":[{"event":"before-tool","command":["/bin/true"],"shell":true}]}`, "unknown field"},
		{"too many", many, "at most"},
		{"a tenant's bad hook names the tenant", `{"tenants":{"alice":{"keys":[],"hooks":[{"event":"x","command":["/bin/true"]}]}}}`, "tenant alice: hooks[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := caps.ParsePolicy([]byte(tc.policy))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestHookMatchesAndTimeout(t *testing.T) {
	h := caps.Hook{Event: caps.HookBeforeTool, Command: []string{"/x/g.sh"}, Tools: []string{"github_*", "shell"}}
	for _, tc := range []struct {
		name string
		want bool
	}{{"github_create_issue", true}, {"shell", true}, {"shell2", false}, {"sandbox_execute_bash", false}} {
		if got := h.Matches(tc.name); got != tc.want {
			t.Errorf("Matches(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(caps.Hook{}).Matches("anything") {
		t.Error("a hook without globs is for every tool")
	}
	if h.Timeout() != 30*time.Second || (caps.Hook{TimeoutMs: 1500}).Timeout() != 1500*time.Millisecond {
		t.Errorf("timeouts %s, %s", h.Timeout(), (caps.Hook{TimeoutMs: 1500}).Timeout())
	}
	if h.Label() != "before-tool g.sh" {
		t.Errorf("label %q", h.Label())
	}
}
