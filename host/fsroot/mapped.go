package fsroot

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/pathx"
)

// NewMapped is New for roots that a plugin sees at one place and that are
// stored at another: dirs maps a directory as plugins see it (/workspace)
// to the host directory that holds it (<data>/tenants/alice/workspace).
// Paths given to and returned by the Set stay the plugin's; only the
// directories opened are the host's. A root inside a mapped directory is
// opened at the matching host path; a root outside every mapped directory
// is left out, so a Set for one tenant reaches nothing but that tenant's
// directories.
func NewMapped(roots []caps.Root, dirs map[string]string, opts Options) (*Set, error) {
	var kept []caps.Root
	var hosts []string
	for _, r := range roots {
		if r.Path == "" || !filepath.IsAbs(r.Path) {
			return nil, fmt.Errorf("fsroot: root %q is not an absolute path", r.Path)
		}
		p := filepath.Clean(r.Path)
		best := ""
		for shown := range dirs {
			if pathx.Within(p, shown) && len(shown) > len(best) {
				best = shown
			}
		}
		if best == "" {
			continue
		}
		host := dirs[best]
		if !filepath.IsAbs(host) {
			return nil, fmt.Errorf("fsroot: host directory %q of %s is not an absolute path", host, best)
		}
		kept = append(kept, caps.Root{Path: p, Writable: r.Writable})
		hosts = append(hosts, filepath.Join(host, strings.TrimPrefix(p, best)))
	}
	s, err := New(kept, opts)
	if err != nil {
		return nil, err
	}
	for _, r := range s.roots {
		for i, k := range kept {
			if k.Path == r.Path {
				r.dir = hosts[i]
				break
			}
		}
	}
	return s, nil
}
