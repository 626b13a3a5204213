// Package ociplugins fetches the plugins the policy names by OCI
// reference (spec/oci.md §2) into the plugin cache, at start and at every
// reload, and hands them to the registry as package sources.
package ociplugins

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci/ocireg"
	"github.com/aiodhq/aiod/host/plugin"
)

// Fetcher fetches a policy's OCI plugins.
type Fetcher struct {
	// Cache is the plugin cache (--plugin-cache); "" for the default,
	// <user cache dir>/aiod/plugins.
	Cache string
	// Client reaches the registries (--registry-auth).
	Client ocireg.Client
	Log    *slog.Logger
}

// fetchTimeout bounds the fetch of one plugin.
const fetchTimeout = 2 * time.Minute

// Remotes fetches each plugin p names by OCI reference (a cached one is
// not fetched again; its signatures are read again when the policy has
// trusted keys) and returns them for the registry. A fetch that fails is
// logged and given to the registry as the plugin's load error, so that a
// version already serving keeps serving. Not safe for concurrent use (the
// host calls it under its reload lock).
func (f *Fetcher) Remotes(ctx context.Context, p *caps.Policy) []plugin.Remote {
	if len(p.OCI) == 0 {
		return nil
	}
	log := f.Log
	if log == nil {
		log = slog.Default()
	}
	if f.Cache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		f.Cache = filepath.Join(d, "aiod", "plugins")
	}
	names := make([]string, 0, len(p.OCI))
	for n := range p.OCI {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []plugin.Remote
	for _, name := range names {
		ref := p.OCI[name]
		rm := plugin.Remote{Name: name, Where: "oci://" + ref}
		if _, r, err := ocireg.Open(ref); err == nil {
			rm.Where = "oci://" + r.Registry + "/" + r.Repository
		}
		fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		err := os.MkdirAll(f.Cache, 0o700)
		var warn error
		if err == nil {
			rm.Dir, warn, err = f.Client.Fetch(fctx, ref, f.Cache, len(p.Keys) > 0)
		}
		cancel()
		if warn != nil {
			log.Warn("plugin fetch", "plugin", name, "ref", ref, "warning", warn)
		}
		if err != nil {
			log.Error("plugin fetch failed; a version of it already serving keeps serving", "plugin", name, "ref", ref, "err", err)
			rm.Err = fmt.Errorf("fetch %s: %w", ref, err)
		}
		out = append(out, rm)
	}
	return out
}
