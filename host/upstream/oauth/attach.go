package oauth

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/upstream"
)

// TokenDir is where the logins' sealed tokens are kept:
// <dataDir>/upstream-oauth, or <user config dir>/aiod/upstream-oauth
// without a data directory.
func TokenDir(dataDir string) (string, error) {
	if dataDir != "" {
		return filepath.Join(dataDir, "upstream-oauth"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no --data-dir and no user config directory: %w", err)
	}
	return filepath.Join(d, "aiod", "upstream-oauth"), nil
}

// OpenStore opens the token store of dataDir with the key file.
func OpenStore(dataDir, keyFile string) (*Store, error) {
	key, err := LoadKey(keyFile)
	if err != nil {
		return nil, err
	}
	dir, err := TokenDir(dataDir)
	if err != nil {
		return nil, err
	}
	return NewStore(dir, key)
}

// Attach sets the Auth hook of each server whose policy entry has
// "oauth". The key file is needed (and read now) only when one of them
// uses the authorization code grant.
func Attach(servers []upstream.Server, p *caps.Policy, dataDir, keyFile string, log *slog.Logger) error {
	if p == nil {
		return nil
	}
	var store *Store
	for _, e := range p.Upstreams {
		if e.OAuth == nil {
			continue
		}
		i := -1
		for j := range servers {
			if servers[j].Name == e.Name && servers[j].FromPolicy {
				i = j
			}
		}
		if i < 0 {
			continue
		}
		if !e.OAuth.ClientCredentials() && store == nil {
			var err error
			if store, err = OpenStore(dataDir, keyFile); err != nil {
				return fmt.Errorf("upstream MCP server %q logs in with OAuth: %w", e.Name, err)
			}
		}
		a, err := New(e, servers[i].RootCAs, Options{Store: store, Logger: log})
		if err != nil {
			return err
		}
		servers[i].Auth = a.Wrap
	}
	return nil
}
