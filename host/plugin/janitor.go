package plugin

// This file is the janitor: idle instances evicted and unused machine
// code dropped, on a timer.

import (
	"time"

	"github.com/aiodhq/aiod/host/runtime"
)

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
				if n := r.modules.rest(now.Add(-r.opts.IdleTimeout), false); n > 0 {
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
						if o, ok := p.compiled.(runtime.Owned); ok {
							o.Forget(k.(string)) // and no snapshot
						}
					}
					return true
				})
			}
		}
	}
}

// Rest drops the machine code of every module that has no instance now
// (unless Options.KeepCompiled), but for those prewoken (prewake.go), and
// counts them. The host calls it once
// the start-up load ends: nothing has been called yet, and what is called
// later compiles again from the engine's cache.
func (r *Registry) Rest() int {
	if r.opts.KeepCompiled {
		return 0
	}
	n := r.modules.rest(time.Now(), true)
	r.log.Info("dormant modules", "count", n)
	return n
}

// Dormant reports whether p's machine code is dropped until its next
// call (lazy.go).
func (p *Plugin) Dormant() bool {
	l, ok := p.compiled.(*lazyCompiled)
	return ok && l.dormant()
}
