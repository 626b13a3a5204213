package main

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

func init() {
	settings = append(settings,
		setting{"AIO_OAUTH_ISSUER", "https://env.test", "https://env.test", "https://flag.test", "https://flag.test", "", func(s *startFlags) any { return s.cfg.OAuthIssuer }, ""},
		setting{"AIO_OAUTH_AUDIENCE", "env-aud", "env-aud", "flag-aud", "flag-aud", "", func(s *startFlags) any { return s.cfg.OAuthAudience }, ""},
		setting{"AIO_OAUTH_JWKS", "/env/jwks.json", "/env/jwks.json", "/flag/jwks.json", "/flag/jwks.json", "", func(s *startFlags) any { return s.cfg.OAuthJWKS }, ""},
		setting{"AIO_OAUTH_TENANT_CLAIM", "tenant", "tenant", "azp", "azp", "", func(s *startFlags) any { return s.cfg.OAuthTenantClaim }, "sub"},
		setting{"AIO_AUDIT_LOG", "/env/audit.log", "/env/audit.log", "/flag/audit.log", "/flag/audit.log", "", func(s *startFlags) any { return s.cfg.AuditLog }, ""},
	)
}

// TestKeyNew: the printed policy line is the SHA-256 of the printed key,
// in the form the policy accepts, and two keys differ.
func TestKeyNew(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"key", "new"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var key, line string
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "key:"); ok {
			key = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "policy:"); ok {
			line = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	if len(key) < 40 || line != caps.KeyLine(sha256.Sum256([]byte(key))) {
		t.Fatalf("key %q, line %q: the line is not the key's digest", key, line)
	}
	pol := `{"tenants":{"alice":{"keys":["` + line + `"],"tools":["echo"]}}}`
	if _, err := caps.ParsePolicy([]byte(pol)); err != nil {
		t.Fatalf("the printed line does not parse in a policy: %v", err)
	}
	out.Reset()
	run([]string{"key", "new"}, &out, &errb)
	if strings.Contains(out.String(), key) {
		t.Fatal("two runs printed the same key")
	}
	if code := run([]string{"key"}, &out, &errb); code != 2 {
		t.Fatalf("aiod key: exit %d, want 2 (usage)", code)
	}
}
