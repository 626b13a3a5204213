package oci

// Signatures: sigstore bundles (bundle.go), and cosign's older "simple
// signing" payload naming the artifact's digest, signed with ECDSA P-256
// over its SHA-256 (ASN.1, base64), as `cosign sign --key` made them
// before bundles (spec/oci.md §3).

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Media types and annotation of a signature.
const (
	// SignatureArtifactType is the artifactType of a signature's
	// manifest, found among the artifact's referrers.
	SignatureArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// SimpleSigningType is the layer holding the signed payload.
	SimpleSigningType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation carries the base64 signature on that layer.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// payloadType is the payload's critical.type.
	payloadType = "cosign container image signature"
	// maxSignatures bounds how many signatures of one artifact are read.
	maxSignatures = 16
	// MaxPayloadBytes bounds a signed payload.
	MaxPayloadBytes = 16 << 10
	// MaxSignaturesFileBytes bounds a package's signatures file: as many
	// signatures as are read, each a bundle at its bound (JSON may escape
	// what it holds) with room to spare.
	MaxSignaturesFileBytes = (maxSignatures + 1) * (2*MaxBundleBytes + 1024)
)

// ErrUnsigned is the refusal of a package that carries no signature.
var ErrUnsigned = errors.New("unsigned: no signature of its artifact")

// ErrBadSignature is the refusal of a package none of whose signatures
// verifies with a trusted key.
var ErrBadSignature = errors.New("no signature verifies with a trusted key")

// Signature is one signature of an artifact: a sigstore bundle (its JSON,
// bundle.go), or cosign's simple signing: the payload, and the signature
// of its SHA-256 (base64 of the ASN.1 ECDSA signature).
type Signature struct {
	Bundle    json.RawMessage `json:"bundle,omitempty"`
	Payload   []byte          `json:"payload,omitempty"` // base64 in JSON
	Signature string          `json:"signature,omitempty"`
}

type payload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// Payload is the simple-signing payload for the artifact digest in the
// repository repo (its docker-reference).
func Payload(repo, digest string) []byte {
	var p payload
	p.Critical.Identity.DockerReference = repo
	p.Critical.Image.DockerManifestDigest = digest
	p.Critical.Type = payloadType
	b, _ := json.Marshal(p)
	return b
}

// Sign signs payload with key.
func Sign(key *ecdsa.PrivateKey, payload []byte) (Signature, error) {
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		return Signature{}, err
	}
	return Signature{Payload: payload, Signature: base64.StdEncoding.EncodeToString(sig)}, nil
}

// Verify checks that one of sigs signs digest with one of keys, and
// returns that key's name; otherwise ErrUnsigned, or ErrBadSignature
// wrapped with why each signature failed.
func Verify(sigs []Signature, digest string, keys map[string]*ecdsa.PublicKey) (string, error) {
	if len(sigs) == 0 {
		return "", ErrUnsigned
	}
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	slices.Sort(names)
	var why []string
	for i, s := range sigs {
		if i == maxSignatures {
			why = append(why, fmt.Sprintf("%d more signatures not read", len(sigs)-i))
			break
		}
		if len(s.Bundle) > 0 {
			n, err := verifyBundle(s.Bundle, digest, keys, names)
			if err == nil {
				return n, nil
			}
			why = append(why, fmt.Sprintf("signature %d: %v", i+1, err))
			continue
		}
		if err := checkPayload(s.Payload, digest); err != nil {
			why = append(why, fmt.Sprintf("signature %d: %v", i+1, err))
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(s.Signature)
		if err != nil || len(raw) > 256 {
			why = append(why, fmt.Sprintf("signature %d: not base64 of an ECDSA signature", i+1))
			continue
		}
		sum := sha256.Sum256(s.Payload)
		for _, n := range names {
			if ecdsa.VerifyASN1(keys[n], sum[:], raw) {
				return n, nil
			}
		}
		why = append(why, fmt.Sprintf("signature %d: made by no trusted key", i+1))
	}
	return "", fmt.Errorf("%w (%d signatures: %s)", ErrBadSignature, len(sigs), joinWhy(why))
}

func joinWhy(w []string) string {
	var b bytes.Buffer
	for i, s := range w {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// checkPayload checks that a payload is a simple-signing payload naming
// digest.
func checkPayload(b []byte, digest string) error {
	if len(b) > MaxPayloadBytes {
		return fmt.Errorf("payload is %d bytes, over the %d byte limit", len(b), MaxPayloadBytes)
	}
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("payload: %v", err)
	}
	if p.Critical.Type != payloadType {
		return fmt.Errorf("payload type %q, want %q", p.Critical.Type, payloadType)
	}
	if p.Critical.Image.DockerManifestDigest != digest {
		return fmt.Errorf("signs %q, not this artifact (%s)", p.Critical.Image.DockerManifestDigest, digest)
	}
	return nil
}

// ParseSignatures reads a package's signatures file (untrusted bytes).
func ParseSignatures(b []byte) ([]Signature, error) {
	if len(b) > MaxSignaturesFileBytes {
		return nil, fmt.Errorf("%s is %d bytes, too large", SignaturesFile, len(b))
	}
	var sigs []Signature
	if err := json.Unmarshal(b, &sigs); err != nil {
		return nil, fmt.Errorf("%s: %w", SignaturesFile, err)
	}
	return sigs, nil
}

// VerifyPackage checks a package directory's files against the trusted
// keys: its artifact record names its manifest.json and module (hex
// sha256), and one of its signatures signs the artifact with one of keys.
// It returns the signing key's name.
func VerifyPackage(artifact, sigs, manifestJSON []byte, moduleSHA256 string, keys map[string]*ecdsa.PublicKey) (string, error) {
	if artifact == nil {
		return "", fmt.Errorf("%w: the package has no %s (it was not pulled from a registry; push it and sign it, then name it by oci reference or pull it)", ErrUnsigned, ArtifactFile)
	}
	a, err := Check(artifact, manifestJSON, moduleSHA256)
	if err != nil {
		return "", err
	}
	var list []Signature
	if sigs != nil {
		if list, err = ParseSignatures(sigs); err != nil {
			return "", err
		}
	}
	signer, err := Verify(list, a.Digest, keys)
	if err != nil {
		return "", fmt.Errorf("artifact %s: %w", a.Digest, err)
	}
	return signer, nil
}

// GenerateKey makes a P-256 key pair and returns the private key as PKCS
// #8 PEM and the public key as PKIX PEM (the PEM forms cosign reads).
func GenerateKey(r io.Reader) (private, public []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), r)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

// ParsePrivateKey reads a P-256 private key, PKCS #8 (or SEC 1) PEM.
func ParsePrivateKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("not a PEM private key")
	}
	var key any
	var err error
	switch blk.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q: want an unencrypted \"PRIVATE KEY\" (aiod plugin keygen)", blk.Type)
	}
	if err != nil {
		return nil, err
	}
	k, ok := key.(*ecdsa.PrivateKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 key")
	}
	return k, nil
}
