package mcp

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"
)

// requestState is what aiod puts in an MRTR InputRequiredResult's
// requestState: the answers collected in earlier rounds, sealed with an
// AEAD under a per-process key (or the replicas' shared keys, statekey.go)
// and bound (as additional data) to the
// principal, the method and a digest of the request's parameters, with a
// short lifetime. The client cannot read, forge or move it to another
// request; a tampered, expired or foreign state is a JSON-RPC error.
type requestState struct {
	// Answers are the inputResponses accepted so far, by key.
	Answers map[string]json.RawMessage `json:"a,omitempty"`
	// Round counts the input_required results issued for this request.
	Round int `json:"r"`
}

// stateVersion prefixes every sealed state so the format can change.
const stateVersion = "s1."

// errBadRequestState is returned for a state that fails to open.
var errBadRequestState = errors.New("invalid requestState")

type stateSealer struct {
	// keys are the AEADs in use: the first seals, any of them opens
	// (statekey.go swaps them on a rotation).
	keys atomic.Pointer[[]cipher.AEAD]
	ttl  time.Duration
	now  func() time.Time
}

func newStateSealer(ttl time.Duration) *stateSealer {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err)
	}
	a, err := newStateAEAD(key)
	if err != nil {
		panic(err)
	}
	s := &stateSealer{ttl: ttl, now: time.Now}
	s.keys.Store(&[]cipher.AEAD{a})
	return s
}

// newStateAEAD is AES-256-GCM under key, with random 96-bit nonces.
func newStateAEAD(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

// binding is the additional data a state is sealed to.
func stateBinding(principal, method string, paramsDigest [32]byte) []byte {
	h := sha256.New()
	h.Write([]byte("aiod-mrtr-v1\x00"))
	h.Write([]byte(principal))
	h.Write([]byte{0})
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write(paramsDigest[:])
	return h.Sum(nil)
}

// seal returns the opaque requestState for st.
func (s *stateSealer) seal(st *requestState, binding []byte) (string, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	plain := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint64(plain, uint64(s.now().Add(s.ttl).Unix()))
	plain = append(plain, body...)
	aead := (*s.keys.Load())[0]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := aead.Seal(nonce, nonce, plain, binding)
	return stateVersion + base64.RawURLEncoding.EncodeToString(out), nil
}

// open verifies and decodes a requestState sealed for binding.
func (s *stateSealer) open(tok string, binding []byte) (*requestState, error) {
	if len(tok) < len(stateVersion) || tok[:len(stateVersion)] != stateVersion || len(tok) > 1<<20 {
		return nil, errBadRequestState
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok[len(stateVersion):])
	if err != nil {
		return nil, errBadRequestState
	}
	var plain []byte
	for _, aead := range *s.keys.Load() {
		ns := aead.NonceSize()
		if len(raw) < ns+aead.Overhead()+8 {
			return nil, errBadRequestState
		}
		if plain, err = aead.Open(nil, raw[:ns], raw[ns:], binding); err == nil {
			break
		}
	}
	if plain == nil {
		return nil, errBadRequestState
	}
	if exp := int64(binary.BigEndian.Uint64(plain)); s.now().Unix() > exp {
		return nil, errors.New("requestState expired")
	}
	var st requestState
	if err := json.Unmarshal(plain[8:], &st); err != nil {
		return nil, errBadRequestState
	}
	return &st, nil
}
