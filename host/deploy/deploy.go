// Package deploy writes what runs several aiod replicas behind a stock
// load balancer (`aiod deploy`): a self-contained nginx configuration, or
// the Kubernetes objects. Both serve the two protocol eras: the
// 2026-07-28 era is stateless and goes round robin (its MRTR
// requestState opens on any replica that shares the state key file);
// a legacy session's requests go to the replica that created it, which
// tags the session id (aiod start --replica-id): the load balancer routes
// on the Mcp-Session-Id up to its first ".". An initialize has no id yet
// and goes round robin like everything else without one.
package deploy

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aiodhq/aiod/host/mcp"
)

// StateKeyFile is the name of the state key file the generators write
// (mcp.ParseStateKeys; aiod start --state-key-file).
const StateKeyFile = "state.key"

// NewStateKey returns a fresh state key file's content: a comment and one
// key of 32 bytes read from r (crypto/rand.Reader when nil).
func NewStateKey(r io.Reader) ([]byte, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, mcp.MinStateKeyBytes)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	return []byte("# aiod state keys (aiod start --state-key-file): the first seals, every key opens; rotate by adding\n" +
		"# the new key below, reloading every replica, then moving it to the top and reloading again\n" +
		base64.StdEncoding.EncodeToString(b) + "\n"), nil
}

// ensureStateKey writes dir/state.key unless it exists (a second run keeps
// the key the replicas already hold) and returns its content.
func ensureStateKey(dir string, r io.Reader) ([]byte, error) {
	path := filepath.Join(dir, StateKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		if _, err := mcp.ParseStateKeys(b); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return b, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("state key: %w", err)
	}
	b, err := NewStateKey(r)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	return b, nil
}

// APIKeyFile is the name of the API key file `aiod deploy kubernetes`
// writes: the key every client sends (aiod start --api-key).
const APIKeyFile = "api.key"

// ensureAPIKey writes dir/api.key, a fresh key in the form of `aiod key
// new` ("aiod_" and 32 random bytes, base64url), unless it exists, and
// returns the key.
func ensureAPIKey(dir string, r io.Reader) (string, error) {
	path := filepath.Join(dir, APIKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		k := strings.TrimSpace(string(b))
		if k == "" || strings.ContainsAny(k, " \t\n") {
			return "", fmt.Errorf("%s: want one key on one line", path)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("api key: %w", err)
	}
	if r == nil {
		r = rand.Reader
	}
	var b [32]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("api key: %w", err)
	}
	k := "aiod_" + base64.RawURLEncoding.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(k+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("api key: %w", err)
	}
	return k, nil
}

// checkHostPort checks a HOST:PORT with a port in 1-65535.
func checkHostPort(what, hp string) error {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("%s %q: want HOST:PORT: %w", what, hp, err)
	}
	if h == "" {
		return fmt.Errorf("%s %q: no host", what, hp)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%s %q: port not in 1-65535", what, hp)
	}
	return nil
}
