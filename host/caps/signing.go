package caps

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// ParsePublicKey reads a trusted key: an ECDSA P-256 public key as PKIX
// PEM ("-----BEGIN PUBLIC KEY-----", as cosign and aiod plugin keygen
// write it) or as the base64 of its DER on one line.
func ParsePublicKey(s string) (*ecdsa.PublicKey, error) {
	s = strings.TrimSpace(s)
	var der []byte
	if strings.HasPrefix(s, "-----BEGIN") {
		blk, rest := pem.Decode([]byte(s))
		if blk == nil || blk.Type != "PUBLIC KEY" || strings.TrimSpace(string(rest)) != "" {
			return nil, errors.New(`want one PEM "PUBLIC KEY" block`)
		}
		der = blk.Bytes
	} else {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, errors.New("neither PEM nor base64 of a PKIX public key")
		}
		der = b
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, err
	}
	pk, ok := k.(*ecdsa.PublicKey)
	if !ok || pk.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 public key")
	}
	return pk, nil
}

// parseKeys parses TrustedKeys into Keys.
func (p *Policy) parseKeys() error {
	if p.RequireSignatures && len(p.TrustedKeys) == 0 {
		return errors.New("require_signatures needs trusted_keys (aiod plugin keygen prints one)")
	}
	if len(p.TrustedKeys) == 0 {
		return nil
	}
	p.Keys = make(map[string]*ecdsa.PublicKey, len(p.TrustedKeys))
	for name, s := range p.TrustedKeys {
		k, err := ParsePublicKey(s)
		if err != nil {
			return fmt.Errorf("trusted_keys %s: %w", name, err)
		}
		p.Keys[name] = k
	}
	return nil
}

// SignaturesRequired reports whether a plugin from the plugins directory
// or a registry must carry a signature verifying with one of Keys:
// RequireSignatures, or lockdown with trusted keys.
func (p *Policy) SignaturesRequired(lockdown bool) bool {
	return p != nil && (p.RequireSignatures || lockdown && len(p.Keys) > 0)
}
