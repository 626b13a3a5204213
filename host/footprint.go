package host

import (
	"context"
	goruntime "runtime"
	"runtime/debug"
	"time"

	"github.com/aiodhq/aiod/host/plugin"
)

// releaseAfterLoad makes the idle process small once every listed plugin
// is loaded (or refused): the modules nothing has called yet go dormant
// (their machine code is dropped, plugin/lazy.go), and the heap the
// start-up compiles left behind is returned to the operating system.
// Decoding and compiling 13 modules allocates several times what the
// compiled modules keep; without this the garbage stays resident (Go
// returns freed heap lazily, minutes later). It runs once (the loaders end
// at the latest when the registry closes).
func releaseAfterLoad(reg *plugin.Registry) {
	if reg.WaitLoaded(context.Background()) != nil {
		return
	}
	if reg.Rest() > 0 {
		releaseRested()
		return
	}
	debug.FreeOSMemory()
}

// releaseRested returns to the OS what modules put to sleep freed: the
// engine unmaps a closed module's code from a finalizer (one collection
// queues them, and they run soon after it), then the heap, then the
// binary's pages the compiles read (footprint_linux.go).
func releaseRested() {
	goruntime.GC()
	time.Sleep(50 * time.Millisecond)
	debug.FreeOSMemory()
	dropExecutablePages()
}
