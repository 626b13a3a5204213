package hooks

import (
	"sync/atomic"

	"github.com/aiodhq/aiod/host/caps"
)

// atomicHooks holds a hooks list swapped whole on a reload.
type atomicHooks struct{ p atomic.Pointer[[]caps.Hook] }

func (a *atomicHooks) store(hs []caps.Hook) { a.p.Store(&hs) }

func (a *atomicHooks) load() []caps.Hook {
	if p := a.p.Load(); p != nil {
		return *p
	}
	return nil
}
