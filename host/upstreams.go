package host

import (
	"fmt"
	"os"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/upstream"
)

// withPolicyUpstreams appends the servers the policy names (its
// "upstreams", spec/upstream.md) to those of EXTRA_MCP_SERVERS, in the
// policy's order: their headers' ${VAR} are taken from aiod's environment
// now. A name in both is an error.
func withPolicyUpstreams(servers []upstream.Server, p *caps.Policy, lookup func(string) (string, bool)) ([]upstream.Server, error) {
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
		s, err := upstream.FromPolicy(e, lookup)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
