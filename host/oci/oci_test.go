package oci_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci"
)

var (
	testManifest = []byte(`{"abi":1,"name":"echo","version":"1","tools":[]}`)
	testModule   = []byte("\x00asm\x01\x00\x00\x00")
)

func moduleSum() string {
	s := sha256.Sum256(testModule)
	return hex.EncodeToString(s[:])
}

func keyPair(t testing.TB) (*ecdsa.PrivateKey, *ecdsa.PublicKey) {
	priv, pub, err := oci.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := oci.ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := caps.ParsePublicKey(string(pub))
	if err != nil {
		t.Fatal(err)
	}
	return k, p
}

func TestBuildParseCheck(t *testing.T) {
	art, err := oci.Build(testManifest, testModule)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := oci.Build(testManifest, testModule)
	if string(art) != string(again) {
		t.Fatal("Build is not deterministic")
	}
	a, err := oci.Check(art, testManifest, moduleSum())
	if err != nil || a.Digest != oci.Digest(art) {
		t.Fatal(a, err)
	}
	if _, err := oci.Check(art, []byte(`{}`), moduleSum()); err == nil || !strings.Contains(err.Error(), "is not the artifact's manifest layer") {
		t.Fatalf("other manifest: %v", err)
	}
	if _, err := oci.Check(art, testManifest, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "is not the artifact's module layer") {
		t.Fatalf("other module: %v", err)
	}
	for _, c := range []struct{ doc, want string }{
		{string(art) + "{}", "trailing data"},
		{`[]`, "cannot unmarshal"},
		{strings.Replace(string(art), `"schemaVersion":2`, `"schemaVersion":1`, 1), "schemaVersion 1"},
		{strings.Replace(string(art), oci.ImageManifestType, "application/vnd.docker.distribution.manifest.v2+json", 1), "mediaType"},
		{strings.Replace(string(art), oci.EmptyConfigDigest, "sha256:"+strings.Repeat("a", 64), 1), "empty config"},
		{strings.Replace(string(art), oci.Digest(testModule), "sha256:ABC", 1), "is not sha256:<64 hex digits>"},
		{strings.Replace(string(art), `"size":8`, `"size":-8`, 1), "negative size"},
		{strings.Repeat(" ", oci.MaxArtifactBytes+1), "over the 65536 byte limit"},
	} {
		if _, err := oci.Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60s...) = %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestVerifyPackage(t *testing.T) {
	key, pub := keyPair(t)
	_, otherPub := keyPair(t)
	art, _ := oci.Build(testManifest, testModule)
	sig, _ := oci.Sign(key, oci.Payload("127.0.0.1:5000/aiod/echo", oci.Digest(art)))
	sigs, _ := json.Marshal([]oci.Signature{sig})
	trusted := map[string]*ecdsa.PublicKey{"ops": pub}
	if who, err := oci.VerifyPackage(art, sigs, testManifest, moduleSum(), trusted); err != nil || who != "ops" {
		t.Fatal(who, err)
	}
	if _, err := oci.VerifyPackage(nil, nil, testManifest, moduleSum(), trusted); !errors.Is(err, oci.ErrUnsigned) || !strings.Contains(err.Error(), "artifact.json") {
		t.Fatalf("no artifact: %v", err)
	}
	if _, err := oci.VerifyPackage(art, []byte("[]"), testManifest, moduleSum(), trusted); !errors.Is(err, oci.ErrUnsigned) {
		t.Fatalf("no signature: %v", err)
	}
	if _, err := oci.VerifyPackage(art, sigs, testManifest, moduleSum(), map[string]*ecdsa.PublicKey{"x": otherPub}); !errors.Is(err, oci.ErrBadSignature) {
		t.Fatalf("other key: %v", err)
	}
	// the signed artifact, but another module in the directory
	if _, err := oci.VerifyPackage(art, sigs, testManifest, strings.Repeat("1", 64), trusted); err == nil || !strings.Contains(err.Error(), "module layer") {
		t.Fatalf("swapped module: %v", err)
	}
	if _, err := oci.VerifyPackage(art, []byte(`{"not":"a list"}`), testManifest, moduleSum(), trusted); err == nil || !strings.Contains(err.Error(), "signatures.json") {
		t.Fatalf("bad signatures file: %v", err)
	}
	bad := sig
	bad.Signature = "!!!"
	if _, err := oci.Verify([]oci.Signature{bad}, oci.Digest(art), trusted); err == nil || !strings.Contains(err.Error(), "not base64") {
		t.Fatalf("bad base64: %v", err)
	}
	other := sig
	other.Payload = []byte(`{"critical":{"type":"something else","image":{"docker-manifest-digest":"` + oci.Digest(art) + `"}}}`)
	if _, err := oci.Verify([]oci.Signature{other}, oci.Digest(art), trusted); err == nil || !strings.Contains(err.Error(), "payload type") {
		t.Fatalf("other payload type: %v", err)
	}
}

func TestKeys(t *testing.T) {
	priv, pub, _ := oci.GenerateKey(rand.Reader)
	if _, err := caps.ParsePublicKey(string(priv)); err == nil {
		t.Fatal("a private key parsed as a public key")
	}
	if _, err := oci.ParsePrivateKey(pub); err == nil {
		t.Fatal("a public key parsed as a private key")
	}
	body := strings.Join(strings.Split(string(pub), "\n")[1:3], "")
	if _, err := caps.ParsePublicKey(body); err != nil {
		t.Fatalf("base64 body: %v", err)
	}
	// an ed25519 or P-384 key is refused: signatures are P-256
	ed := "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE="
	if _, err := caps.ParsePublicKey(ed); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Fatalf("ed25519 key: %v", err)
	}
}

// FuzzParse: an artifact manifest from a registry never panics the
// parser, and what it accepts has exactly the two bounded layers.
func FuzzParse(f *testing.F) {
	art, _ := oci.Build(testManifest, testModule)
	f.Add(art)
	f.Add([]byte(`{"schemaVersion":2,"layers":[{},{}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := oci.Parse(b)
		if err != nil {
			return
		}
		if a.Manifest.MediaType != oci.ManifestLayerType || a.Module.MediaType != oci.ModuleLayerType ||
			a.Manifest.Size > oci.MaxManifestBytes || a.Module.Size > oci.MaxModuleBytes || a.Manifest.Size < 0 || a.Module.Size < 0 ||
			!oci.ValidDigest(a.Manifest.Digest) || !oci.ValidDigest(a.Module.Digest) || a.Digest != oci.Digest(b) {
			t.Fatalf("accepted %q as %+v", b, a)
		}
	})
}

// FuzzVerifyPackage: hostile artifact, signatures file and payloads never
// verify without the trusted key's signature, and never panic.
func FuzzVerifyPackage(f *testing.F) {
	key, pub := keyPair(f)
	art, _ := oci.Build(testManifest, testModule)
	sig, _ := oci.Sign(key, oci.Payload("r/a", oci.Digest(art)))
	sigs, _ := json.Marshal([]oci.Signature{sig})
	f.Add(art, sigs)
	f.Add(art, []byte(`[{"payload":"e30=","signature":"MEQCIA=="}]`))
	f.Add([]byte(`{}`), []byte(`null`))
	trusted := map[string]*ecdsa.PublicKey{"ops": pub}
	f.Fuzz(func(t *testing.T, a, s []byte) {
		who, err := oci.VerifyPackage(a, s, testManifest, moduleSum(), trusted)
		if err == nil && (who != "ops" || oci.Digest(a) != oci.Digest(art)) {
			t.Fatalf("verified %q %q as %q", a, s, who)
		}
	})
}

// BenchmarkVerifyPackage is what a load of a package pays for its
// signature when the policy has trusted keys (the module's digest is
// known already): a sigstore bundle (what aiod plugin sign makes) and
// cosign's older simple signing.
func BenchmarkVerifyPackage(b *testing.B) {
	key, pub := keyPair(b)
	art, _ := oci.Build(testManifest, testModule)
	bundle, _ := oci.SignBundle(key, art)
	old, _ := oci.Sign(key, oci.Payload("r/a", oci.Digest(art)))
	keys := map[string]*ecdsa.PublicKey{"ops": pub}
	for _, c := range []struct {
		name string
		sig  oci.Signature
	}{{"bundle", oci.Signature{Bundle: bundle}}, {"simplesigning", old}} {
		sigs, _ := json.Marshal([]oci.Signature{c.sig})
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := oci.VerifyPackage(art, sigs, testManifest, moduleSum(), keys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
