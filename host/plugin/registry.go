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
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// DefaultOwner is the owner (tenant) id used when none is given.
const DefaultOwner = "default"

// DefaultIdleTimeout is Options.IdleTimeout when none is given.
const DefaultIdleTimeout = 5 * time.Minute

// ErrUnknownTool is returned by CallTool for a name not in the catalogue.
var ErrUnknownTool = errors.New("unknown tool")

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
	Logger      *slog.Logger
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
	onSwap  []func(*Catalog)
}

// Catalog is one immutable generation of the tool catalogue.
type Catalog struct {
	Generation uint64
	Plugins    []*Plugin
	Tools      []*Tool
	byName     map[string]*Tool
	listJSON   []byte
	surface    // prompts, resources, resource templates (surface.go)
}

// Tool is one tool in a catalogue.
type Tool struct {
	Decl   caps.Tool
	Plugin *Plugin
}

// Lookup finds a tool by name.
func (c *Catalog) Lookup(name string) *Tool { return c.byName[name] }

// ToolsJSON is the pre-rendered JSON array of the tool declarations, in
// catalogue order.
func (c *Catalog) ToolsJSON() []byte { return c.listJSON }

// Plugin is a loaded plugin.
type Plugin struct {
	Manifest *caps.Manifest
	Grant    *caps.Grant
	Digest   string // hex sha256 of the module
	Builtin  bool
	Source   string // where it was loaded from

	key      string // digest + manifest digest + grant: reuse across reloads
	compiled runtime.Compiled
	families []hostfn.Family // linked; those with a Lifecycle are provisioned
	command  bool
	pools    sync.Map     // owner -> *pool
	refs     atomic.Int64 // catalogues holding it + calls in flight
	log      *slog.Logger
	closed   atomic.Bool
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
	r := &Registry{opts: opts, log: opts.Logger, stop: make(chan struct{})}
	r.calls.New = func() any { return &hostfn.Call{} }
	r.cat.Store(&Catalog{byName: map[string]*Tool{}, listJSON: []byte("[]")})
	// Plugins that fail to load are skipped: the registry serves the rest
	// and the joined load errors are returned beside it.
	loadErr := r.Reload(ctx)
	r.stopped.Add(1)
	go r.janitor()
	return r, loadErr
}

// OnSwap registers f to run after each catalogue swap (for list_changed).
func (r *Registry) OnSwap(f func(*Catalog)) {
	r.mu.Lock()
	r.onSwap = append(r.onSwap, f)
	r.mu.Unlock()
}

// Catalog returns the current generation.
func (r *Registry) Catalog() *Catalog { return r.cat.Load() }

type source struct {
	name     string
	manifest []byte
	wasm     []byte
	builtin  bool
	where    string
}

// Reload re-reads the built-ins and the plugins directory and swaps in a
// new catalogue. Unchanged plugins are carried over warm. A plugin that
// fails to load is skipped with a logged error; the rest still load. The
// returned error joins the individual load errors.
func (r *Registry) Reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return errors.New("registry closed")
	}
	old := r.cat.Load()
	reuse := map[string]*Plugin{}
	for _, p := range old.Plugins {
		reuse[p.key] = p
	}
	var srcs []source
	var errs []error
	if r.opts.Builtins != nil {
		s, err := readPackages(r.opts.Builtins, ".", true, "builtin")
		errs = append(errs, err...)
		srcs = append(srcs, s...)
	}
	if r.opts.Dir != "" {
		s, err := readPackages(os.DirFS(r.opts.Dir), ".", false, r.opts.Dir)
		errs = append(errs, err...)
		srcs = append(srcs, s...)
	}
	next := &Catalog{Generation: old.Generation + 1, byName: map[string]*Tool{}}
	seenPlugin := map[string]bool{}
	for _, s := range srcs {
		p, err := r.load(ctx, s, reuse)
		if err != nil {
			r.log.Error("plugin refused", "plugin", s.name, "source", s.where, "err", err)
			errs = append(errs, err)
			continue
		}
		if seenPlugin[p.Manifest.Name] {
			err := fmt.Errorf("plugin %s from %s: a plugin with that name is already loaded", p.Manifest.Name, s.where)
			r.log.Warn("plugin refused", "err", err)
			errs = append(errs, err)
			r.releasePlugin(p)
			continue
		}
		seenPlugin[p.Manifest.Name] = true
		next.Plugins = append(next.Plugins, p)
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
	// on failure, the half-built generation gives back its references
	// (plugins carried over from old keep the old generation's)
	abandon := func() {
		for _, p := range next.Plugins {
			r.releasePlugin(p)
		}
	}
	if err := next.renderSurface(); err != nil {
		abandon()
		return fmt.Errorf("render prompts and resources: %w", err)
	}
	decls := make([]caps.Tool, len(next.Tools))
	for i, t := range next.Tools {
		decls[i] = t.Decl
	}
	lj, err := json.Marshal(decls)
	if err != nil {
		abandon()
		return fmt.Errorf("render tools: %w", err)
	}
	next.listJSON = lj
	r.cat.Store(next)
	// drop the old generation's references
	for _, p := range old.Plugins {
		r.releasePlugin(p)
	}
	for _, f := range r.onSwap {
		f(next)
	}
	r.log.Info("catalogue loaded", "generation", next.Generation, "plugins", len(next.Plugins), "tools", len(next.Tools))
	return errors.Join(errs...)
}

// readPackages lists plugin packages: each subdirectory holding a
// manifest.json.
func readPackages(fsys fs.FS, dir string, builtin bool, where string) ([]source, []error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, []error{fmt.Errorf("read plugins %s: %w", where, err)}
	}
	var out []source
	var errs []error
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
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		pdir := path.Join(dir, e.Name())
		mb, err := fs.ReadFile(fsys, path.Join(pdir, "manifest.json"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			errs = append(errs, fmt.Errorf("plugin %s: %w", e.Name(), err))
			continue
		}
		m, err := caps.ParseManifest(mb)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s (%s): %w", e.Name(), filepath.Join(where, e.Name()), err))
			continue
		}
		modName := m.Module
		if modName == "" {
			modName = "plugin.wasm"
		}
		wasm, err := readLimited(fsys, path.Join(pdir, modName), 256<<20)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: module: %w", m.Name, err))
			continue
		}
		out = append(out, source{name: m.Name, manifest: mb, wasm: wasm, builtin: builtin, where: filepath.Join(where, e.Name())})
	}
	return out, errs
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

func (r *Registry) load(ctx context.Context, s source, reuse map[string]*Plugin) (*Plugin, error) {
	m, err := caps.ParseManifest(s.manifest)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(s.wasm)
	digest := hex.EncodeToString(sum[:])
	if m.SHA256 != "" && m.SHA256 != digest {
		return nil, fmt.Errorf("plugin %s: module digest %s does not match the manifest's sha256 %s", m.Name, digest, m.SHA256)
	}
	policy := r.opts.Policy
	if s.builtin && r.opts.BuiltinPolicy != nil {
		policy = r.opts.BuiltinPolicy
	}
	grant := policy.Allow(m, r.opts.Env)
	msum := sha256.Sum256(s.manifest)
	key := fmt.Sprintf("%s/%x/%v/%v", digest, msum[:8], s.builtin, grantKey(grant))
	if p, ok := reuse[key]; ok && !p.closed.Load() {
		p.refs.Add(1)
		return p, nil
	}
	if len(s.wasm) < 8 || string(s.wasm[:4]) != "\x00asm" {
		return nil, fmt.Errorf("plugin %s: %s is not a wasm module", m.Name, s.where)
	}
	fams := []hostfn.Family{hostfn.Core()}
	if r.opts.Families != nil {
		fams = append(fams, r.opts.Families(grant)...)
	}
	log := r.log.With("plugin", m.Name)
	compiled, err := r.opts.Engine.Compile(ctx, s.wasm, runtime.Config{
		Name:        m.Name,
		Families:    fams,
		MemoryPages: grant.MemoryPages,
		Fuel:        uint64(max(grant.Fuel, 0)),
		Stderr:      &logWriter{log: log, left: 64 << 10},
	})
	if err != nil {
		// The engine names the import; which capability it belongs to,
		// and whether that was granted, is the registry's to say.
		var ie *runtime.ImportError
		if errors.As(err, &ie) {
			if fam, ok := strings.CutPrefix(ie.Module, "aiod:"); ok && slices.Contains(caps.Families, caps.Family(fam)) {
				ie.Family = fam
				ie.Unimplemented = grant.Has(caps.Family(fam)) // granted, yet not linked: no such family here
			}
		}
		return nil, err
	}
	p := &Plugin{Manifest: m, Grant: grant, Digest: digest, Builtin: s.builtin, Source: s.where,
		key: key, compiled: compiled, command: m.Form == "command", log: log}
	p.refs.Add(1)
	if err := p.provision(ctx, fams); err != nil {
		p.close()
		return nil, fmt.Errorf("plugin %s: %w", m.Name, err)
	}
	if !p.command {
		if err := r.checkReactor(ctx, p); err != nil {
			p.close()
			return nil, err
		}
	}
	if grant.Fuel > 0 && !runtime.MetersFuel(r.opts.Engine) {
		log.Info("fuel not metered: this engine applies the deadline only", "fuel", grant.Fuel, "timeout", grant.Timeout)
	}
	log.Info("plugin loaded", "version", m.Version, "digest", digest[:12], "tools", len(m.Tools), "families", grant.GrantedFamilies())
	return p, nil
}

func grantKey(g *caps.Grant) string {
	b, _ := json.Marshal(struct {
		F []caps.Family
		G *caps.Grant
	}{g.GrantedFamilies(), g})
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// checkReactor instantiates the module once, checks its ABI version and that
// it implements every tool its manifest names, and keeps the instance warm.
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
	have := map[string]bool{}
	for _, t := range desc.Tools {
		have[t.Name] = true
	}
	for _, t := range p.Manifest.Tools {
		if !have[t.Name] {
			inst.Close(ctx)
			return fmt.Errorf("plugin %s: manifest names tool %q, which the module does not implement", name, t.Name)
		}
	}
	p.pool(DefaultOwner).add(inst)
	return nil
}

func (p *Plugin) pool(owner string) *pool {
	if v, ok := p.pools.Load(owner); ok {
		return v.(*pool)
	}
	np := newPool(p.Grant.MaxInstances, func(ctx context.Context) (runtime.Instance, error) {
		return p.compiled.Instantiate(ctx)
	})
	v, loaded := p.pools.LoadOrStore(owner, np)
	if !loaded && p.closed.Load() {
		np.close()
	}
	return v.(*pool)
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
	p.compiled.Close(context.Background())
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
					return true
				})
			}
		}
	}
}

// Close unloads everything. Idempotent.
func (r *Registry) Close(ctx context.Context) error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(r.stop)
	r.stopped.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	cat := r.cat.Load()
	for _, p := range cat.Plugins {
		r.releasePlugin(p)
	}
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
