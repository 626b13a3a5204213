package author

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/sdk/abi"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Policy is the operator policy; nil is no policy file (deny by
	// default). PolicyName names it in the reasons.
	Policy     *caps.Policy
	PolicyName string
	// Env resolves scope paths ($SANDBOX, $HOME, ...); zero: this
	// process's home and temporary directories.
	Env caps.Env
	// Builtins are the built-in plugins (their tool names win a clash).
	Builtins fs.FS
	Pack     host.PackOptions
}

// FamilyVerdict is what the policy does with one requested family.
type FamilyVerdict struct {
	Family  abi.Family `json:"family"`
	Granted bool       `json:"granted"`
	// Detail is the grant's scope when granted, Why the reason when not.
	Detail string `json:"detail,omitempty"`
	Why    string `json:"why,omitempty"`
}

// Verdict is what a host with the policy would do with a package.
type Verdict struct {
	Plugin   string          `json:"plugin"`
	Loads    bool            `json:"loads"`
	Families []FamilyVerdict `json:"families"`
	// Refused are the reasons the host would refuse to load the package;
	// Warnings what it would load but not as asked (a tool left out).
	Refused  []string `json:"refused"`
	Warnings []string `json:"warnings"`
	Limits   Limits   `json:"limits"`
	Report   *Report  `json:"report"`
	// SignedBy names the policy's trusted key whose signature of the
	// package's OCI artifact verifies (spec/oci.md §3).
	SignedBy string `json:"signed_by,omitempty"`
}

// Limits are the effective per-call limits.
type Limits struct {
	TimeoutMs      int64 `json:"timeout_ms"`
	MemoryMiB      int   `json:"memory_mib"`
	MaxResultBytes int64 `json:"max_result_bytes"`
	MaxInstances   int   `json:"max_instances"`
	Fuel           int64 `json:"fuel,omitempty"`
}

// Verify reads the package in dir and reports what the policy grants and
// refuses, and why: a family requested but not allowed, an import outside
// the grant, a module that does not match its pinned digest, a tool whose
// name a built-in already has.
func Verify(ctx context.Context, dir string, o VerifyOptions) (*Verdict, error) {
	r, err := Inspect(ctx, dir, o.Pack)
	if err != nil {
		return nil, err
	}
	if r.Manifest == nil || r.Pinned == "" {
		return nil, fmt.Errorf("%s: not a plugin package (verify reads a directory with manifest.json; `aiod plugin build` makes one)", dir)
	}
	m := r.Manifest
	v := &Verdict{Plugin: m.Name, Report: r, Refused: append([]string{}, r.Problems...), Warnings: []string{}}
	policy := o.Policy
	pname := o.PolicyName
	if policy == nil {
		policy = &caps.Policy{}
		pname = "no policy"
	}
	env := o.Env
	if env == (caps.Env{}) {
		home, _ := os.UserHomeDir()
		env = caps.Env{Home: home, Tmp: os.TempDir()}
	}
	g := policy.Allow(m, env)
	entry, hasEntry := policy.Plugins[m.Name]
	for _, f := range abi.Families {
		if !m.Capabilities.Has(f) {
			continue
		}
		fv := FamilyVerdict{Family: f, Granted: g.Has(f)}
		switch {
		case fv.Granted:
			fv.Detail = grantDetail(g, f)
		case hasEntry && !entry.Has(f):
			fv.Why = fmt.Sprintf("%s: the entry for plugin %s does not allow %s", pname, m.Name, f)
		case !hasEntry && policy.Default == nil:
			fv.Why = fmt.Sprintf("%s has no entry for plugin %s and no default: deny by default", pname, m.Name)
		case !hasEntry && !policy.Default.Has(f):
			fv.Why = fmt.Sprintf("%s: its default (plugin %s has no entry) does not allow %s", pname, m.Name, f)
		default:
			fv.Why = fmt.Sprintf("%s allows %s, but nothing of what the manifest asks for (scopes do not intersect)", pname, f)
		}
		v.Families = append(v.Families, fv)
	}
	if r.Declared == "" || r.Declared == "reactor" || r.Declared == "command" {
		for _, im := range r.Imports {
			switch {
			case im.Module == "wasi_snapshot_preview1" || im.Module == abi.ModuleCore:
			case strings.HasPrefix(im.Module, abi.ModulePrefix):
				f := abi.Family(strings.TrimPrefix(im.Module, abi.ModulePrefix))
				if !g.Has(f) {
					v.Refused = append(v.Refused, fmt.Sprintf("plugin %s imports %s.%s, but capability %q is not granted", m.Name, im.Module, im.Name, f))
				}
			default:
				v.Refused = append(v.Refused, fmt.Sprintf("plugin %s imports %s.%s: module %q is neither WASI nor aiod", m.Name, im.Module, im.Name, im.Module))
			}
		}
	}
	if o.Builtins != nil {
		taken, err := builtinTools(o.Builtins)
		if err != nil {
			return nil, err
		}
		for _, t := range m.Tools {
			if p, ok := taken[t.Name]; ok {
				v.Warnings = append(v.Warnings, fmt.Sprintf("tool %s: the built-in plugin %s has that name and keeps it; this tool would not be listed", t.Name, p))
			}
		}
	}
	if len(policy.Keys) > 0 {
		v.signature(dir, m.Name, r.SHA256, policy)
	}
	v.Limits = Limits{TimeoutMs: g.Timeout.Milliseconds(), MemoryMiB: int(g.MemoryPages / 16), MaxResultBytes: g.MaxResultBytes,
		MaxInstances: g.MaxInstances, Fuel: g.Fuel}
	v.Loads = len(v.Refused) == 0
	return v, nil
}

// grantDetail describes the scope granted for f.
func grantDetail(g *caps.Grant, f abi.Family) string {
	switch f {
	case abi.FamilyFiles:
		var s []string
		for _, r := range g.FileRoots {
			mode := "ro"
			if r.Writable {
				mode = "rw"
			}
			s = append(s, r.Path+" ("+mode+")")
		}
		return strings.Join(s, ", ")
	case abi.FamilyProcess:
		return fmt.Sprintf("commands %v in %v, shell %v", g.Commands, g.CwdRoots, g.Shell)
	case abi.FamilyState:
		return fmt.Sprintf("max_bytes %d", g.StateMaxBytes)
	case abi.FamilyCDP:
		return fmt.Sprintf("methods %v, new_targets %v", g.CDPMethods, g.CDPNewTargets)
	case abi.FamilyUpstream:
		return fmt.Sprintf("servers %v", g.UpstreamServers)
	}
	return ""
}

// builtinTools maps each built-in tool name to its plugin.
func builtinTools(b fs.FS) (map[string]string, error) {
	out := map[string]string{}
	files, err := fs.Glob(b, "*/manifest.json")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := fs.ReadFile(b, f)
		if err != nil {
			return nil, err
		}
		m, err := caps.ParseManifest(data)
		if err != nil {
			return nil, fmt.Errorf("built-in %s: %w", path.Dir(f), err)
		}
		for _, t := range m.Tools {
			out[t.Name] = m.Name
		}
	}
	return out, nil
}

// signature checks the package's signatures against the policy's trusted
// keys, as the host does at load: a refusal when the policy requires
// signatures, else a warning.
func (v *Verdict) signature(dir, name, moduleSHA256 string, policy *caps.Policy) {
	read := func(f string, max int64) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err == nil && int64(len(b)) > max {
			err = fmt.Errorf("%s is over %d bytes", f, max)
		}
		return b, err
	}
	mj, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var art, sigs []byte
	if err == nil {
		art, err = read(oci.ArtifactFile, oci.MaxArtifactBytes)
	}
	if err == nil {
		sigs, err = read(oci.SignaturesFile, oci.MaxSignaturesFileBytes)
	}
	if err == nil {
		v.SignedBy, err = oci.VerifyPackage(art, sigs, mj, moduleSHA256, policy.Keys)
	}
	switch {
	case err == nil:
	case policy.RequireSignatures:
		v.Refused = append(v.Refused, fmt.Sprintf("plugin %s: signature required: %v", name, err))
	default:
		v.Warnings = append(v.Warnings, fmt.Sprintf("plugin %s: %v (refused in lockdown, or with require_signatures)", name, err))
	}
}
