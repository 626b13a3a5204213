package plugin

// This file wakes at start the modules that were awake when the last run
// of the same program noted their state: a restart (a deploy, a crash, an
// upgrade of the configuration) keeps the modules in use compiled, so
// their first calls do not wait for a compile (RATIONALE.md, "Footprint:
// dormant modules").
//
// A module's checked record (checked.go) notes its state after each
// change: awake once a call woke it or the end of the start-up load found
// it in use, asleep once the end of the start-up load or the idle timeout
// put it to sleep. A start that lists the module
// dormant from a record noted awake compiles it in the background at
// once: its loader does not queue behind the others, and the compiles of
// such modules run one at a time (the loaders and calls have the other
// core). The end of the start-up load leaves it awake; the idle timeout
// puts it to sleep as any other, and notes it asleep.

import (
	"context"
	"log/slog"
	"time"
)

// prewake compiles l in the background (one prewake at a time), unless
// the registry closes first.
func (r *Registry) prewake(l *lazyCompiled, log *slog.Logger) {
	r.bgMu.Lock()
	defer r.bgMu.Unlock()
	if r.prewakeOff {
		return
	}
	l.prewoken.Store(true)
	l.called.Store(true) // as good as in use until the idle timeout
	r.prewakes.Add(1)
	go func() {
		defer r.prewakes.Done()
		select {
		case r.prewakeSem <- struct{}{}:
		case <-r.stop:
			return
		}
		defer func() { <-r.prewakeSem }()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-r.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		t0 := time.Now()
		if _, err := l.acquire(ctx); err != nil {
			log.Info("prewake failed: the first call compiles it", "err", err)
			return
		}
		l.done()
		log.Info("plugin prewoken", "ms", float64(time.Since(t0).Microseconds())/1000)
	}()
}

// noteState is a module's record note (lazyCompiled.note): it writes p's
// record with the module's state, unless the registry has closed (Close
// notes every module's state last, then turns notes off).
func (r *Registry) noteState(p *Plugin, exports []string) func(awake bool) {
	return func(awake bool) {
		r.bgMu.Lock()
		defer r.bgMu.Unlock()
		if !r.notesOff {
			r.checked.store(p, exports, awake)
		}
	}
}

// noteAll notes every module's state (Close: the state the process had
// when it stopped), then turns notes off.
func (r *Registry) noteAll() {
	for _, l := range r.modules.lazy() {
		l.noteState()
	}
	r.bgMu.Lock()
	r.notesOff = true
	r.bgMu.Unlock()
}

// noteAwake reports whether p's record says its module was awake (its
// start-up loader then goes first: prewake).
func (r *Registry) noteAwake(p *Plugin) bool {
	if !r.opts.Prewake || p.command {
		return false
	}
	_, awake := r.checked.lookup(p)
	return awake
}
