package oauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// The tokens of a login are kept in one file per server,
// <dir>/<server>.json.sealed: the JSON of a State sealed with AES-256-GCM
// under the operator's key file (a random 12-byte nonce, then the sealed
// bytes), the server's name as additional data, so a file copied to
// another server's name does not open.

// KeySize is the length of the key the key file holds.
const KeySize = 32

// LoadKey reads the key file: 32 bytes, or 64 hex digits (a trailing
// newline allowed). A file that group or others may read or write, or
// that is not a regular file, is refused.
func LoadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no key file (--upstream-key-file, AIO_UPSTREAM_KEY_FILE): the tokens of upstream logins are kept encrypted with it; make one with `head -c 32 /dev/urandom > FILE && chmod 600 FILE`")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s: mode %04o lets others read it; it must be 0600 (chmod 600 %s)", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if len(b) == KeySize {
		return b, nil
	}
	if s := strings.TrimRight(string(b), "\r\n"); len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("key file %s: want %d bytes or %d hex digits, got %d bytes", path, KeySize, 2*KeySize, len(b))
}

// State is what a login keeps for a server.
type State struct {
	// Resource is the protected resource (RFC 9728 "resource", sent as
	// RFC 8707 "resource" on every token request).
	Resource string `json:"resource"`
	// Issuer and the endpoints of the authorization server (RFC 8414).
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint         string `json:"token_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint,omitempty"`
	// The client: ClientID (and ClientSecret for a confidential one), how
	// it authenticates at the token endpoint, and how it was obtained:
	// "preregistered", "metadata_document" or "dynamic" (RFC 7591; kept for
	// the next login, with the issuer it is registered with).
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	Registration string           `json:"registration"`
	// Scopes asked at the login; Wanted are scopes a 403 insufficient_scope
	// asked for since (the next login asks for them too).
	Scopes []string `json:"scopes,omitempty"`
	Wanted []string `json:"wanted,omitempty"`
	// Token is the access and refresh token (nil: logged out; the client
	// is kept).
	Token *oauth2.Token `json:"token,omitempty"`
	// Saved is when the file was last written.
	Saved time.Time `json:"saved"`
}

// Store keeps the sealed states of a directory.
type Store struct {
	dir  string
	aead cipher.AEAD
}

// NewStore opens dir (created 0700 when missing) with the key.
func NewStore(dir string, key []byte) (*Store, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key: want %d bytes", KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("token directory: %w", err)
	}
	return &Store{dir: dir, aead: aead}, nil
}

func (s *Store) path(server string) string { return filepath.Join(s.dir, server+".json.sealed") }

func aad(server string) []byte { return []byte("aiod upstream oauth v1\x00" + server) }

// Load returns the server's state, or nil (no error) when there is none.
// A file that does not open with the key (another key, tampered with,
// copied from another server) is an error saying so.
func (s *Store) Load(server string) (*State, error) {
	b, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ns := s.aead.NonceSize()
	if len(b) < ns+s.aead.Overhead() {
		return nil, fmt.Errorf("%s: too short to be a sealed token file", s.path(server))
	}
	plain, err := s.aead.Open(nil, b[:ns], b[ns:], aad(server))
	if err != nil {
		return nil, fmt.Errorf("%s does not open with the key file (another key, or the file was altered or belongs to another server)", s.path(server))
	}
	var st State
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(server), err)
	}
	return &st, nil
}

// Save seals st for server and replaces its file atomically (mode 0600).
func (s *Store) Save(server string, st *State) error {
	st.Saved = time.Now().UTC()
	plain, err := json.Marshal(st)
	if err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	out := s.aead.Seal(nonce, nonce, plain, aad(server))
	f, err := os.CreateTemp(s.dir, "."+server+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(out); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), s.path(server))
}

// Remove forgets the server's state (no error when there is none).
func (s *Store) Remove(server string) error {
	if err := os.Remove(s.path(server)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
