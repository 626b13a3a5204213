package plugin

// This file is Reload: re-read the packages, keep what did not change,
// load the rest, and swap in the next generation.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

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
	Errors []string `json:"errors"`
	// Refused are the parts of configured plugins' configurations they
	// refused ("<plugin>: <name>: <reason>"), in the new generation.
	Refused    []string `json:"refused,omitempty"`
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
	srcs = append(srcs, readRemotes(r.opts.Remotes, r.background.Load(), &r.digests)...)
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
			if err == nil && p == nil {
				continue // a configured plugin without a configuration
			}
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
			if errors.Is(err, ErrSignatureRequired) && !r.stillTrusted(prev) {
				// signatures became required, or its key is no longer
				// trusted: the previous version does not keep serving
				r.log.Warn("signature required: the previous version is unloaded too", "plugin", prev.Manifest.Name, "version", prev.Manifest.Version)
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
		for _, f := range p.Refused() {
			rep.Refused = append(rep.Refused, p.Manifest.Name+": "+f.Name+": "+f.Reason)
		}
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

// stillTrusted reports whether p was signed by a key the policy still
// trusts (r.mu held).
func (r *Registry) stillTrusted(p *Plugin) bool {
	return p.Signer != "" && r.opts.Policy.Keys[p.Signer] != nil
}
