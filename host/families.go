package host

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/aiodhq/aiod/host/browser"
	"github.com/aiodhq/aiod/host/fsroot"
	"github.com/aiodhq/aiod/host/hostfn/cdp"
	"github.com/aiodhq/aiod/host/hostfn/extism"
	"github.com/aiodhq/aiod/host/hostfn/files"
	"github.com/aiodhq/aiod/host/hostfn/process"
	"github.com/aiodhq/aiod/host/hostfn/state"
	"github.com/aiodhq/aiod/host/lockdown"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/host/store"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	upstreamfn "github.com/aiodhq/aiod/host/hostfn/upstream"
	"github.com/aiodhq/aiod/host/upstream"
	"github.com/aiodhq/aiod/sdk/abi"
)

// families owns the host-side state behind the gated host function
// families (open roots, shell sessions, plugin state) and hands out the
// families a grant links.
type families struct {
	log   *slog.Logger
	files *files.Family
	procs *proc.Manager
	proc  hostfn.Family
	state hostfn.Family
	cdp   *cdp.Family
	ups   hostfn.Family
	once  sync.Once
}

// newFamilies makes the families' state; br is the host's browser, ups
// its upstream set (nil without upstream servers), st where plugin state
// lives and lock its lockdown
// (nil without), whose sandbox also shows the paths extraRO gives (nil:
// none) read-only.
func newFamilies(log *slog.Logger, br *browser.Browser, ups *upstream.Set, st store.Store, lock *lockdown.Lockdown, extraRO func() []string) *families {
	pc := proc.Config{BaseEnv: baseEnv(os.Environ()), Logger: log}
	fs := files.New(fsroot.Options{})
	if lock != nil {
		pc = lock.ProcConfig(pc)
		pc.Sandbox.Extra = extraRO
		fs.SetOwnerDirs(lock.FileDirs)
	}
	m := proc.New(pc)
	return &families{
		log:   log,
		files: fs,
		procs: m,
		proc:  process.New(m),
		state: state.New(st),
		cdp:   cdp.New(br),
		ups:   upstreamfn.New(ups),
	}
}

// baseEnv is what every program the host runs starts from: the safe
// variables of proc.SafeBaseEnv, plus AIO_SKILLS_PATH (where
// sandbox_load_skill finds skills) and AIOD_VERSION (the daemon's semantic
// version, Version, without the commit: what sandbox_get_context reports).
func baseEnv(environ []string) []string {
	env := proc.SafeBaseEnv(environ)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "AIO_SKILLS_PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "AIOD_VERSION="+Version)
}

// familyTable is every gated family this host implements, in
// abi.Families order: adding a family is one entry here (its name and how
// it is made from the host's state) besides its own package. A family the
// manifest format knows but that has no entry is never
// linked, is refused at load as not implemented, and is reported absent.
var familyTable = []struct {
	name abi.Family
	get  func(*families) hostfn.Family
}{
	{abi.FamilyFiles, func(f *families) hostfn.Family { return f.files }},
	{abi.FamilyProcess, func(f *families) hostfn.Family { return f.proc }},
	{abi.FamilyState, func(f *families) hostfn.Family { return f.state }},
	{abi.FamilyCDP, func(f *families) hostfn.Family { return f.cdp }},
	{abi.FamilyUpstream, func(f *families) hostfn.Family { return f.ups }},
	// Extism's http_request (extism:host/env) for form "extism" plugins;
	// stateless, so one value serves every plugin
	{abi.FamilyHTTP, func(*families) hostfn.Family { return extismHTTP }},
}

var extismHTTP = extism.HTTP(nil)

// implemented reports whether this host implements family name.
func implemented(name abi.Family) bool {
	for _, e := range familyTable {
		if e.name == name {
			return true
		}
	}
	return false
}

// forGrant returns the gated families granted by g (core is added by the
// registry).
func (f *families) forGrant(g *caps.Grant) []hostfn.Family {
	var out []hostfn.Family
	for _, e := range familyTable {
		if g.Has(e.name) {
			out = append(out, e.get(f))
		}
	}
	return out
}

// Close ends processes and sessions and closes open roots. Idempotent.
func (f *families) Close() error {
	var err error
	f.once.Do(func() {
		err = errors.Join(f.procs.Close(), f.files.Close())
	})
	return err
}

// builtinPolicy is the policy applied to built-in plugins (and only to
// them, whatever a plugin in --plugins-dir calls itself): each gets what it
// requests within $SANDBOX, unless the operator's policy has an entry for
// it, which then replaces the default.
func builtinPolicy(p *caps.Policy) *caps.Policy {
	np := *p
	np.Default = &abi.Capabilities{
		Files:   &abi.FilesScope{Paths: []abi.PathScope{{Path: "$SANDBOX", Mode: abi.ReadWrite}}},
		Process: &abi.ProcessScope{Commands: []string{"*"}, Cwd: []string{"$SANDBOX"}, Shell: true, Tools: true},
		State:   &abi.StateScope{MaxBytes: 64 << 20},
		// Any CDP method a built-in names (the sensitive ones only when
		// named, cdp.Family); new targets for one that asks (the
		// page tools' tabs).
		CDP: &abi.CDPScope{Methods: []string{"*"}, NewTargets: true},
	}
	return &np
}

// AllFamilies returns every gated family (for describing a module with
// stubs; their functions are never run that way).
func AllFamilies() []hostfn.Family {
	f := &families{files: files.New(fsroot.Options{}), proc: process.New(nil), state: state.New(nil), cdp: cdp.New(nil), ups: upstreamfn.New(nil)}
	out := make([]hostfn.Family, len(familyTable))
	for i, e := range familyTable {
		out[i] = e.get(f)
	}
	return out
}
