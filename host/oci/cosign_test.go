package oci_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/aiodhq/aiod/host/oci"
)

// TestCosignCompatible checks aiod's signatures against sigstore's own
// Go code, the primitives cosign signs and verifies with: aiod's payload
// is cosign's SimpleContainerImage, a signature sigstore's signer makes
// over cosign's payload verifies in aiod, one aiod makes verifies with
// sigstore's verifier, and aiod's public key file loads as cosign loads
// one.
func TestCosignCompatible(t *testing.T) {
	key, pub := keyPair(t)
	art, _ := oci.Build(testManifest, testModule)
	digest := oci.Digest(art)
	ref, err := name.NewDigest("127.0.0.1:5000/aiod/echo@" + digest)
	if err != nil {
		t.Fatal(err)
	}

	// aiod's payload, read as cosign reads one
	mine := oci.Payload("127.0.0.1:5000/aiod/echo", digest)
	var sci payload.SimpleContainerImage
	if err := json.Unmarshal(mine, &sci); err != nil {
		t.Fatal(err)
	}
	if sci.Critical.Image.DockerManifestDigest != digest || sci.Critical.Type != payload.CosignSignatureType || sci.Critical.Identity.DockerReference != "127.0.0.1:5000/aiod/echo" {
		t.Fatalf("cosign reads aiod's payload as %+v", sci.Critical)
	}
	sig, _ := oci.Sign(key, mine)
	raw, _ := base64.StdEncoding.DecodeString(sig.Signature)
	v, err := signature.LoadECDSAVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(mine)); err != nil {
		t.Fatalf("sigstore's verifier refuses aiod's signature: %v", err)
	}

	// cosign's payload, signed by sigstore's signer, verified by aiod
	theirs, err := (&payload.Cosign{Image: ref}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	tsig, err := sv.SignMessage(bytes.NewReader(theirs))
	if err != nil {
		t.Fatal(err)
	}
	who, err := oci.Verify([]oci.Signature{{Payload: theirs, Signature: base64.StdEncoding.EncodeToString(tsig)}}, digest, map[string]*ecdsa.PublicKey{"ops": pub})
	if err != nil || who != "ops" {
		t.Fatalf("aiod refuses cosign's signature: %q %v", who, err)
	}

	// the key files: aiod's public key as cosign loads one
	_, pubPEM, _ := oci.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 256)))
	if _, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM); err != nil {
		t.Fatalf("cosign cannot load aiod's public key: %v", err)
	}
}
