package oci_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/aiodhq/aiod/host/oci"
)

// dsseBundle is a v0.3 bundle holding a DSSE envelope made by sigstore's
// own DSSE signer over an in-toto statement of subject sha256:<hex>, as
// cosign 3 signs an image with a key.
func dsseBundle(t testing.TB, key *ecdsa.PrivateKey, payloadType, hexDigest string) []byte {
	t.Helper()
	st := `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"r/a","digest":{"sha256":"` + hexDigest +
		`"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	env, err := sigdsse.WrapSigner(sv, payloadType).SignMessage(strings.NewReader(st))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"mediaType":"` + oci.BundleMediaType + `","verificationMaterial":{"publicKey":{"hint":"` + oci.KeyHint(&key.PublicKey) +
		`"}},"dsseEnvelope":` + string(env) + `}`)
}

// TestBundle: aiod's bundle is a v0.3 sigstore bundle with a message
// signature whose digest is the artifact's, and verifies with the signing
// key only, for that artifact only; a DSSE bundle of an in-toto statement
// naming the artifact (cosign 3's form) verifies; each hostile variation
// is refused with its reason.
func TestBundle(t *testing.T) {
	key, pub := keyPair(t)
	_, otherPub := keyPair(t)
	art, _ := oci.Build(testManifest, testModule)
	digest := oci.Digest(art)
	b, err := oci.SignBundle(key, art)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		MediaType            string `json:"mediaType"`
		VerificationMaterial struct {
			PublicKey struct{ Hint string } `json:"publicKey"`
		} `json:"verificationMaterial"`
		MessageSignature struct {
			MessageDigest struct{ Algorithm, Digest string } `json:"messageDigest"`
			Signature     string                             `json:"signature"`
		} `json:"messageSignature"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	d, _ := base64.StdEncoding.DecodeString(shape.MessageSignature.MessageDigest.Digest)
	if shape.MediaType != oci.BundleMediaType || shape.VerificationMaterial.PublicKey.Hint != oci.KeyHint(pub) ||
		shape.MessageSignature.MessageDigest.Algorithm != "SHA2_256" || oci.Digest(art) != "sha256:"+hexOf(d) || shape.MessageSignature.Signature == "" {
		t.Fatalf("bundle: %s", b)
	}
	trusted := map[string]*ecdsa.PublicKey{"other": otherPub, "ops": pub}
	if who, err := oci.Verify([]oci.Signature{{Bundle: b}}, digest, trusted); err != nil || who != "ops" {
		t.Fatalf("aiod's bundle: %q %v", who, err)
	}
	// the signatures file round trip keeps the bundle
	file, _ := json.Marshal([]oci.Signature{{Bundle: b}})
	if who, err := oci.VerifyPackage(art, file, testManifest, moduleSum(), trusted); err != nil || who != "ops" {
		t.Fatalf("signatures.json with a bundle (%s): %q %v", file, who, err)
	}
	if who, err := oci.Verify([]oci.Signature{{Bundle: dsseBundle(t, key, oci.InTotoPayloadType, digest[7:])}}, digest, trusted); err != nil || who != "ops" {
		t.Fatalf("a DSSE bundle: %q %v", who, err)
	}

	otherArt, _ := oci.Build([]byte(`{"abi":1,"name":"other","version":"1","tools":[]}`), testModule)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	ms := m["messageSignature"].(map[string]any)
	sig, _ := base64.StdEncoding.DecodeString(ms["signature"].(string))
	sig[len(sig)-1] ^= 1
	ms["signature"] = base64.StdEncoding.EncodeToString(sig)
	tampered, _ := json.Marshal(m)
	for _, c := range []struct {
		name   string
		bundle []byte
		keys   map[string]*ecdsa.PublicKey
		want   string
	}{
		{"another key", b, map[string]*ecdsa.PublicKey{"other": otherPub}, "made by no trusted key"},
		{"another artifact", mustSign(t, key, otherArt), trusted, "not this artifact"},
		{"a tampered signature", tampered, trusted, "made by no trusted key"},
		{"another media type", bytes.Replace(b, []byte(oci.BundleMediaType), []byte("application/vnd.dev.sigstore.bundle.v9+json"), 1), trusted, "mediaType"},
		{"a certificate", []byte(`{"mediaType":"` + oci.BundleMediaType + `","verificationMaterial":{"certificate":{"rawBytes":"MA=="}},"messageSignature":{"signature":"MA=="}}`), trusted, "keyless"},
		{"no content", []byte(`{"mediaType":"` + oci.BundleMediaType + `","verificationMaterial":{"publicKey":{"hint":"x"}}}`), trusted, "neither"},
		{"another digest algorithm", bytes.Replace(b, []byte(`"SHA2_256"`), []byte(`"SHA2_384"`), 1), trusted, "not SHA2_256"},
		{"not JSON", []byte(`{"mediaType":`), trusted, "not a sigstore bundle"},
		{"too large", append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), oci.MaxBundleBytes)...), `"}`...), trusted, "over the 65536 byte limit"},
		{"a DSSE statement of another artifact", dsseBundle(t, key, oci.InTotoPayloadType, oci.Digest(otherArt)[7:]), trusted, "no subject with this artifact's digest"},
		{"a DSSE payload of another type", dsseBundle(t, key, "text/plain", digest[7:]), trusted, "payloadType"},
	} {
		_, err := oci.Verify([]oci.Signature{{Bundle: c.bundle}}, digest, c.keys)
		if !errors.Is(err, oci.ErrBadSignature) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.want)
		}
	}
	// a bundle beside an old simple-signing signature: either verifies
	old, _ := oci.Sign(key, oci.Payload("r/a", digest))
	if who, err := oci.Verify([]oci.Signature{{Bundle: tampered}, old}, digest, trusted); err != nil || who != "ops" {
		t.Fatalf("a bad bundle then a good simple signature: %q %v", who, err)
	}
}

func mustSign(t testing.TB, key *ecdsa.PrivateKey, art []byte) []byte {
	t.Helper()
	b, err := oci.SignBundle(key, art)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hexOf(b []byte) string {
	const h = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, h[c>>4], h[c&15])
	}
	return string(out)
}

// FuzzBundle: a hostile bundle never panics the parser or the verifier,
// and what verifies is a bundle whose signature the trusted key made over
// this artifact.
func FuzzBundle(f *testing.F) {
	key, pub := keyPair(f)
	art, _ := oci.Build(testManifest, testModule)
	digest := oci.Digest(art)
	f.Add(mustSign(f, key, art))
	f.Add(dsseBundle(f, key, oci.InTotoPayloadType, digest[7:]))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{}},"messageSignature":{"signature":"MA=="}}`))
	f.Add([]byte(`null`))
	trusted := map[string]*ecdsa.PublicKey{"ops": pub}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = oci.ParseBundle(b)
		who, err := oci.Verify([]oci.Signature{{Bundle: b}}, digest, trusted)
		if err != nil {
			return
		}
		if who != "ops" {
			t.Fatalf("verified %q as %q", b, who)
		}
		if _, err := oci.ParseBundle(b); err != nil {
			t.Fatalf("verified a bundle that does not parse: %v", err)
		}
	})
}

// TestSignaturesFileOfLargeBundles: a package whose registry attached as
// many bundles as are read, each near its bound, keeps a signatures file
// that is read and verified (over 1 MiB), and one over the file's bound
// is refused naming it.
func TestSignaturesFileOfLargeBundles(t *testing.T) {
	key, pub := keyPair(t)
	art, _ := oci.Build(testManifest, testModule)
	// each bundle exactly at its bound, padded with a field sigstore's
	// readers ignore
	padded := func(b []byte) json.RawMessage {
		head := `{"padding":"`
		n := oci.MaxBundleBytes - len(b) - len(head) - 2
		return json.RawMessage(head + strings.Repeat("x", n) + `",` + string(b[1:]))
	}
	other, _ := keyPair(t)
	list := []oci.Signature{}
	for range 15 {
		list = append(list, oci.Signature{Bundle: padded(mustSign(t, other, art))})
	}
	list = append(list, oci.Signature{Bundle: padded(mustSign(t, key, art))})
	file, _ := json.Marshal(list)
	if len(file) <= 1<<20 {
		t.Fatalf("the file is %d bytes, want over 1 MiB", len(file))
	}
	if who, err := oci.VerifyPackage(art, file, testManifest, moduleSum(), map[string]*ecdsa.PublicKey{"ops": pub}); err != nil || who != "ops" {
		t.Fatalf("16 bundles near their bound: %q %v", who, err)
	}
	huge := append(append([]byte(`[{"payload":"`), bytes.Repeat([]byte("A"), oci.MaxSignaturesFileBytes)...), `"}]`...)
	if _, err := oci.VerifyPackage(art, huge, testManifest, moduleSum(), map[string]*ecdsa.PublicKey{"ops": pub}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("an oversize signatures file: %v", err)
	}
}
