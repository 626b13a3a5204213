package oci

// Sigstore bundles (spec/oci.md §3): the signature format of cosign 3
// and sigstore's other clients, a protobuf message in its JSON form,
// read and written with sigstore's own generated types
// (sigstore/protobuf-specs) and checked with sigstore's signature
// package. aiod signs with a message signature over the artifact's
// manifest (so the bundle's message digest is the artifact's digest) and
// a public-key verification material; it verifies that form and a DSSE
// envelope of an in-toto statement whose subject is the artifact (what
// cosign 3 makes with a key).

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"google.golang.org/protobuf/encoding/protojson"
)

// Media types and annotations of a bundle.
const (
	// BundleMediaType is a v0.3 sigstore bundle's media type: its
	// mediaType field, the artifactType of the manifest holding it and
	// the media type of that manifest's one layer.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// BundleContentAnnotation names what a bundle holds
	// ("message-signature" or "dsse-envelope") on its manifest.
	BundleContentAnnotation = "dev.sigstore.bundle.content"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// MaxBundleBytes bounds one bundle.
	MaxBundleBytes = 64 << 10
)

// bundleMediaTypes are the bundle versions read: v0.3, and the v0.1 and
// v0.2 forms older clients write.
var bundleMediaTypes = map[string]bool{
	BundleMediaType: true,
	"application/vnd.dev.sigstore.bundle+json;version=0.1": true,
	"application/vnd.dev.sigstore.bundle+json;version=0.2": true,
	"application/vnd.dev.sigstore.bundle.v0.2+json":        true,
}

// KeyHint is the hint a bundle aiod makes names its key by: the base64
// of the SHA-256 of the public key's PKIX DER.
func KeyHint(pub *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// SignBundle signs artifact (an artifact manifest's bytes) with key and
// returns the sigstore bundle's JSON: a v0.3 bundle with a message
// signature (SHA2_256 message digest, the artifact's digest) and the
// key's hint as its verification material; no transparency-log entry and
// no timestamp (offline keys).
func SignBundle(key *ecdsa.PrivateKey, artifact []byte) ([]byte, error) {
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	sig, err := sv.SignMessage(bytes.NewReader(artifact), options.WithRand(rand.Reader))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(artifact)
	b := &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: KeyHint(&key.PublicKey)}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: sum[:]},
			Signature:     sig,
		}},
	}
	return protojson.Marshal(b)
}

// ParseBundle reads a bundle's JSON (untrusted bytes) and checks its
// shape: a known media type, a public-key verification material, and a
// message signature or a DSSE envelope. Fields it does not know are
// ignored, as sigstore's clients ignore them.
func ParseBundle(b []byte) (*protobundle.Bundle, error) {
	if len(b) > MaxBundleBytes {
		return nil, fmt.Errorf("bundle is %d bytes, over the %d byte limit", len(b), MaxBundleBytes)
	}
	var pb protobundle.Bundle
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &pb); err != nil {
		return nil, fmt.Errorf("bundle: not a sigstore bundle: %v", err)
	}
	if !bundleMediaTypes[pb.GetMediaType()] {
		return nil, fmt.Errorf("bundle: mediaType %q, want %q", pb.GetMediaType(), BundleMediaType)
	}
	vm := pb.GetVerificationMaterial()
	switch {
	case vm == nil:
		return nil, errors.New("bundle: no verificationMaterial")
	case vm.GetPublicKey() == nil:
		return nil, errors.New("bundle: signed with a certificate (keyless signing), not a key: only trusted_keys are checked")
	}
	switch c := pb.GetContent().(type) {
	case *protobundle.Bundle_MessageSignature:
		ms := c.MessageSignature
		if ms == nil || len(ms.GetSignature()) == 0 {
			return nil, errors.New("bundle: messageSignature has no signature")
		}
	case *protobundle.Bundle_DsseEnvelope:
		env := c.DsseEnvelope
		if env == nil || len(env.GetSignatures()) == 0 {
			return nil, errors.New("bundle: dsseEnvelope has no signature")
		}
	default:
		return nil, errors.New("bundle: neither a messageSignature nor a dsseEnvelope")
	}
	return &pb, nil
}

// statement is the part of an in-toto statement read: its subjects.
type statement struct {
	Type    string `json:"_type"`
	Subject []struct {
		Name   string            `json:"name"`
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
}

// verifyBundle checks that the bundle b signs the artifact digest with
// one of keys (tried in the order of names), and returns that key's name.
func verifyBundle(b []byte, digest string, keys map[string]*ecdsa.PublicKey, names []string) (string, error) {
	pb, err := ParseBundle(b)
	if err != nil {
		return "", err
	}
	want, _ := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
	var sum []byte
	var sigs [][]byte
	switch c := pb.GetContent().(type) {
	case *protobundle.Bundle_MessageSignature:
		md := c.MessageSignature.GetMessageDigest()
		if md == nil || md.GetAlgorithm() != protocommon.HashAlgorithm_SHA2_256 {
			return "", errors.New("bundle: messageDigest is not SHA2_256")
		}
		if !bytes.Equal(md.GetDigest(), want) {
			return "", fmt.Errorf("bundle: signs sha256:%s, not this artifact (%s)", hex.EncodeToString(md.GetDigest()), digest)
		}
		sum = want
		sigs = [][]byte{c.MessageSignature.GetSignature()}
	case *protobundle.Bundle_DsseEnvelope:
		env := c.DsseEnvelope
		if env.GetPayloadType() != InTotoPayloadType {
			return "", fmt.Errorf("bundle: DSSE payloadType %q, want %q", env.GetPayloadType(), InTotoPayloadType)
		}
		var st statement
		if err := json.Unmarshal(env.GetPayload(), &st); err != nil {
			return "", fmt.Errorf("bundle: DSSE payload is not an in-toto statement: %v", err)
		}
		if !strings.HasPrefix(st.Type, "https://in-toto.io/Statement/") {
			return "", fmt.Errorf("bundle: DSSE payload _type %q is not an in-toto statement", st.Type)
		}
		hexWant := hex.EncodeToString(want)
		found := false
		for _, s := range st.Subject {
			if s.Digest["sha256"] == hexWant {
				found = true
			}
		}
		if !found {
			return "", fmt.Errorf("bundle: the in-toto statement names no subject with this artifact's digest (%s)", digest)
		}
		pae := sha256.Sum256(dsse.PAE(env.GetPayloadType(), env.GetPayload()))
		sum = pae[:]
		for i, s := range env.GetSignatures() {
			if i == maxSignatures {
				break
			}
			sigs = append(sigs, s.GetSig())
		}
	}
	for _, sig := range sigs {
		if len(sig) > 256 {
			continue
		}
		for _, n := range names {
			v, err := signature.LoadECDSAVerifier(keys[n], crypto.SHA256)
			if err != nil {
				continue
			}
			if v.VerifySignature(bytes.NewReader(sig), nil, options.WithDigest(sum)) == nil {
				return n, nil
			}
		}
	}
	return "", errors.New("bundle: made by no trusted key")
}
