// Package plugin loads plugin packages (built-in and from a directory),
// keeps a warm instance pool per plugin and owner, and calls tools. The
// catalogue of tools is an immutable generation swapped atomically on
// reload; a call in flight finishes on the generation it started on.
//
// The files, one job each: registry.go (the Registry, its options and
// lifetime), catalog.go (one generation, built and swapped), reload.go
// (Reload), packages.go (reading packages and modules), load.go (one
// plugin's grant, families, compile and checks), background.go (start-up
// compiles after the catalogue is served), pool.go (instance pools per
// owner, prewarming), janitor.go (idle eviction), call.go and surface.go
// (calls into plugins), lazy.go and modules.go (compiled modules shared
// and dropped when idle), quota.go (per-owner instance quotas),
// extism.go (Extism-ABI plugins), describe.go (a module's own
// manifest, read by instantiating it).
package plugin

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goruntime "runtime"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/extism"
	"github.com/aiodhq/aiod/host/internal/filedigest"
	"github.com/aiodhq/aiod/host/mcp/catalog"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// DefaultOwner is the owner (tenant) id used when none is given.
const DefaultOwner = catalog.DefaultOwner

// DefaultIdleTimeout is Options.IdleTimeout when none is given.
const DefaultIdleTimeout = 5 * time.Minute

// ErrUnknownTool is returned by CallTool for a name not in the catalogue
// (the protocol layer's, host/mcp/catalog).
var ErrUnknownTool = catalog.ErrUnknownTool

// Options configure a Registry.
type Options struct {
	Engine runtime.Engine
	Policy *caps.Policy
	// BuiltinPolicy applies to built-in plugins; nil means Policy.
	BuiltinPolicy *caps.Policy
	Env           caps.Env
	// Families returns the host function families to link for a grant
	// (the core family is added by the registry).
	Families func(g *caps.Grant) []hostfn.Family
	// Builtins holds built-in plugin packages: one directory per plugin
	// with manifest.json and the module. May be nil.
	Builtins fs.FS
	// Dir is the --plugins-dir; empty for none.
	Dir string
	// IdleTimeout evicts instances idle that long (default 5 minutes).
	IdleTimeout time.Duration
	// KeepCompiled keeps every plugin's machine code in memory. Without
	// it a module with no instance is dormant (lazy.go): after the
	// start-up load (Rest) and after IdleTimeout without one, its code is
	// dropped, and its next call compiles it again from the engine's
	// cache (~130 ms for a 5 MB Go module).
	KeepCompiled bool
	// CheckedDir keeps a record of each reactor that passed its load
	// check (checked.go), under CheckedKey, which names the program (its
	// build): a later start of the same program lists a plugin with the
	// same module, manifest, grant and configuration without compiling
	// or checking it, dormant until its first call (which compiles it, as
	// after the start-up load: about 75 ms of processor for a 5 MB Go
	// module, saved at every start for every plugin not called). Either
	// empty: no records. Not used with KeepCompiled.
	CheckedDir, CheckedKey string
	// Prewake wakes at start, in the background and one at a time, the
	// dormant modules whose record says they were awake when the last
	// run noted their state (prewake.go): a restart keeps the modules
	// that were in use compiled, and their first calls do not wait.
	Prewake bool
	// Rested, when set, runs after the janitor put modules to sleep, and
	// once after a burst of wakes (wakeRelease after the first), from
	// another goroutine: the host returns the freed memory to the OS then
	// (a wake's compile leaves garbage several times the code it keeps).
	Rested func()
	// Background makes New list the plugins from their manifests at once
	// and compile them in the background, one per core: a call to
	// a plugin still compiling waits for it (within its deadline), and a
	// plugin that fails to load is dropped from the catalogue then. Later
	// reloads load before they swap.
	Background bool
	Logger     *slog.Logger
	// Remotes are the packages the policy names by OCI reference, fetched
	// into the cache by the host (host/oci/ocireg); SetRemotes replaces
	// them for the next Reload.
	Remotes []Remote
	// RequirePins refuses a plugin from Dir whose module the policy does
	// not pin by sha256 (caps.Policy.CheckPin; lockdown).
	RequirePins bool
	// Configurations are the operator's configurations of configured
	// built-in plugins (ABI v1.1, configured.go), by plugin name: such a
	// plugin is loaded only with one, and publishes the tools its
	// configure operation makes of it (a configured plugin from Dir gets
	// none, so it is not loaded). SetConfigurations replaces them.
	Configurations map[string]json.RawMessage
	// OwnerInstances, when set, caps the instances an owner (tenant)
	// holds across all its plugins, idle or in a call (0: no cap); each
	// plugin's pool of the owner is also capped at min(the grant's
	// MaxInstances, this). At the cap a call closes the owner's oldest
	// idle instance of another plugin, or waits for one (quota.go).
	OwnerInstances func(owner string) int
}

// Registry is the set of loaded plugins. Safe for concurrent use.
type Registry struct {
	opts    Options
	log     *slog.Logger
	cat     atomic.Pointer[Catalog]
	mu      sync.Mutex // serializes Reload
	stop    chan struct{}
	stopped sync.WaitGroup
	closed  atomic.Bool
	calls   sync.Pool
	onSwap  []func(*catalog.Snapshot)
	// start-up loading in the background (Options.Background)
	background atomic.Bool
	loading    sync.WaitGroup
	loadSem    chan struct{}
	prewakeSem chan struct{} // one prewake compile at a time
	// bgMu orders the background work that outlives a load (record
	// notes, prewakes) with Close.
	bgMu     sync.Mutex
	notesOff bool // under bgMu: Close noted every module's state
	// prewakeOff is set under bgMu by Close: no prewake starts then
	prewakeOff bool
	prewakes   sync.WaitGroup
	loadSpare  sync.Once // frees the core the loaders leave to calls (loader)
	// digests knows the modules already hashed (a reload reads only the
	// changed ones)
	digests filedigest.Cache
	jobs    []loadJob
	// extismVars keeps the vars of Extism plugins, per plugin and owner
	extismVars *extism.Vars
	// slots bounds each owner's instances across plugins
	// (Options.OwnerInstances; nil without it)
	slots *ownerSlots
	// modules holds the compiled modules, shared across generations
	// (modules.go)
	modules modules
	// checked remembers the plugins that passed their check across starts
	checked checkedRecords
	// releasing is set while a release after wakes is pending (woke)
	releasing atomic.Bool
}

// Plugin is a loaded plugin.
type Plugin struct {
	Manifest *abi.Manifest
	Grant    *caps.Grant
	Digest   string // hex sha256 of the module
	// Signer names the trusted key whose signature of the package's OCI
	// artifact verified ("" when none did or the policy has no keys).
	Signer  string
	Builtin bool
	Source  string // where it was loaded from

	key      string // digest + manifest digest + grant: reuse across reloads
	modKey   string // digest + name + form + grant: a compiled module's inputs
	mod      *module
	compiled runtime.Compiled // mod's
	families []hostfn.Family  // linked; those with a Lifecycle are provisioned
	command  bool
	extism   extismIface // form extism: its interface (extism.go), once checked
	pools    sync.Map    // owner -> *pool
	// defaultPool is DefaultOwner's pool of pools, kept beside the map:
	// every call of a single-tenant host is the default owner's, and the
	// map's lookup (an interface key's hash) was a tenth of a no-op
	// guard op's host share. The janitor never retires it.
	defaultPool atomic.Pointer[pool]
	ownerMax    func(owner string) int // Options.OwnerInstances
	slots       *ownerSlots            // the registry's, with OwnerInstances (quota.go)
	refs        atomic.Int64           // catalogues holding it + calls in flight
	log         *slog.Logger
	closed      atomic.Bool
	// ready is closed once a plugin listed at start-up is compiled and
	// checked (nil: loaded before it was listed); loadErr then says why
	// it could not be.
	ready   chan struct{}
	loadErr error
	// want is closed when a call waits for the plugin: its load starts
	// at once instead of waiting for a free loader.
	want     chan struct{}
	wantOnce sync.Once
	// config is a configured plugin's configuration (nil for others),
	// and conf what its configure made of it, once it has run.
	config json.RawMessage
	conf   atomic.Pointer[configured]
}

// New loads the built-ins and the plugins directory. It returns a usable
// registry even when some plugins were refused; err then joins the reasons.
func New(ctx context.Context, opts Options) (*Registry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Policy == nil {
		opts.Policy = &caps.Policy{}
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	r := &Registry{opts: opts, log: opts.Logger, stop: make(chan struct{}), loadSem: make(chan struct{}, goruntime.GOMAXPROCS(0)), prewakeSem: make(chan struct{}, 1),
		extismVars: extism.NewVars(0)}
	if !opts.KeepCompiled {
		r.checked = checkedRecords{dir: opts.CheckedDir, key: opts.CheckedKey}
	}
	if opts.OwnerInstances != nil {
		r.slots = newOwnerSlots(opts.OwnerInstances, r.evictOldest)
	}
	if cap(r.loadSem) > 1 {
		r.loadSem <- struct{}{} // one core left to calls (loader)
	}
	r.calls.New = func() any { return &pooledCall{} }
	r.cat.Store(&Catalog{byName: map[string]*Tool{}, snap: catalog.NewSnapshot(0, []byte("[]"), nil, nil, nil, nil)})
	r.loadDigests()
	// Plugins that fail to load are skipped: the registry serves the rest
	// and the joined load errors are returned beside it.
	r.background.Store(opts.Background)
	loadErr := r.Reload(ctx)
	r.background.Store(false)
	r.saveDigests()
	// the loaders start once the catalogue is listed, so that listing
	// does not share the CPU with compiling; those of the modules to
	// prewake first (prewake.go)
	for i := range r.jobs {
		r.jobs[i].awake = r.noteAwake(r.jobs[i].p)
	}
	for _, first := range []bool{true, false} {
		for _, j := range r.jobs {
			if j.awake == first {
				go r.loader(j)
			}
		}
	}
	r.jobs = nil
	r.stopped.Add(1)
	go r.janitor()
	return r, loadErr
}

// OnSwap registers f to run after each catalogue swap (for list_changed),
// with the new generation's snapshot.
func (r *Registry) OnSwap(f func(*catalog.Snapshot)) {
	r.mu.Lock()
	r.onSwap = append(r.onSwap, f)
	r.mu.Unlock()
}

// SetPolicy replaces the operator's policy (and the built-ins' policy; nil
// means policy) for the next Reload; plugins whose grant it changes are
// reloaded then, the others carried over.
func (r *Registry) SetPolicy(policy, builtin *caps.Policy) {
	if policy == nil {
		policy = &caps.Policy{}
	}
	r.mu.Lock()
	r.opts.Policy, r.opts.BuiltinPolicy = policy, builtin
	r.mu.Unlock()
}

// Remote is a package the policy names by OCI reference: the directory
// the host fetched it into, or why the fetch failed.
type Remote struct {
	// Name is the policy entry's plugin name; the package must be that
	// plugin.
	Name string
	// Where says where it comes from, the same for every version of it
	// ("oci://REGISTRY/REPOSITORY"): a version refused at reload keeps
	// the one loaded from the same place serving.
	Where string
	Dir   string
	Err   error
}

// SetRemotes replaces the fetched packages for the next Reload.
func (r *Registry) SetRemotes(remotes []Remote) {
	r.mu.Lock()
	r.opts.Remotes = remotes
	r.mu.Unlock()
}

// Catalog returns the current generation.
func (r *Registry) Catalog() *Catalog { return r.cat.Load() }

// Snapshot returns the current generation as the protocol layer reads it
// (mcp.Catalog).
func (r *Registry) Snapshot() *catalog.Snapshot { return r.cat.Load().snap }

// Close unloads everything. Idempotent.
func (r *Registry) Close(ctx context.Context) error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(r.stop)
	r.bgMu.Lock() // no prewake starts after this
	r.prewakeOff = true
	r.bgMu.Unlock()
	r.stopped.Wait()
	r.loading.Wait()
	r.prewakes.Wait()
	r.noteAll()
	r.saveDigests()
	r.mu.Lock()
	defer r.mu.Unlock()
	cat := r.cat.Load()
	for _, p := range cat.Plugins {
		r.releasePlugin(p)
	}
	r.modules.close()
	return nil
}

// logWriter sends guest stdout/stderr to the log, capped in total.
type logWriter struct {
	mu   sync.Mutex
	log  *slog.Logger
	left int
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.left <= 0 {
		return len(b), nil
	}
	s := b
	if len(s) > w.left {
		s = s[:w.left]
	}
	w.left -= len(s)
	w.log.Debug("plugin output", "text", strings.TrimRight(string(s), "\n"))
	if w.left <= 0 {
		w.log.Warn("plugin output limit reached; further output is discarded")
	}
	return len(b), nil
}
