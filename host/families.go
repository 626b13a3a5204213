package host

import (
	"log/slog"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
)

// families owns the host-side state behind the gated host function
// families (shell sessions, plugin state) and hands out the families a
// grant links.
type families struct {
	log *slog.Logger
}

func newFamilies(log *slog.Logger) *families {
	return &families{log: log}
}

// forGrant returns the gated families granted by g (core is added by the
// registry).
func (f *families) forGrant(g *caps.Grant) []hostfn.Family {
	var out []hostfn.Family
	return out
}

// all returns every gated family, for describing modules with stubs.
func (f *families) all() []hostfn.Family {
	return nil
}

// Close ends processes and sessions. Idempotent.
func (f *families) Close() error { return nil }

// builtinPolicy is the policy applied to built-in plugins (and only to
// them, whatever a plugin in --plugins-dir calls itself): each gets what it
// requests within $SANDBOX, unless the operator's policy has an entry for
// it, which then replaces the default.
func builtinPolicy(p *caps.Policy) *caps.Policy {
	np := *p
	np.Default = &caps.Capabilities{
		Files:   &caps.FilesScope{Paths: []caps.PathScope{{Path: "$SANDBOX", Mode: caps.ReadWrite}}},
		Process: &caps.ProcessScope{Commands: []string{"*"}, Cwd: []string{"$SANDBOX"}, Shell: true},
		State:   &caps.StateScope{MaxBytes: 64 << 20},
	}
	return &np
}

// AllFamilies returns every gated family (for describing a module with
// stubs; their functions are never run that way).
func AllFamilies() []hostfn.Family { return newFamilies(slog.Default()).all() }
