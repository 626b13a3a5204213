// Package lockdown is aiod's locked-down multi-tenant mode
// (spec/lockdown.md): every process under bubblewrap, each tenant in its
// own /workspace and /tmp, plugins pinned by sha256, upstream tools
// pinned; a start that lacks any of it is refused. It is built from its
// own Config and the few paths and facts of the host it checks (Inputs).
package lockdown

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/pathx"
	"github.com/aiodhq/aiod/host/plugin"
	"github.com/aiodhq/aiod/host/proc"
)

// Config is the lockdown section of the host's configuration.
type Config struct {
	// Lockdown turns the mode on (--lockdown, AIO_LOCKDOWN).
	Lockdown bool
	// DataDir holds the tenants' directories,
	// <DataDir>/tenants/<owner>/{workspace,tmp} (--data-dir, AIO_DATA_DIR);
	// required in lockdown.
	DataDir string
}

// Inputs are what a locked-down start is checked against: the policy,
// aiod's own paths (which no tenant directory may overlap) and the
// settings lockdown refuses.
type Inputs struct {
	Policy *caps.Policy
	// CacheDir is the compile cache in use ("" none).
	CacheDir   string
	PluginsDir string
	PolicyFile string
	// PinFile is the upstream pin file; "" is <data dir>/upstream-pins.json
	// (Lockdown.PinFile).
	PinFile  string
	AuditLog string
	// Workspace is --workspace, which lockdown refuses.
	Workspace string
	// Authenticated: requests must authenticate (an API key, a tenant key
	// in the policy, or OAuth).
	Authenticated        bool
	AllowUnauthenticated bool
}

// Lockdown limits (seed 003's sandbox): per process 120 s of wall clock
// (the process family's longest timeout), and per unit 256 processes and
// 4 GiB of memory; output is capped at 64 KiB. The per-process CPU, address
// space and file size limits are proc.Sandbox's defaults.
const (
	MaxTimeout = 120 * time.Second
	MaxProcs   = 256
	MaxMemory  = 4 << 30
	MaxOutput  = 64 << 10
)

// The directories a tenant's programs and file tools see.
const (
	sandboxWorkspace = "/workspace"
	sandboxTmp       = "/tmp"
)

// Lockdown is what a locked-down host adds: each owner's directories
// under <data dir>/tenants, and the checks that refuse a start.
type Lockdown struct {
	dataDir string // absolute
	tenants string // <dataDir>/tenants
	pinFile string // the upstream pin file
	// workspace is the directory a tenant's policy names for its
	// /workspace ("" when it names none: <tenants>/<owner>/workspace);
	// set once the tenants are known, read at each use (reloads).
	workspace atomic.Pointer[func(owner string) string]
}

func newLockdown(dataDir string) (*Lockdown, error) {
	if dataDir == "" {
		return nil, errors.New("give --data-dir (AIO_DATA_DIR): the tenants' directories live there")
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return &Lockdown{dataDir: abs, tenants: filepath.Join(abs, "tenants")}, nil
}

// Start checks a locked-down configuration and makes its directories
// (nil, nil when c leaves lockdown off); upstream tools are always pinned
// (the pin file defaults to <data dir>/upstream-pins.json: PinFile), and a
// call whose audit line cannot be written is refused (the host requires
// its audit log).
func Start(c Config, in Inputs) (*Lockdown, error) {
	if !c.Lockdown {
		return nil, nil
	}
	l, err := newLockdown(c.DataDir)
	if err != nil {
		return nil, fmt.Errorf("lockdown: %w", err)
	}
	if in.PinFile == "" {
		in.PinFile = filepath.Join(l.dataDir, "upstream-pins.json")
	}
	l.pinFile = in.PinFile
	if err := l.check(in); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(l.dataDir, "run"), 0o700); err != nil {
		return nil, fmt.Errorf("lockdown: %w", err)
	}
	return l, nil
}

// checkOwner is the owner of the sandbox check run at start-up; its
// directories are not a tenant's.
const checkOwner = "\x00check"

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ownerDir is the directory of owner's files: its name when that is a
// plain file name, else "x-" and a digest of it (an OAuth subject may hold
// any character), so no owner name can climb out of the tenants directory
// or name another's.
func (l *Lockdown) ownerDir(owner string) string {
	switch {
	case owner == checkOwner:
		return filepath.Join(l.dataDir, "check")
	case owner == "":
		owner = plugin.DefaultOwner
	}
	if !safeName.MatchString(owner) || strings.HasPrefix(owner, "x-") {
		sum := sha256.Sum256([]byte(owner))
		owner = "x-" + hex.EncodeToString(sum[:16])
	}
	return filepath.Join(l.tenants, owner)
}

// mounts are owner's /workspace and /tmp, created on first use.
func (l *Lockdown) mounts(owner string) ([]proc.Mount, error) {
	d := l.ownerDir(owner)
	ws := filepath.Join(d, "workspace")
	if f := l.workspace.Load(); f != nil && owner != checkOwner {
		if named := (*f)(owner); named != "" {
			ws = named
		}
	}
	ms := []proc.Mount{
		{Host: ws, Path: sandboxWorkspace},
		{Host: filepath.Join(d, "tmp"), Path: sandboxTmp},
	}
	for _, m := range ms {
		if err := os.MkdirAll(m.Host, 0o700); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// FileDirs is mounts for the files family.
func (l *Lockdown) FileDirs(owner string) (map[string]string, error) {
	ms, err := l.mounts(owner)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[m.Path] = m.Host
	}
	return out, nil
}

// PinFile is the upstream pin file: Inputs.PinFile, or the data
// directory's.
func (l *Lockdown) PinFile() string { return l.pinFile }

// SetWorkspaces names, for each owner, the directory its policy names for
// its /workspace ("" when it names none: its own under the data
// directory); read at each use, so a reload's policy applies.
func (l *Lockdown) SetWorkspaces(ws func(owner string) string) { l.workspace.Store(&ws) }

// Env is what grants' path variables mean in lockdown: $HOME is
// /workspace and $TMP /tmp, so $SANDBOX is both, as every tenant sees
// them; no host directory is named.
func (l *Lockdown) Env() caps.Env { return caps.Env{Home: sandboxWorkspace, Tmp: sandboxTmp} }

// ProcConfig turns the process manager's configuration into lockdown's:
// every unit in the bubblewrap sandbox, with seed 003's limits.
func (l *Lockdown) ProcConfig(c proc.Config) proc.Config {
	c.Sandbox = &proc.Sandbox{Dirs: l.mounts}
	c.BaseEnv = proc.SandboxEnv(c.BaseEnv, sandboxWorkspace)
	c.MaxTimeout = MaxTimeout
	c.DefaultTimeout = min(c.DefaultTimeout, MaxTimeout)
	c.MaxProcs = MaxProcs
	c.MaxMemory = MaxMemory
	c.DefaultMaxOutput = MaxOutput
	c.MaxOutputLimit = MaxOutput
	c.TempDir = filepath.Join(l.dataDir, "run")
	return c
}

// protectedPaths are the paths of aiod's own that no tenant directory
// may overlap, by what they are. The audit log joins them where it exists.
func protectedPaths(in Inputs) map[string]string {
	out := map[string]string{}
	add := func(what, p string) {
		if p == "" || p == "-" {
			return
		}
		if abs, err := filepath.Abs(p); err == nil {
			out[what] = abs
		}
	}
	add("plugins directory", in.PluginsDir)
	add("cache directory", in.CacheDir)
	add("policy file", in.PolicyFile)
	add("upstream pin file", in.PinFile)
	add("audit log", in.AuditLog)
	return out
}

// tenantWorkspaceOverlaps are the problems of the workspaces tenants name
// in the policy: each must keep apart from aiod's own paths, from the data
// directory and from every other tenant's.
func tenantWorkspaceOverlaps(l *Lockdown, in Inputs) []string {
	policy := in.Policy
	if policy == nil {
		return nil
	}
	names := slices.Sorted(maps.Keys(policy.Tenants))
	protected := protectedPaths(in)
	protected["data directory"] = l.dataDir
	var out []string
	for i, name := range names {
		ws := policy.Tenants[name].Workspace
		if ws == "" {
			continue
		}
		rw := realish(ws)
		for what, p := range protected {
			if rp := realish(p); pathx.Within(rp, rw) || pathx.Within(rw, rp) {
				out = append(out, fmt.Sprintf("tenant %q's workspace (%s) and the %s (%s) overlap: keep them apart", name, ws, what, p))
			}
		}
		for _, other := range names[i+1:] {
			ow := policy.Tenants[other].Workspace
			if ow == "" {
				continue
			}
			if ro := realish(ow); pathx.Within(ro, rw) || pathx.Within(rw, ro) {
				out = append(out, fmt.Sprintf("tenants %q and %q have overlapping workspaces (%s, %s)", name, other, ws, ow))
			}
		}
	}
	return out
}

// realish resolves the symbolic links of the longest existing prefix of
// p, so that overlaps are judged on the real directories.
func realish(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// check refuses a locked-down start, naming every missing piece, from the
// configuration alone (check runtime does the sandbox and the cgroups).
func (l *Lockdown) check(in Inputs) error {
	var missing []string
	if !in.Authenticated {
		missing = append(missing, "authentication: set --api-key (AIO_API_KEY), tenants with keys in the policy, or OAuth (--oauth-issuer, --oauth-audience, --oauth-jwks)")
	}
	if in.AllowUnauthenticated {
		missing = append(missing, "--allow-unauthenticated is not allowed")
	}
	if in.Workspace != "" {
		missing = append(missing, "--workspace is not used: each tenant has its own /workspace under --data-dir")
	}
	if in.AuditLog == "" {
		missing = append(missing, "an audit log: set --audit-log FILE (AIO_AUDIT_LOG); lockdown refuses a call it cannot audit")
	}
	tenants := realish(l.tenants)
	for what, p := range protectedPaths(in) {
		rp := realish(p)
		if pathx.Within(rp, tenants) || pathx.Within(tenants, rp) {
			missing = append(missing, fmt.Sprintf("the tenants' directories (%s) and the %s (%s) overlap: keep them apart", l.tenants, what, p))
		}
	}
	missing = append(missing, tenantWorkspaceOverlaps(l, in)...)
	if in.PluginsDir != "" {
		for _, e := range unpinnedPlugins(in.PluginsDir, in.Policy) {
			missing = append(missing, e.Error())
		}
	}
	if in.Policy != nil {
		for _, u := range in.Policy.Upstreams {
			if u.Stdio() && u.SHA256 == "" {
				missing = append(missing, fmt.Sprintf(`upstream MCP server %q: a command server must be pinned: add its "sha256" (of the file %s resolves to)`, u.Name, u.Command))
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("lockdown: refusing to start:\n  - %s", strings.Join(missing, "\n  - "))
}

// CheckRuntime is the part of the check that runs something: the units
// get kernel process limits (cgroups, the memory limit included), and a
// trivial command runs in the sandbox.
func (l *Lockdown) CheckRuntime(ctx context.Context, m *proc.Manager) error {
	var missing []string
	c := m.Containment()
	if c.Mode == proc.ModeWatchdog {
		missing = append(missing, "cgroups for process limits: "+c.Reason)
	} else if c.Reason != "" {
		missing = append(missing, "cgroups: "+c.Reason)
	}
	if err := m.CheckSandbox(ctx, checkOwner); err != nil {
		missing = append(missing, "the bubblewrap sandbox (Debian package bubblewrap): "+err.Error())
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("lockdown: refusing to start:\n  - %s", strings.Join(missing, "\n  - "))
}

// unpinnedPlugins lists the packages of dir whose module the policy does
// not pin by sha256 (as the registry reads them: a subdirectory with a
// manifest.json and its module).
func unpinnedPlugins(dir string, policy *caps.Policy) []error {
	fsys := os.DirFS(dir)
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return []error{fmt.Errorf("plugins dir %s: %w", dir, err)}
	}
	var errs []error
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		mb, err := fs.ReadFile(fsys, path.Join(e.Name(), "manifest.json"))
		if err != nil {
			continue // not a package
		}
		m, err := caps.ParseManifest(mb)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", e.Name(), err))
			continue
		}
		mod := m.Module
		if mod == "" {
			mod = "plugin.wasm"
		}
		b, err := fs.ReadFile(fsys, path.Join(e.Name(), mod))
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: module: %w", m.Name, err))
			continue
		}
		sum := sha256.Sum256(b)
		if err := policy.CheckPin(m.Name, hex.EncodeToString(sum[:])); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Log says once what lockdown set up.
func (l *Lockdown) Log(log *slog.Logger, m *proc.Manager) {
	log.Info("lockdown: processes run under bubblewrap, each tenant in its own /workspace and /tmp",
		"tenants", l.tenants, "containment", m.Containment().Mode,
		"max_procs", MaxProcs, "max_memory", MaxMemory, "max_output", MaxOutput)
}
