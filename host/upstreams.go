package host

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/upstream"
)

// stdioOptions are the command servers' settings: their directories under
// --data-dir when it is given, and pins required in lockdown.
func stdioOptions(cfg Config) func(*upstream.Options) {
	return func(o *upstream.Options) {
		if cfg.DataDir != "" {
			o.StdioDir = filepath.Join(cfg.DataDir, "upstreams")
		}
		o.RequirePins = cfg.Lockdown
	}
}

// withPolicyUpstreams appends the servers the policy names (its
// "upstreams", spec/upstream.md) to those of EXTRA_MCP_SERVERS, in the
// policy's order: their headers' ${VAR} are taken from aiod's environment
// now. A name in both is an error.
func withPolicyUpstreams(servers []upstream.Server, p *caps.Policy, lookup func(string) (string, bool), lockdown bool) ([]upstream.Server, error) {
	if p == nil || len(p.Upstreams) == 0 {
		return servers, nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := append([]upstream.Server(nil), servers...)
	for _, e := range p.Upstreams {
		for _, s := range servers {
			if s.Name == e.Name {
				return nil, fmt.Errorf("upstream MCP server %q is named both by EXTRA_MCP_SERVERS (--mcp-servers) and by the policy's upstreams", e.Name)
			}
		}
		if lockdown && e.Stdio() && e.SHA256 == "" {
			return nil, fmt.Errorf("upstream MCP server %q: lockdown runs only command servers pinned by sha256 (give its \"sha256\")", e.Name)
		}
		s, err := upstream.FromPolicy(e, lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ReviewUpstreams is what `aiod upstream review` reviews: the servers of
// EXTRA_MCP_SERVERS and those of the policy file's "upstreams" (none
// without a file), and the options their set needs (the command servers'
// directories under dataDir).
func ReviewUpstreams(servers []upstream.Server, policyFile, dataDir string) ([]upstream.Server, func(*upstream.Options), error) {
	p := &caps.Policy{}
	if policyFile != "" {
		var err error
		if p, err = readPolicy(policyFile); err != nil {
			return nil, nil, err
		}
	}
	out, err := withPolicyUpstreams(servers, p, nil, false)
	if err != nil {
		return nil, nil, err
	}
	return out, stdioOptions(Config{LockdownConfig: LockdownConfig{DataDir: dataDir}}), nil
}

// refuseRemovedUpstreams refuses to every tenant of a reloaded policy p the
// servers of the policy registered at start (started) that p no longer
// names: the running set keeps them until the next start, and their entry's
// "tenants" went with the entry.
func refuseRemovedUpstreams(p *caps.Policy, started []string) {
	var gone []string
	for _, name := range started {
		if !slices.ContainsFunc(p.Upstreams, func(u caps.UpstreamServer) bool { return u.Name == name }) {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		p.RefuseUpstreams(gone)
	}
}

// policyUpstreamNames are the names of the policy's servers.
func policyUpstreamNames(p *caps.Policy) []string {
	var out []string
	for _, u := range p.Upstreams {
		out = append(out, u.Name)
	}
	return out
}
