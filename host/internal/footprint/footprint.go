// Package footprint makes the idle host small: the modules nothing has
// called go dormant, the heap the start-up compiles left is returned to
// the operating system, and the binary's read-only pages those compiles
// read are dropped (Linux).
package footprint

import (
	"context"
	goruntime "runtime"
	"runtime/debug"
	"time"
)

// Loader is what AfterLoad needs of the plugin registry.
type Loader interface {
	// WaitLoaded returns once every listed plugin is loaded or refused.
	WaitLoaded(context.Context) error
	// Rest puts the modules nothing has called to sleep, and returns how
	// many.
	Rest() int
}

// AfterLoad makes the idle process small once every listed plugin
// is loaded (or refused): the modules nothing has called yet go dormant
// (their machine code is dropped, plugin/lazy.go), and the heap the
// start-up compiles left behind is returned to the operating system.
// Decoding and compiling 13 modules allocates several times what the
// compiled modules keep; without this the garbage stays resident (Go
// returns freed heap lazily, minutes later). It runs once (the loaders end
// at the latest when the registry closes).
func AfterLoad(reg Loader) {
	if reg.WaitLoaded(context.Background()) != nil {
		return
	}
	if reg.Rest() > 0 {
		ReleaseRested()
		return
	}
	debug.FreeOSMemory()
}

// ReleaseRested returns to the OS what modules put to sleep freed: the
// engine unmaps a closed module's code from a finalizer (one collection
// queues them, and they run soon after it), then the heap, then the
// binary's pages the compiles read (DropExecutablePages).
func ReleaseRested() {
	goruntime.GC()
	time.Sleep(50 * time.Millisecond)
	debug.FreeOSMemory()
	DropExecutablePages()
}
