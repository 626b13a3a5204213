package caps_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/caps/internal/gentenants"
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

const tenantsSchemaFile = "../../spec/tenants.schema.json"

func TestTenantsSchemaUpToDate(t *testing.T) {
	want, err := gentenants.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(tenantsSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the generator writes: run go generate ./host/caps", tenantsSchemaFile)
	}
}

// TestTenantsSchemaAgrees: the schema and caps.ParsePolicy accept the
// examples of spec/tenants.md and refuse the same malformed tenants (the
// duplicate digest across tenants is the one rule only ParsePolicy sees).
func TestTenantsSchemaAgrees(t *testing.T) {
	b, err := os.ReadFile(tenantsSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(doc string) error {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			return err
		}
		return rs.Validate(v)
	}
	doc, err := os.ReadFile("../../spec/tenants.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(string(doc), "```json policy\n")[1:] {
		ex := block[:strings.Index(block, "```")]
		n++
		if _, err := caps.ParsePolicy([]byte(ex)); err != nil {
			t.Errorf("spec/tenants.md example %d: %v", n, err)
		}
		if err := validate(ex); err != nil {
			t.Errorf("spec/tenants.md example %d: schema: %v", n, err)
		}
	}
	if n == 0 {
		t.Fatal("spec/tenants.md has no example")
	}
	ka := keyOf("a")
	for _, bad := range []string{
		`{"tenants":{"default":{"keys":[]}}}`,
		`{"tenants":{"Alice":{"keys":[]}}}`,
		`{"tenants":{"alice":{"keys":["plain"]}}}`,
		`{"tenants":{"alice":{"keys":["` + ka + `"],"quotas":{"sessions":-1}}}}`,
		`{"tenants":{"alice":{"keys":["` + ka + `"],"quotas":{"other":1}}}}`,
		`{"tenants":{"alice":{"keys":["` + ka + `"],"workspace":"rel"}}}`,
		`{"tenants":{"alice":{"keys":["` + ka + `"],"upstreams":["A B"]}}}`,
		`{"tenants":{"alice":{"keys":["` + ka + `"],"browser":"yes"}}}`,
		`{"tenants":{"alice":{"keys":["` + ka + `"],"extra":1}}}`,
	} {
		_, perr := caps.ParsePolicy([]byte(bad))
		serr := validate(bad)
		if perr == nil || serr == nil {
			t.Errorf("%s: ParsePolicy %v, schema %v: both must refuse it", bad, perr, serr)
		}
	}
}
