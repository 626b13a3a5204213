package caps

import (
	"fmt"
	"strings"

	"github.com/aiodhq/aiod/sdk/abi"
)

func validateSurface(m *abi.Manifest) error {
	seen := map[string]bool{}
	for i, p := range m.Prompts {
		if !toolNameRE.MatchString(p.Name) {
			return fmt.Errorf("prompt %d: name %q must match %s", i, p.Name, toolNameRE)
		}
		if seen[p.Name] {
			return fmt.Errorf("prompt %q declared twice", p.Name)
		}
		seen[p.Name] = true
		for _, a := range p.Arguments {
			if a.Name == "" {
				return fmt.Errorf("prompt %s: an argument has no name", p.Name)
			}
		}
	}
	uris := map[string]bool{}
	for i, r := range m.Resources {
		if r.URI == "" || r.Name == "" || strings.ContainsAny(r.URI, " \x00\n") {
			return fmt.Errorf("resource %d: uri %q and name %q must be non-empty (uri without spaces)", i, r.URI, r.Name)
		}
		if uris[r.URI] {
			return fmt.Errorf("resource %q declared twice", r.URI)
		}
		uris[r.URI] = true
	}
	for i, t := range m.ResourceTemplates {
		if t.URITemplate == "" || t.Name == "" || !strings.Contains(t.URITemplate, "{") {
			return fmt.Errorf("resource template %d: uriTemplate %q needs a {variable} and a name", i, t.URITemplate)
		}
		if strings.Count(t.URITemplate, "{") != strings.Count(t.URITemplate, "}") {
			return fmt.Errorf("resource template %q: unbalanced braces", t.URITemplate)
		}
	}
	return nil
}
