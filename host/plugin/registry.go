// Package plugin loads plugin packages (built-in and from a directory),
// keeps a warm instance pool per plugin and owner, and calls tools. The
// catalogue of tools is an immutable generation swapped atomically on
// reload; a call in flight finishes on the generation it started on.
package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goruntime "runtime"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
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
	// Rested, when set, runs after the janitor put modules to sleep (the
	// host returns the freed memory to the OS then).
	Rested func()
	// Background makes New list the plugins from their manifests at once
	// and compile them in the background, one per core: a call to
	// a plugin still compiling waits for it (within its deadline), and a
	// plugin that fails to load is dropped from the catalogue then. Later
	// reloads load before they swap.
	Background bool
	Logger     *slog.Logger
	// RequirePins refuses a plugin from Dir whose module the policy does
	// not pin by sha256 (caps.Policy.CheckPin; lockdown).
	RequirePins bool
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
	loadSpare  sync.Once // frees the core the loaders leave to calls (loader)
	// digests knows the modules already hashed (a reload reads only the
	// changed ones)
	digests filedigest.Cache
	jobs    []loadJob
	// extismVars keeps the vars of Extism plugins, per plugin and owner
	extismVars *hostfn.ExtismVars
	// slots bounds each owner's instances across plugins
	// (Options.OwnerInstances; nil without it)
	slots *ownerSlots
	// modules holds the compiled modules, shared across generations
	// (modules.go)
	modules modules
}

// Catalog is one immutable generation of the tool catalogue.
type Catalog struct {
	Generation uint64
	Plugins    []*Plugin
	Tools      []*Tool
	byName     map[string]*Tool
	snap       *catalog.Snapshot // what the protocol layer reads
	surface                      // prompts, resources, resource templates (surface.go)
	// loadErrors holds, by plugin name, why a package was refused when
	// this generation was built.
	loadErrors map[string]string
}

// LoadError is why the package of plugin name was refused when this
// generation was built ("" if it was not).
func (c *Catalog) LoadError(name string) string { return c.loadErrors[name] }

// LoadErrors are the refusals of this generation's build, by plugin name
// (the package directory's name when its manifest did not parse).
func (c *Catalog) LoadErrors() map[string]string { return maps.Clone(c.loadErrors) }

// Tool is one tool in a catalogue.
type Tool struct {
	Decl   abi.Tool
	Plugin *Plugin
}

// Lookup finds a tool by name.
func (c *Catalog) Lookup(name string) *Tool { return c.byName[name] }

// ToolsJSON is the pre-rendered JSON array of the tool declarations, in
// catalogue order.
func (c *Catalog) ToolsJSON() []byte { return c.snap.ToolsJSON() }

// Snapshot is this generation as the protocol layer reads it.
func (c *Catalog) Snapshot() *catalog.Snapshot { return c.snap }

// Plugin is a loaded plugin.
type Plugin struct {
	Manifest *abi.Manifest
	Grant    *caps.Grant
	Digest   string // hex sha256 of the module
	Builtin  bool
	Source   string // where it was loaded from

	key      string // digest + manifest digest + grant: reuse across reloads
	modKey   string // digest + name + form + grant: a compiled module's inputs
	mod      *module
	compiled runtime.Compiled // mod's
	families []hostfn.Family  // linked; those with a Lifecycle are provisioned
	command  bool
	extism   extismIface            // form extism: its interface (extism.go), once checked
	pools    sync.Map               // owner -> *pool
	ownerMax func(owner string) int // Options.OwnerInstances
	slots    *ownerSlots            // the registry's, with OwnerInstances (quota.go)
	refs     atomic.Int64           // catalogues holding it + calls in flight
	log      *slog.Logger
	closed   atomic.Bool
	// ready is closed once a plugin listed at start-up is compiled and
	// checked (nil: loaded before it was listed); loadErr then says why
	// it could not be.
	ready   chan struct{}
	loadErr error
	// want is closed when a call waits for the plugin: its load starts
	// at once instead of waiting for a free loader.
	want     chan struct{}
	wantOnce sync.Once
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
	r := &Registry{opts: opts, log: opts.Logger, stop: make(chan struct{}), loadSem: make(chan struct{}, goruntime.GOMAXPROCS(0)),
		extismVars: hostfn.NewExtismVars(0)}
	if opts.OwnerInstances != nil {
		r.slots = newOwnerSlots(opts.OwnerInstances, r.evictOldest)
	}
	if cap(r.loadSem) > 1 {
		r.loadSem <- struct{}{} // one core left to calls (loader)
	}
	r.calls.New = func() any { return &hostfn.Call{} }
	r.cat.Store(&Catalog{byName: map[string]*Tool{}, snap: catalog.NewSnapshot(0, []byte("[]"), nil, nil, nil, nil)})
	// Plugins that fail to load are skipped: the registry serves the rest
	// and the joined load errors are returned beside it.
	r.background.Store(opts.Background)
	loadErr := r.Reload(ctx)
	r.background.Store(false)
	// the loaders start once the catalogue is listed, so that listing
	// does not share the CPU with compiling
	for _, j := range r.jobs {
		go r.loader(j)
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

// Catalog returns the current generation.
func (r *Registry) Catalog() *Catalog { return r.cat.Load() }

// Snapshot returns the current generation as the protocol layer reads it
// (mcp.Catalog).
func (r *Registry) Snapshot() *catalog.Snapshot { return r.cat.Load().snap }

type source struct {
	name     string // the manifest's name, or the directory's when it did not parse
	manifest []byte
	m        *abi.Manifest // manifest, parsed and validated
	wasm     []byte        // nil until read (a built-in pinned by its manifest is read when compiled)
	digest   string        // hex sha256 of wasm, once read or known (digests)
	digests  *filedigest.Cache
	fsys     fs.FS
	module   string // the module's path in fsys
	pinned   string // the manifest's sha256, checked when the module is read late
	builtin  bool
	where    string
	err      error // the package could not be read or parsed
}

// maxModuleBytes bounds a plugin module.
const maxModuleBytes = 256 << 20

// read returns the module's bytes, reading them if not yet read; a
// module read late must match the digest its manifest pinned.
func (s *source) read() ([]byte, error) {
	if s.wasm == nil {
		before, _ := fs.Stat(s.fsys, s.module)
		b, err := readLimited(s.fsys, s.module, maxModuleBytes)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: module: %w", s.name, err)
		}
		sum := sha256.Sum256(b)
		digest := hex.EncodeToString(sum[:])
		moduleReads.Add(1)
		if s.pinned != "" && digest != s.pinned {
			return nil, fmt.Errorf("plugin %s: module digest %s does not match the manifest's sha256 %s", s.name, digest, s.pinned)
		}
		s.wasm, s.digest = b, digest
		if s.digests != nil {
			after, _ := fs.Stat(s.fsys, s.module)
			s.digests.Remember(before, after, digest)
		}
	}
	return s.wasm, nil
}

// moduleReads counts the modules read and hashed (tests).
var moduleReads atomic.Int64

// known sets the module's digest without reading it when its file is one
// already hashed and unchanged since (filedigest), and reports whether it
// did; a known digest is checked against the manifest's as a read one is.
func (s *source) known() (bool, error) {
	if s.digests == nil || s.wasm != nil {
		return false, nil
	}
	st, err := fs.Stat(s.fsys, s.module)
	if err != nil {
		return false, nil
	}
	d, ok := s.digests.Lookup(st)
	if !ok {
		return false, nil
	}
	if s.pinned != "" && d != s.pinned {
		return false, fmt.Errorf("plugin %s: module digest %s does not match the manifest's sha256 %s", s.name, d, s.pinned)
	}
	s.digest = d
	return true, nil
}

// reader returns how to read the module again later (a dormant module's
// wake, lazy.go). A built-in is read again from the binary's embedded
// files, checked against digest. A module from a directory is kept in
// memory instead (~5 MB for a Go plugin, a quarter of its machine code):
// its file may be overwritten at any time, and a version that keeps
// serving after a broken new one was refused must still be able to wake.
func (s *source) reader(digest string) func() ([]byte, error) {
	if !s.builtin || s.fsys == nil {
		b := s.wasm
		return func() ([]byte, error) { return b, nil }
	}
	fsys, name, pname := s.fsys, s.module, s.name
	return func() ([]byte, error) {
		b, err := readLimited(fsys, name, maxModuleBytes)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: module: %w", pname, err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != digest {
			return nil, fmt.Errorf("plugin %s: module %s changed since it was loaded (sha256 %s, loaded %s)", pname, name, got, digest)
		}
		return b, nil
	}
}

// Report says what one Reload did.
type Report struct {
	Generation uint64 `json:"generation"`
	// Added, Removed and Changed name plugins whose version in the new
	// generation is new, gone or different (module, manifest or grant).
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Changed   []string `json:"changed"`
	Unchanged int      `json:"unchanged"`
	// Kept names plugins whose new version was refused: the version that
	// was serving goes on serving.
	Kept []string `json:"kept"`
	// Errors are the load errors, one a refused package.
	Errors     []string `json:"errors"`
	DurationMs float64  `json:"duration_ms"`
}

// Reload re-reads the built-ins and the plugins directory and swaps in a
// new catalogue. Unchanged plugins are carried over warm. A plugin that
// fails to load is skipped with a logged error, and if a version of it was
// serving (the same package directory), that version keeps serving. The
// returned error joins the individual load errors.
func (r *Registry) Reload(ctx context.Context) error {
	_, err := r.ReloadReport(ctx)
	return err
}

// ReloadReport is Reload, and says what changed.
func (r *Registry) ReloadReport(ctx context.Context) (*Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return nil, errors.New("registry closed")
	}
	began := time.Now()
	old := r.cat.Load()
	reuse := map[string]*Plugin{}
	oldBySource := map[string]*Plugin{}
	oldByName := map[string]*Plugin{}
	for _, p := range old.Plugins {
		reuse[p.key] = p
		oldBySource[p.Source] = p
		oldByName[p.Manifest.Name] = p
	}
	var srcs []source
	if r.opts.Builtins != nil {
		srcs = append(srcs, readPackages(r.opts.Builtins, ".", true, "builtin", true, nil)...)
	}
	if r.opts.Dir != "" {
		srcs = append(srcs, readPackages(os.DirFS(r.opts.Dir), ".", false, r.opts.Dir, r.background.Load(), &r.digests)...)
	}
	rep := &Report{Generation: old.Generation + 1}
	var errs []error
	var plugins []*Plugin
	seenPlugin := map[string]bool{}
	lastErr := map[string]string{}
	for _, s := range srcs {
		var p *Plugin
		err := s.err
		if err == nil && seenPlugin[s.name] {
			// refused below without loading it (a link about to be
			// renamed over a package names the same plugin)
			err = fmt.Errorf("plugin %s from %s: a plugin with that name is already loaded", s.name, s.where)
			r.log.Warn("plugin refused", "err", err)
			errs = append(errs, err)
			rep.Errors = append(rep.Errors, err.Error())
			continue
		}
		if err == nil {
			p, err = r.load(ctx, s, reuse, oldByName[s.name])
		}
		if err != nil {
			r.log.Error("plugin refused", "plugin", s.name, "source", s.where, "err", err)
			errs = append(errs, err)
			rep.Errors = append(rep.Errors, err.Error())
			lastErr[s.name] = err.Error()
			// the version loaded from the same package keeps serving
			prev := oldBySource[s.where]
			if prev == nil || prev.closed.Load() || seenPlugin[prev.Manifest.Name] {
				continue
			}
			r.log.Warn("new version refused; the previous one keeps serving", "plugin", prev.Manifest.Name, "version", prev.Manifest.Version)
			prev.refs.Add(1)
			p = prev
			rep.Kept = append(rep.Kept, prev.Manifest.Name)
		}
		if seenPlugin[p.Manifest.Name] {
			err := fmt.Errorf("plugin %s from %s: a plugin with that name is already loaded", p.Manifest.Name, s.where)
			r.log.Warn("plugin refused", "err", err)
			errs = append(errs, err)
			rep.Errors = append(rep.Errors, err.Error())
			r.releasePlugin(p)
			continue
		}
		seenPlugin[p.Manifest.Name] = true
		plugins = append(plugins, p)
	}
	next, err := r.build(old.Generation+1, plugins)
	if err != nil {
		// the half-built generation gives back its references (plugins
		// carried over from old keep the old generation's)
		for _, p := range plugins {
			r.releasePlugin(p)
		}
		return nil, err
	}
	next.loadErrors = lastErr
	for _, p := range next.Plugins {
		switch prev := oldByName[p.Manifest.Name]; {
		case prev == nil:
			rep.Added = append(rep.Added, p.Manifest.Name)
		case prev != p:
			rep.Changed = append(rep.Changed, p.Manifest.Name)
		default:
			rep.Unchanged++
		}
	}
	for _, p := range old.Plugins {
		if !seenPlugin[p.Manifest.Name] {
			rep.Removed = append(rep.Removed, p.Manifest.Name)
		}
	}
	r.swap(old, next)
	r.modules.prune(seenPlugin)
	rep.DurationMs = float64(time.Since(began).Microseconds()) / 1000
	r.log.Info("catalogue loaded", "generation", next.Generation, "plugins", len(next.Plugins), "tools", len(next.Tools),
		"added", rep.Added, "removed", rep.Removed, "changed", rep.Changed, "kept", rep.Kept, "ms", rep.DurationMs)
	return rep, errors.Join(errs...)
}

// build makes generation gen of the catalogue from plugins, in order
// (each holding a reference the catalogue takes over): their tools (the
// first plugin to name a tool keeps it), prompts and resources, rendered.
func (r *Registry) build(gen uint64, plugins []*Plugin) (*Catalog, error) {
	next := &Catalog{Generation: gen, Plugins: plugins, byName: map[string]*Tool{}}
	for _, p := range plugins {
		for _, t := range p.Manifest.Tools {
			if prev, clash := next.byName[t.Name]; clash {
				r.log.Warn("tool refused: name already taken", "tool", t.Name, "plugin", p.Manifest.Name, "kept", prev.Plugin.Manifest.Name)
				continue
			}
			tl := &Tool{Decl: t, Plugin: p}
			next.byName[t.Name] = tl
			next.Tools = append(next.Tools, tl)
		}
		next.addSurface(p, r.log.Warn)
	}
	prompts, resources, templates, err := next.renderSurface()
	if err != nil {
		return nil, fmt.Errorf("render prompts and resources: %w", err)
	}
	decls := make([]abi.Tool, len(next.Tools))
	var tasks map[string]string
	for i, t := range next.Tools {
		decls[i] = t.Decl
		if e := t.Decl.Execution; e != nil && (e.TaskSupport == "optional" || e.TaskSupport == "required") {
			if tasks == nil {
				tasks = map[string]string{}
			}
			tasks[t.Decl.Name] = e.TaskSupport
		}
	}
	lj, err := json.Marshal(decls)
	if err != nil {
		return nil, fmt.Errorf("render tools: %w", err)
	}
	next.snap = catalog.NewSnapshot(gen, lj, prompts, resources, templates, tasks)
	return next, nil
}

// swap makes next current, drops old's references and tells the OnSwap
// listeners. r.mu is held.
func (r *Registry) swap(old, next *Catalog) {
	r.cat.Store(next)
	for _, p := range old.Plugins {
		r.releasePlugin(p)
	}
	for _, f := range r.onSwap {
		f(next.snap)
	}
}

// readPackages lists plugin packages: each subdirectory (or symbolic link
// to one) holding a manifest.json, in name order (built-ins in the order
// of their "order" file). A package that cannot be read or parsed is
// returned with its error, in its place.
//
// A module whose manifest pins its sha256 is read (and checked) only when
// compiled if late is set (built-ins, and every plugin at a background
// start-up); otherwise it is read and hashed here, as a reload needs its
// digest to tell a changed module from an unchanged one.
func readPackages(fsys fs.FS, dir string, builtin bool, where string, late bool, digests *filedigest.Cache) []source {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return []source{{name: where, where: where, err: fmt.Errorf("read plugins %s: %w", where, err)}}
	}
	var out []source
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	if builtin {
		// built-ins keep the order given by their "order" file
		if b, err := fs.ReadFile(fsys, path.Join(dir, "order")); err == nil {
			rank := map[string]int{}
			for i, n := range strings.Fields(string(b)) {
				rank[n] = i + 1
			}
			sort.SliceStable(ents, func(i, j int) bool {
				ri, rj := rank[ents[i].Name()], rank[ents[j].Name()]
				if ri == 0 {
					ri = 1 << 30
				}
				if rj == 0 {
					rj = 1 << 30
				}
				return ri < rj
			})
		}
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			// deploy tools swap a link (echo -> versions/2) atomically
			st, err := fs.Stat(fsys, path.Join(dir, e.Name()))
			isDir = err == nil && st.IsDir()
		}
		if !isDir {
			continue
		}
		pdir := path.Join(dir, e.Name())
		pwhere := filepath.Join(where, e.Name())
		fail := func(name string, err error) {
			out = append(out, source{name: name, builtin: builtin, where: pwhere, err: err})
		}
		mb, err := fs.ReadFile(fsys, path.Join(pdir, "manifest.json"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			fail(e.Name(), fmt.Errorf("plugin %s: %w", e.Name(), err))
			continue
		}
		m, err := caps.ParseManifest(mb)
		if err != nil {
			fail(e.Name(), fmt.Errorf("plugin %s (%s): %w", e.Name(), pwhere, err))
			continue
		}
		modName := m.Module
		if modName == "" {
			modName = "plugin.wasm"
		}
		src := source{name: m.Name, manifest: mb, m: m, fsys: fsys, module: path.Join(pdir, modName), builtin: builtin, where: pwhere, pinned: m.SHA256, digests: digests}
		if late && m.SHA256 != "" {
			// pinned by its manifest: its digest is known without reading
			// it, and it is read and checked when compiled
			if st, err := fs.Stat(fsys, src.module); err != nil || st.Size() > maxModuleBytes {
				fail(m.Name, fmt.Errorf("plugin %s: module %s: missing or over %d bytes", m.Name, modName, maxModuleBytes))
				continue
			}
		} else if ok, err := src.known(); err != nil {
			fail(m.Name, err)
			continue
		} else if !ok {
			if _, err := src.read(); err != nil {
				fail(m.Name, err)
				continue
			}
		}
		out = append(out, src)
	}
	return out
}

func readLimited(fsys fs.FS, name string, max int64) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d byte limit", name, st.Size(), max)
	}
	return fs.ReadFile(fsys, name)
}

func (r *Registry) load(ctx context.Context, s source, reuse map[string]*Plugin, prev *Plugin) (*Plugin, error) {
	p, fams, err := r.prepare(s, reuse)
	if err != nil || fams == nil { // refused, or carried over
		return p, err
	}
	if r.background.Load() {
		// start-up: list it now, compile it on a loader; calls wait for it
		p.ready, p.want = make(chan struct{}), make(chan struct{})
		r.loading.Add(1)
		r.jobs = append(r.jobs, loadJob{p: p, src: s, fams: fams}) // started once listed
		return p, nil
	}
	if err := r.finish(ctx, p, &s, fams, prev); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// prepare does the checks that need no compilation (manifest, digest, wasm
// magic, grant) and makes the Plugin. A plugin carried over from reuse is
// returned with nil fams.
func (r *Registry) prepare(s source, reuse map[string]*Plugin) (*Plugin, []hostfn.Family, error) {
	m := s.m
	digest := m.SHA256 // a pinned module read late (readPackages)
	if s.digest != "" {
		digest = s.digest
	}
	if m.SHA256 != "" && m.SHA256 != digest {
		return nil, nil, fmt.Errorf("plugin %s: module digest %s does not match the manifest's sha256 %s", m.Name, digest, m.SHA256)
	}
	policy := r.opts.Policy
	if s.builtin && r.opts.BuiltinPolicy != nil {
		policy = r.opts.BuiltinPolicy
	}
	if r.opts.RequirePins && !s.builtin {
		if err := policy.CheckPin(m.Name, digest); err != nil {
			return nil, nil, err
		}
	}
	grant := policy.Allow(m, r.opts.Env)
	msum := sha256.Sum256(s.manifest)
	gkey := grantKey(grant)
	key := fmt.Sprintf("%s/%x/%v/%v", digest, msum[:8], s.builtin, gkey)
	if p, ok := reuse[key]; ok && !p.closed.Load() {
		p.refs.Add(1)
		return p, nil, nil
	}
	if s.wasm != nil && !isWasm(s.wasm) {
		return nil, nil, fmt.Errorf("plugin %s: %s is not a wasm module", m.Name, s.where)
	}
	var gated []hostfn.Family
	if r.opts.Families != nil {
		gated = r.opts.Families(grant)
	}
	fams := append([]hostfn.Family{hostfn.Core()}, gated...)
	if m.Form == abi.FormExtism {
		fams = r.extismFamilies(grant, gated)
	}
	p := &Plugin{Manifest: m, Grant: grant, Digest: digest, Builtin: s.builtin, Source: s.where,
		key: key, modKey: fmt.Sprintf("%s/%s/%s/%s", digest, m.Name, m.Form, gkey), command: m.Form == "command", log: r.log.With("plugin", m.Name), ownerMax: r.opts.OwnerInstances}
	p.slots = r.slots
	p.refs.Add(1)
	return p, fams, nil
}

// finish compiles p, provisions its families and checks the reactor
// (in an instance it then closes); prev, a version p replaces, sets how
// many instances to prewarm. On failure p holds no resources.
func (r *Registry) finish(ctx context.Context, p *Plugin, s *source, fams []hostfn.Family, prev *Plugin) error {
	m, grant, log := p.Manifest, p.Grant, p.log
	read := func() ([]byte, error) {
		wasm, err := s.read()
		if err == nil && !isWasm(wasm) {
			err = fmt.Errorf("plugin %s: %s is not a wasm module", m.Name, p.Source)
		}
		return wasm, err
	}
	if s.digest == "" { // not known yet: read now, before any work
		if _, err := read(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	reused, err := r.compile(ctx, p, read, s, fams)
	if err != nil {
		return err
	}
	t1 := time.Now()
	if err := p.provision(ctx, fams); err != nil {
		p.close()
		return fmt.Errorf("plugin %s: %w", m.Name, err)
	}
	check := r.checkReactor
	if p.Manifest.Form == abi.FormExtism {
		check = r.checkExtism
	}
	// a reactor whose module, manifest and grant passed before passes
	// again (an A/B swap back, a rollback): no instantiation to check it
	skip := reused && p.Manifest.Form != abi.FormExtism && p.mod.hasPassed(p.key)
	if !p.command && !skip {
		if err := check(ctx, p); err != nil {
			p.close()
			return err
		}
	}
	p.mod.checked(p.key)
	t2 := time.Now()
	warmed := 0
	if !p.command && prev != nil {
		warmed = p.prewarm(ctx, prev)
	}
	if grant.Fuel > 0 && !runtime.MetersFuel(r.opts.Engine) {
		log.Info("fuel not metered: this engine applies the deadline only", "fuel", grant.Fuel, "timeout", grant.Timeout)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	log.Info("plugin loaded", "version", m.Version, "digest", p.Digest[:12], "tools", len(m.Tools), "families", grant.GrantedFamilies(),
		"compiled", !reused, "checked", !skip, "compile_ms", ms(t1.Sub(t0)), "check_ms", ms(t2.Sub(t1)), "prewarm_ms", ms(time.Since(t2)), "prewarmed", warmed)
	return nil
}

// compile gives p its compiled module: one held for the same inputs
// (modules.go, reused), or a new one.
//
// The module is lazy (lazy.go): its machine code may be dropped while it
// has no instance, and compiled again from reread's bytes when needed.
//
// read gives the module's bytes. A module held is reused without them
// when they were not read (a reload that knew the digest, filedigest):
// the held module keeps its own bytes for its wakes.
func (r *Registry) compile(ctx context.Context, p *Plugin, read func() ([]byte, error), s *source, fams []hostfn.Family) (reused bool, err error) {
	m, grant := p.Manifest, p.Grant
	cfg := runtime.Config{
		Name:        m.Name,
		Families:    fams,
		MemoryPages: grant.MemoryPages,
		Fuel:        uint64(max(grant.Fuel, 0)),
		Stderr:      &logWriter{log: p.log, left: 64 << 10},
	}
	engine, log := r.opts.Engine, p.log
	var reread func() ([]byte, error)
	wake := func(ctx context.Context) (runtime.Compiled, error) {
		t0 := time.Now()
		b, err := reread()
		if err != nil {
			return nil, err
		}
		c, err := engine.Compile(ctx, b, cfg)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: compile again: %w", m.Name, err)
		}
		log.Info("plugin woken", "compile_ms", float64(time.Since(t0).Microseconds())/1000)
		return c, nil
	}
	if mod := r.modules.get(p.modKey); mod != nil {
		p.mod, p.compiled = mod, mod.compiled
		if l, ok := mod.compiled.(*lazyCompiled); ok && s.wasm != nil {
			reread = s.reader(p.Digest)
			l.setWake(wake) // its bytes are where this version's are
		}
		return true, nil
	}
	wasm, err := read()
	if err != nil {
		return false, err
	}
	reread = s.reader(p.Digest)
	compiled, err := engine.Compile(ctx, wasm, cfg)
	if err != nil {
		// The engine names the import; which capability it belongs to,
		// and whether that was granted, is the registry's to say.
		var ie *runtime.ImportError
		if errors.As(err, &ie) {
			if fam, ok := strings.CutPrefix(ie.Module, "aiod:"); ok && slices.Contains(abi.Families, abi.Family(fam)) {
				ie.Family = fam
				ie.Unimplemented = grant.Has(abi.Family(fam)) // granted, yet not linked: no such family here
			}
		}
		return false, err
	}
	p.mod = r.modules.add(p.modKey, m.Name, newLazy(compiled, wake))
	p.compiled = p.mod.compiled
	return false, nil
}

func isWasm(b []byte) bool { return len(b) >= 8 && string(b[:4]) == "\x00asm" }

// loaders is how many instances prewarm makes at once: one per core but
// one, which is left to serve the calls under way.
func loaders() int { return max(1, goruntime.GOMAXPROCS(0)-1) }

// coldCompile is how long a start-up compile runs before the loaders take
// the core they left to calls: a compile from a warm cache takes 120-240
// ms (a 5 MB Go module), a cold one seconds.
var coldCompile = 500 * time.Millisecond

// loadJob is one plugin for the start-up loaders to finish.
type loadJob struct {
	p    *Plugin
	src  source
	fams []hostfn.Family
}

// loader finishes a plugin listed at start-up. A plugin that fails is
// marked (its calls answer why) and dropped from the catalogue.
//
// The loaders run one per core but one while the compiles are short (a
// warm cache): the core left over serves the first calls, and the plugin a
// call waits for compiles beside one loader instead of two (the first echo
// after a warm start: 345-386 ms with a loader per core). Once a compile
// has run coldCompile the cache is cold, and that core loads too: with one
// loader a cold start of 13 modules took 50 s instead of 27.
func (r *Registry) loader(j loadJob) {
	defer r.loading.Done()
	// a plugin a call waits for goes first, without waiting for a loader
	held := false
	select {
	case r.loadSem <- struct{}{}:
		held = true
	case <-j.p.want:
	case <-r.stop:
		j.p.loadErr = errors.New("registry closed")
		close(j.p.ready)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var cold *time.Timer
	if cap(r.loadSem) > 1 { // (with one core nothing was left over)
		cold = time.AfterFunc(coldCompile, func() { r.loadSpare.Do(func() { <-r.loadSem }) })
	}
	err := r.finish(ctx, j.p, &j.src, j.fams, nil)
	if cold != nil {
		cold.Stop()
	}
	if err != nil {
		j.p.close()
	}
	cancel()
	if held {
		<-r.loadSem
	}
	if err != nil {
		j.p.loadErr = err
		r.log.Error("plugin refused", "plugin", j.p.Manifest.Name, "source", j.p.Source, "err", err)
	}
	close(j.p.ready)
	if err != nil {
		r.dropFailed()
	}
}

// dropFailed swaps in a catalogue without the plugins whose start-up load
// failed.
func (r *Registry) dropFailed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return
	}
	old := r.cat.Load()
	var keep []*Plugin
	errs := maps.Clone(old.loadErrors)
	if errs == nil {
		errs = map[string]string{}
	}
	for _, p := range old.Plugins {
		if p.failed() {
			errs[p.Manifest.Name] = p.loadErr.Error()
			continue
		}
		p.refs.Add(1)
		keep = append(keep, p)
	}
	next, err := r.build(old.Generation+1, keep)
	if err != nil {
		for _, p := range keep {
			r.releasePlugin(p)
		}
		r.log.Error("drop failed plugins", "err", err)
		return
	}
	next.loadErrors = errs
	r.swap(old, next)
}

// failed reports whether p's start-up load has ended in failure.
func (p *Plugin) failed() bool {
	if p.ready == nil {
		return false
	}
	select {
	case <-p.ready:
		return p.loadErr != nil
	default:
		return false
	}
}

// await waits until p is loaded (at start-up plugins are listed before
// they are compiled) and returns why it could not be.
func (p *Plugin) await(ctx context.Context) error {
	if p.ready == nil {
		return nil
	}
	select {
	case <-p.ready:
		return p.loadErr
	default:
	}
	p.wantOnce.Do(func() { close(p.want) })
	select {
	case <-p.ready:
		return p.loadErr
	case <-ctx.Done():
		return fmt.Errorf("plugin %s is still loading: %w", p.Manifest.Name, ctx.Err())
	}
}

// WaitLoaded waits until every plugin listed at start-up is loaded or
// refused.
func (r *Registry) WaitLoaded(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.loading.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Loading names the plugins still being compiled.
func (r *Registry) Loading() []string {
	out := []string{}
	for _, p := range r.cat.Load().Plugins {
		if p.ready != nil {
			select {
			case <-p.ready:
			default:
				out = append(out, p.Manifest.Name)
			}
		}
	}
	return out
}

func grantKey(g *caps.Grant) string {
	b, _ := json.Marshal(struct {
		F []abi.Family
		G *caps.Grant
	}{g.GrantedFamilies(), g})
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// checkReactor instantiates the module once, checks its ABI version and that
// it implements every tool its manifest names, and closes the instance.
func (r *Registry) checkReactor(ctx context.Context, p *Plugin) error {
	name := p.Manifest.Name
	exports := p.compiled.Exports()
	for _, want := range []string{abi.ExportVersion, abi.ExportCall} {
		if !slices.Contains(exports, want) {
			return fmt.Errorf("plugin %s: module does not export %s: not an aiod ABI v%d reactor (build with -buildmode=c-shared and the aiod SDK, or set \"form\": \"command\")", name, want, abi.Version)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.Grant.Timeout)
	defer cancel()
	inst, err := p.compiled.Instantiate(ctx)
	if err != nil {
		return err
	}
	call := &hostfn.Call{Plugin: name, Owner: DefaultOwner, Grant: p.Grant, Log: p.log, MaxOutput: p.Grant.MaxResultBytes}
	v, err := inst.Call(ctx, call, abi.ExportVersion)
	if err != nil {
		inst.Close(ctx)
		return fmt.Errorf("plugin %s: %s: %w", name, abi.ExportVersion, err)
	}
	if v != abi.Version {
		inst.Close(ctx)
		return fmt.Errorf("plugin %s: module implements abi version %d, this host speaks abi %d", name, v, abi.Version)
	}
	ret, err := inst.Call(ctx, call, abi.ExportCall, abi.OpDescribe, 0, 0)
	if err != nil || ret != abi.RetOK {
		inst.Close(ctx)
		return fmt.Errorf("plugin %s: describe failed (code %d): %v", name, ret, err)
	}
	var desc struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(call.Output, &desc); err != nil {
		inst.Close(ctx)
		return fmt.Errorf("plugin %s: describe returned invalid JSON: %w", name, err)
	}
	listed := make([]string, len(desc.Tools))
	for i, t := range desc.Tools {
		listed[i] = t.Name
	}
	return p.keepChecked(ctx, inst, listed)
}

// keepChecked closes inst, just checked, and fails if the manifest names a
// tool the module does not list (listed: the names its describe gave).
// No instance is kept: a plugin holds none until it is first called (13
// idle instances were 39 MiB of an idle aiod; the first call instantiates,
// about 10 ms; RATIONALE, "Footprint").
func (p *Plugin) keepChecked(ctx context.Context, inst runtime.Instance, listed []string) error {
	have := make(map[string]bool, len(listed))
	for _, n := range listed {
		have[n] = true
	}
	for _, t := range p.Manifest.Tools {
		if !have[t.Name] {
			inst.Close(ctx)
			return fmt.Errorf("plugin %s: manifest names tool %q, which the module does not list", p.Manifest.Name, t.Name)
		}
	}
	inst.Close(ctx)
	return nil
}

func (p *Plugin) pool(owner string) *pool {
	if v, ok := p.pools.Load(owner); ok {
		return v.(*pool)
	}
	max := p.Grant.MaxInstances
	if p.ownerMax != nil {
		if n := p.ownerMax(owner); n > 0 {
			max = min(max, n)
		}
	}
	np := newPool(max, func(ctx context.Context) (runtime.Instance, error) {
		return p.instantiate(ctx, owner, true)
	})
	if p.slots != nil {
		np.onIdle = p.slots.idled
	}
	v, loaded := p.pools.LoadOrStore(owner, np)
	if !loaded && p.closed.Load() {
		np.close()
	}
	return v.(*pool)
}

// get takes an instance of owner's pool: the pool it came from, to give it
// back to. A pool the janitor retired meanwhile is left for a new one.
func (p *Plugin) get(ctx context.Context, owner string) (*pool, runtime.Instance, error) {
	for {
		pl := p.pool(owner)
		inst, err := pl.get(ctx)
		if err == errRetired {
			p.pools.CompareAndDelete(owner, pl)
			continue
		}
		return pl, inst, err
	}
}

// prewarmMax bounds the instances prewarm makes per owner.
const prewarmMax = 16

// prewarmBudget bounds how long prewarm delays a swap: past it (and once
// it has made one instance) it stops, and the new version's pools grow on
// demand. Without it a version replaced after a burst (16 instances in
// calls at once) held its successor back ~300 ms under load.
var prewarmBudget = 100 * time.Millisecond

// prewarm gives p, a new version of prev, as many warm instances per owner
// as prev had in calls at once (at most prewarmMax, within prewarmBudget),
// before p is swapped in: otherwise every call that finds the new pool
// empty right after a swap under load pays an instantiation. Not as many
// as prev has live: its idle instances are the high-water mark of past
// bursts (and of its own prewarm), which each swap would pay for again; a
// pool short of instances grows on demand. Instances are made on loaders()
// goroutines; a failure stops warming (calls instantiate as usual then).
// It returns how many it made.
func (p *Plugin) prewarm(ctx context.Context, prev *Plugin) int {
	type job struct {
		owner string
		pool  *pool
	}
	var jobs []job
	prev.pools.Range(func(k, v any) bool {
		owner := k.(string)
		n := min(v.(*pool).inUsePeak(), prewarmMax, p.Grant.MaxInstances)
		np := p.pool(owner)
		for i := np.size(); i < n; i++ {
			jobs = append(jobs, job{owner, np})
		}
		return true
	})
	if len(jobs) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, p.Grant.Timeout)
	defer cancel()
	work := make(chan job)
	var wg sync.WaitGroup
	var failed atomic.Bool
	var made atomic.Int32
	until := time.Now().Add(prewarmBudget)
	for range min(len(jobs), loaders()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if failed.Load() || (made.Load() > 0 && time.Now().After(until)) {
					continue
				}
				inst, err := p.instantiate(ctx, j.owner, false)
				if err == errNoSlot {
					continue // the owner is at its instances quota
				}
				if err != nil {
					failed.Store(true)
					p.log.Warn("prewarm stopped", "owner", j.owner, "err", err)
					continue
				}
				j.pool.add(inst)
				made.Add(1)
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	return int(made.Load())
}

// IdleInstances reports the idle instances of owner's pool (for tests and
// metrics).
func (p *Plugin) IdleInstances(owner string) int {
	if v, ok := p.pools.Load(owner); ok {
		return v.(*pool).size()
	}
	return 0
}

func (r *Registry) releasePlugin(p *Plugin) {
	if p.refs.Add(-1) == 0 {
		if p.ready != nil {
			<-p.ready // a loader is still working on it
		}
		p.close()
	}
}

// provision runs Provision of every family with a Lifecycle, in order;
// p.families lists the families up to the first failure, so close cleans
// up exactly those provisioned.
func (p *Plugin) provision(ctx context.Context, fams []hostfn.Family) error {
	for _, f := range fams {
		if lc, ok := f.(hostfn.Lifecycle); ok {
			if err := lc.Provision(ctx, p.Grant); err != nil {
				return fmt.Errorf("provision family %q: %w", f.Name(), err)
			}
		}
		p.families = append(p.families, f)
	}
	return nil
}

// close runs when the last reference is released: calls in flight hold
// one, so they finish before the families clean up.
func (p *Plugin) close() {
	if !p.closed.CompareAndSwap(false, true) {
		return
	}
	p.pools.Range(func(_, v any) bool { v.(*pool).close(); return true })
	if p.mod != nil {
		p.mod.release()
	}
	for i := len(p.families) - 1; i >= 0; i-- {
		if lc, ok := p.families[i].(hostfn.Lifecycle); ok {
			lc.Cleanup(p.Grant)
		}
	}
	p.log.Info("plugin unloaded")
}

func (r *Registry) janitor() {
	defer r.stopped.Done()
	every := min(r.opts.IdleTimeout/2, 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			if !r.opts.KeepCompiled {
				if n := r.modules.rest(now.Add(-r.opts.IdleTimeout)); n > 0 {
					r.log.Debug("dormant modules", "count", n)
					if r.opts.Rested != nil {
						r.opts.Rested()
					}
				}
			}
			cat := r.cat.Load()
			for _, p := range cat.Plugins {
				p.pools.Range(func(k, v any) bool {
					keep := 0
					if k == DefaultOwner {
						keep = 1
					}
					if n := v.(*pool).evict(now.Add(-r.opts.IdleTimeout), keep); n > 0 {
						p.log.Debug("evicted idle instances", "owner", k, "count", n)
					}
					// an owner with no instance left keeps no pool
					if k != DefaultOwner && v.(*pool).retire() {
						p.pools.CompareAndDelete(k, v)
					}
					return true
				})
			}
		}
	}
}

// Rest drops the machine code of every module that has no instance now
// (unless Options.KeepCompiled), and counts them. The host calls it once
// the start-up load ends: nothing has been called yet, and what is called
// later compiles again from the engine's cache.
func (r *Registry) Rest() int {
	if r.opts.KeepCompiled {
		return 0
	}
	n := r.modules.rest(time.Now())
	r.log.Info("dormant modules", "count", n)
	return n
}

// Dormant reports whether p's machine code is dropped until its next
// call (lazy.go).
func (p *Plugin) Dormant() bool {
	l, ok := p.compiled.(*lazyCompiled)
	return ok && l.dormant()
}

// Close unloads everything. Idempotent.
func (r *Registry) Close(ctx context.Context) error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(r.stop)
	r.stopped.Wait()
	r.loading.Wait()
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
