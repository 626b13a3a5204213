package caps_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

func keyOf(s string) string { return caps.KeyLine(sha256.Sum256([]byte(s))) }

func TestParsePolicyTenants(t *testing.T) {
	ka, kb := keyOf("alice-key"), keyOf("bob-key")
	for _, tc := range []struct {
		name, policy, wantErr string
	}{
		{"two tenants", `{"tenants":{"alice":{"keys":["` + ka + `"],"tools":["sandbox_*","echo"],"quotas":{"concurrent_calls":4,"calls_per_minute":600,"instances":8,"sessions":2},"upstreams":["peer"],"browser":true},
			"bob":{"keys":["` + kb + `"],"workspace":"/srv/bob"}}}`, ""},
		{"no tenants", `{}`, ""},
		{"a key of two tenants", `{"tenants":{"alice":{"keys":["` + ka + `"]},"bob":{"keys":["` + ka + `"]}}}`, "a key maps to exactly one tenant"},
		{"a key twice", `{"tenants":{"alice":{"keys":["` + ka + `","` + ka + `"]}}}`, "listed twice"},
		{"a plain key", `{"tenants":{"alice":{"keys":["alice-key"]}}}`, `must be "sha256:"`},
		{"upper-case hex", `{"tenants":{"alice":{"keys":["` + strings.ToUpper(ka) + `"]}}}`, `must be "sha256:"`},
		{"the reserved name", `{"tenants":{"default":{"keys":["` + ka + `"]}}}`, "reserved"},
		{"a bad name", `{"tenants":{"Alice":{"keys":["` + ka + `"]}}}`, "name must match"},
		{"a negative quota", `{"tenants":{"alice":{"keys":["` + ka + `"],"quotas":{"calls_per_minute":-1}}}}`, "quotas.calls_per_minute"},
		{"a relative workspace", `{"tenants":{"alice":{"keys":["` + ka + `"],"workspace":"ws"}}}`, "absolute"},
		{"a bad upstream", `{"tenants":{"alice":{"keys":["` + ka + `"],"upstreams":["Peer One"]}}}`, "upstream server name"},
		{"an unknown field", `{"tenants":{"alice":{"keys":["` + ka + `"],"tool":["echo"]}}}`, "unknown field"},
		{"an unknown quota", `{"tenants":{"alice":{"keys":["` + ka + `"],"quotas":{"rps":1}}}}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := caps.ParsePolicy([]byte(tc.policy))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "alice-key") {
				t.Fatalf("the error shows a key: %v", err)
			}
		})
	}
}

func TestTenantAllowLists(t *testing.T) {
	tn := caps.Tenant{Tools: []string{"sandbox_*", "echo", "skill://*"}, Upstreams: []string{"peer"}}
	for name, want := range map[string]bool{"echo": true, "echo2": false, "sandbox_execute_bash": true, "sandbox": false,
		"skill://x/SKILL.md": true, "browser_get_info": false, "": false} {
		if got := tn.ToolAllowed(name); got != want {
			t.Errorf("ToolAllowed(%q) = %v, want %v", name, got, want)
		}
	}
	if !tn.UpstreamAllowed("peer") || tn.UpstreamAllowed("other") {
		t.Error("upstream allow-list")
	}
	if (caps.Tenant{}).ToolAllowed("echo") || (caps.Tenant{}).UpstreamAllowed("peer") {
		t.Error("an empty allow-list must allow nothing")
	}
	if !(caps.Tenant{Upstreams: []string{"*"}}).UpstreamAllowed("any") {
		t.Error(`"*" must allow every upstream`)
	}
	k := caps.Tenant{Keys: []string{keyOf("k")}}
	if hs := k.KeyHashes(); len(hs) != 1 || hs[0] != sha256.Sum256([]byte("k")) {
		t.Errorf("KeyHashes = %x", hs)
	}
}
