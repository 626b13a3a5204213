package plugin

// This file loads one plugin: its grant, its families, its compiled
// module (shared across reloads when unchanged), and the reactor check.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/oci"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/sdk/abi"
)

// load loads the plugin of s (nil, nil for a configured plugin without a
// configuration: not loaded).
func (r *Registry) load(ctx context.Context, s source, reuse map[string]*Plugin, prev *Plugin) (*Plugin, error) {
	p, fams, err := r.prepare(s, reuse)
	if err != nil || p == nil {
		return p, err
	}
	if fams == nil { // carried over
		if p.Manifest.Configured {
			return r.reconfigure(ctx, s, p) // discovery runs at every reload
		}
		return p, nil
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
	if p.Manifest.Configured {
		if err := r.configure(ctx, p); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// ErrSignatureRequired marks a plugin refused for want of a signature by
// a trusted key (caps.Policy.SignaturesRequired).
var ErrSignatureRequired = errors.New("signature required")

// prepare does the checks that need no compilation (manifest, digest, wasm
// magic, grant) and makes the Plugin. A plugin carried over from reuse is
// returned with nil fams; a configured plugin without a configuration is
// not made (nil, nil, nil).
func (r *Registry) prepare(s source, reuse map[string]*Plugin) (*Plugin, []hostfn.Family, error) {
	m := s.m
	var config json.RawMessage
	if m.Configured {
		// only a built-in gets a configuration: one from --plugins-dir
		// that calls itself machine_tools must not get the registered
		// tools' variables
		if s.builtin {
			config = r.configurationOf(m.Name)
		}
		if config == nil {
			return nil, nil, nil
		}
	}
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
	var signer string
	if !s.builtin && len(policy.Keys) > 0 {
		var err error
		signer, err = oci.VerifyPackage(s.artifact, s.sigs, s.manifest, digest, policy.Keys)
		if err != nil && policy.SignaturesRequired(r.opts.RequirePins) {
			return nil, nil, fmt.Errorf("plugin %s (%s): %w: %w", m.Name, s.where, ErrSignatureRequired, err)
		}
	}
	grant := policy.Allow(m, r.opts.Env)
	msum := sha256.Sum256(s.manifest)
	gkey := grantKey(grant)
	key := fmt.Sprintf("%s/%x/%v/%v", digest, msum[:8], s.builtin, gkey)
	if config != nil {
		key += configKey(config)
	}
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
	fams := append([]hostfn.Family{core.New()}, gated...)
	if m.Form == abi.FormExtism {
		fams = r.extismFamilies(grant, gated)
	}
	p := &Plugin{Manifest: m, Grant: grant, Digest: digest, Builtin: s.builtin, Source: s.where,
		key: key, modKey: fmt.Sprintf("%s/%s/%s/%s", digest, m.Name, m.Form, gkey), command: m.Form == "command", log: r.log.With("plugin", m.Name), ownerMax: r.opts.OwnerInstances}
	p.slots = r.slots
	p.Signer = signer
	p.config = config
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
	// not known yet: read now, before any work; but a built-in, whose
	// manifest pins its digest and whose bytes are the program's own: it
	// is read and checked when it compiles (a dormant one at its wake)
	if s.digest == "" && !s.builtin {
		if _, err := read(); err != nil {
			return err
		}
	}
	t0 := time.Now()
	reused, dormant, awake, err := r.compile(ctx, p, read, s, fams)
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
	// again (an A/B swap back, a rollback, a start of the same program):
	// no instantiation to check it
	skip := (reused || dormant) && p.Manifest.Form != abi.FormExtism && p.mod.hasPassed(p.key)
	if !p.command && !skip {
		if err := check(ctx, p); err != nil {
			p.close()
			return err
		}
		if p.Manifest.Form != abi.FormExtism {
			r.checked.store(p, p.compiled.Exports(), false)
		}
	}
	p.mod.checked(p.key)
	if l, ok := p.compiled.(*lazyCompiled); ok && !p.command && p.Manifest.Form != abi.FormExtism {
		// its record follows the module's sleeps and wakes (prewake.go)
		l.setNote(awake, r.noteState(p, l.Exports()))
		if dormant && awake && r.opts.Prewake {
			r.prewake(l, p.log)
		}
	}
	t2 := time.Now()
	warmed := 0
	if !p.command && prev != nil {
		warmed = p.prewarm(ctx, prev)
	}
	if grant.Fuel > 0 && !runtime.MetersFuel(r.opts.Engine) {
		log.Info("fuel not metered: this engine applies the deadline only", "fuel", grant.Fuel, "timeout", grant.Timeout)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	log.Info("plugin loaded", "version", m.Version, "digest", p.Digest[:12], "tools", len(m.Tools), "configured", m.Configured, "families", grant.GrantedFamilies(),
		"compiled", !reused && !dormant, "dormant", dormant, "checked", !skip, "compile_ms", ms(t1.Sub(t0)), "check_ms", ms(t2.Sub(t1)), "prewarm_ms", ms(time.Since(t2)), "prewarmed", warmed)
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
//
// A reactor that passed its check with the same inputs at an earlier
// start of this program (checked.go) is not compiled: it starts dormant
// (dormant true), its first use compiles it.
//
// awake reports that the record of a dormant module says it was awake
// when the program that wrote it last noted its state (prewake.go).
func (r *Registry) compile(ctx context.Context, p *Plugin, read func() ([]byte, error), s *source, fams []hostfn.Family) (reused, dormant, awake bool, err error) {
	m, grant := p.Manifest, p.Grant
	cfg := runtime.Config{
		Name:        m.Name,
		Families:    fams,
		MemoryPages: grant.MemoryPages,
		Fuel:        uint64(max(grant.Fuel, 0)),
		Stderr:      &logWriter{log: p.log, left: 64 << 10},
	}
	var noticed sync.Map // a notice is logged once, not at every wake
	cfg.Notice = func(s string) {
		if _, seen := noticed.LoadOrStore(s, true); !seen {
			p.log.Info("engine notice", "notice", s)
		}
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
		r.woke()
		return c, nil
	}
	if mod := r.modules.get(p.modKey); mod != nil {
		p.mod, p.compiled = mod, mod.compiled
		if l, ok := mod.compiled.(*lazyCompiled); ok && s.wasm != nil {
			reread = s.reader(p.Digest)
			l.setWake(wake) // its bytes are where this version's are
		}
		return true, false, false, nil
	}
	if !p.command && m.Form != abi.FormExtism {
		if exports, awake := r.checked.lookup(p); exports != nil {
			reread = s.reader(p.Digest)
			p.mod = r.modules.add(p.modKey, m.Name, newDormant(exports, wake))
			p.compiled = p.mod.compiled
			p.mod.checked(p.key)
			return false, true, awake, nil
		}
	}
	wasm, err := read()
	if err != nil {
		return false, false, false, err
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
		return false, false, false, err
	}
	p.mod = r.modules.add(p.modKey, m.Name, newLazy(compiled, wake))
	p.compiled = p.mod.compiled
	return false, false, false, nil
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
