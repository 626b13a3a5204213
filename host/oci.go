package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci/ocireg"
	"github.com/aiodhq/aiod/host/plugin"
)

// ociPlugins fetches the plugins the policy names by OCI reference
// (spec/oci.md §2) into the plugin cache, at start and at every reload.
type ociPlugins struct {
	cache    string // Config.PluginCache; "" until first needed (the default)
	lockdown bool
	client   ocireg.Client // Config.RegistryAuth
}

// fetchTimeout bounds the fetch of one plugin.
const fetchTimeout = 2 * time.Minute

// remotes fetches each plugin p names by OCI reference (a cached one is
// not fetched again; its signatures are read again when the policy has
// trusted keys) and returns them for the registry. A fetch that fails is
// logged and given to the registry as the plugin's load error, so that a
// version already serving keeps serving.
func (o *ociPlugins) remotes(ctx context.Context, p *caps.Policy, log interface {
	Warn(string, ...any)
	Error(string, ...any)
}) []plugin.Remote {
	if len(p.OCI) == 0 {
		return nil
	}
	if o.cache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		o.cache = filepath.Join(d, "aiod", "plugins")
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
		err := os.MkdirAll(o.cache, 0o700)
		var warn error
		if err == nil {
			rm.Dir, warn, err = o.client.Fetch(fctx, ref, o.cache, len(p.Keys) > 0)
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
