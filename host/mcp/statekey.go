package mcp

import (
	"bytes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// The replicas' shared requestState keys (spec/protocol.md, "Replicas"):
// a requestState sealed by one replica opens on any other that reads the
// same key file. The file holds one key a line, base64 of at least
// MinStateKeyBytes random bytes (`openssl rand -base64 32`); blank lines
// and lines starting with # are ignored. The first key seals, every key
// opens: a rotation adds the new key below the current one on every
// replica, then moves it to the top, then drops the old one, reloading
// (SIGHUP) after each step, so no state in flight fails to open.

// MinStateKeyBytes is the shortest key a state key file may hold.
const MinStateKeyBytes = 32

// maxStateKeys bounds the keys of one file: a current key and a few
// previous ones, each tried in turn on every open.
const maxStateKeys = 8

// stateKeyInfo separates the AEAD keys derived from the file's keys from
// any other use of the same bytes.
const stateKeyInfo = "aiod mrtr requestState v1"

// ParseStateKeys reads a state key file's content: its keys, the current
// (sealing) one first.
func ParseStateKeys(b []byte) ([][]byte, error) {
	var keys [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, err := decodeStateKey(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if len(k) < MinStateKeyBytes {
			return nil, fmt.Errorf("line %d: a key of %d bytes; at least %d random bytes are needed (openssl rand -base64 32)", i+1, len(k), MinStateKeyBytes)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key: the file needs one line of base64, at least 32 random bytes (openssl rand -base64 32)")
	}
	if len(keys) > maxStateKeys {
		return nil, fmt.Errorf("%d keys: at most %d (the current one and the previous ones still accepted)", len(keys), maxStateKeys)
	}
	return keys, nil
}

func decodeStateKey(l string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(l); err == nil {
			return k, nil
		}
	}
	return nil, errors.New("not base64 (one key a line, for example the output of openssl rand -base64 32)")
}

// ReadStateKeyFile reads and parses a state key file (--state-key-file).
func ReadStateKeyFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("state key file: %w", err)
	}
	keys, err := ParseStateKeys(b)
	if err != nil {
		return nil, fmt.Errorf("state key file %s: %w", path, err)
	}
	return keys, nil
}

// SetStateKeys replaces the requestState keys (ParseStateKeys): the first
// seals from now on, all of them open. States sealed under a key no
// longer listed stop opening; without a call the server seals under a
// random key of its own, which no other process opens.
func (s *Server) SetStateKeys(keys [][]byte) error {
	if len(keys) == 0 {
		return errors.New("no state key")
	}
	aeads := make([]cipher.AEAD, 0, len(keys))
	for _, k := range keys {
		if len(k) < MinStateKeyBytes {
			return fmt.Errorf("a state key of %d bytes: at least %d are needed", len(k), MinStateKeyBytes)
		}
		dk, err := hkdf.Key(sha256.New, k, nil, stateKeyInfo, 32)
		if err != nil {
			return fmt.Errorf("state key: %w", err)
		}
		a, err := newStateAEAD(dk)
		if err != nil {
			return fmt.Errorf("state key: %w", err)
		}
		aeads = append(aeads, a)
	}
	s.sealer.keys.Store(&aeads)
	return nil
}

// replicaIDPattern is what a replica id may be: the tag a load balancer
// reads back from Mcp-Session-Id, up to its first ".".
var replicaIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// ReplicaTag is the Mcp-Session-Id prefix of the replica id (without the
// "." that ends it): id with every "." and ":" turned into "-", so that
// an IP address reads as Kubernetes DNS names a pod of a headless service
// (10.1.2.3 -> 10-1-2-3). An id that is not 1 to 63 letters, digits, "_"
// and "-" after that is an error.
func ReplicaTag(id string) (string, error) {
	tag := strings.NewReplacer(".", "-", ":", "-").Replace(id)
	if !replicaIDPattern.MatchString(tag) {
		return "", fmt.Errorf("replica id %q: 1 to 63 letters, digits, '_', '-' (or an IP address)", id)
	}
	return tag, nil
}
