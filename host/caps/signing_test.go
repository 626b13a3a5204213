package caps_test

import (
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
)

// a P-256 public key (PKIX, base64)
const p256 = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEnFpxF6Nl5q/yJI/osZI6CGoDUSoKc0gPcnwJYE9h11I7ndT1NQwhJAmSYh8uEuK51iRkSpXJ4+9zmvoX+qBmCA=="

func TestPolicySignatureKeys(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	p, err := caps.ParsePolicy([]byte(`{"plugins":{"echo":{"oci":"127.0.0.1:5000/aiod/echo:1@` + d + `","sha256":"` + strings.Repeat("b", 64) + `","state":{}}},
		"trusted_keys":{"ops":"` + p256 + `"},"require_signatures":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.OCI["echo"] != "127.0.0.1:5000/aiod/echo:1@"+d || p.Pins["echo"] != strings.Repeat("b", 64) || p.Keys["ops"] == nil || p.Plugins["echo"].State == nil {
		t.Fatalf("%+v", p)
	}
	if !p.SignaturesRequired(false) {
		t.Fatal("require_signatures not required")
	}
	p, _ = caps.ParsePolicy([]byte(`{"trusted_keys":{"ops":"` + p256 + `"}}`))
	if p.SignaturesRequired(false) || !p.SignaturesRequired(true) {
		t.Fatal("keys without require_signatures: required only in lockdown")
	}
	p, _ = caps.ParsePolicy([]byte(`{}`))
	if p.SignaturesRequired(true) {
		t.Fatal("no keys: lockdown requires no signature")
	}
	for doc, want := range map[string]string{
		`{"plugins":{"echo":{"oci":"127.0.0.1:5000/aiod/echo:1"}}}`:                               "oci must be a reference by digest",
		`{"plugins":{"echo":{"oci":"../../etc@` + d + `"}}}`:                                      "oci must be a reference by digest",
		`{"plugins":{"echo":{"oci":7}}}`:                                                          "oci must be a reference by digest",
		`{"require_signatures":true}`:                                                             "require_signatures needs trusted_keys",
		`{"trusted_keys":{"ops":"not a key"}}`:                                                    "trusted_keys ops: neither PEM nor base64",
		`{"trusted_keys":{"ops":"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----"}}`: `trusted_keys ops: want one PEM "PUBLIC KEY" block`,
		`{"trusted_keys":["` + p256 + `"]}`:                                                       "cannot unmarshal",
	} {
		if _, err := caps.ParsePolicy([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
