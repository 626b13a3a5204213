package plugin

// This file is background loading: the plugins listed at start-up that
// compile after the catalogue is served, and the waits on them.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	goruntime "runtime"

	"github.com/aiodhq/aiod/host/hostfn"
)

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
	// awake: the module's record says it was awake (prewake.go): its
	// loader starts first and does not queue
	awake bool
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
	// a plugin a call waits for goes first, without waiting for a loader,
	// and so does one whose module was awake when the last run stopped
	// (prewake.go): its listing is quick, its compile runs beside
	held := false
	if !j.awake {
		select {
		case r.loadSem <- struct{}{}:
			held = true
		case <-j.p.want:
		case <-r.stop:
			j.p.loadErr = errors.New("registry closed")
			close(j.p.ready)
			return
		}
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
	configured := err == nil && j.p.Manifest.Configured
	if configured {
		// its tools come from its configuration: they are listed once
		// configure has run, in a new generation (rebuild, below)
		err = r.configure(ctx, j.p)
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
	if err != nil || configured {
		r.rebuild()
	}
}

// rebuild swaps in a new generation of the catalogue without the plugins
// whose start-up load failed, and with the tools of those configured
// since.
func (r *Registry) rebuild() {
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
		r.log.Error("rebuild the catalogue", "err", err)
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
