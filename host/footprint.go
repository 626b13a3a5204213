package host

import (
	"context"
	"runtime/debug"

	"github.com/aiodhq/aiod/host/plugin"
)

// releaseAfterLoad returns the heap the start-up compiles left behind to
// the operating system once every listed plugin is loaded (or refused).
// Decoding and compiling 13 modules allocates several times what the
// compiled modules keep; without this the garbage stays resident (Go
// returns freed heap lazily, minutes later) and the idle process looks
// twice its size. It runs once (the loaders end at the latest when the
// registry closes).
func releaseAfterLoad(reg *plugin.Registry) {
	if reg.WaitLoaded(context.Background()) == nil {
		debug.FreeOSMemory()
	}
}
