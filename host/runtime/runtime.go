// Package runtime is the engine abstraction: compile a plugin module with a
// set of linked host function families, instantiate it, call it, close it.
// Nothing above this package imports an engine; host/runtime/wazero is the
// default implementation.
package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aiodhq/aiod/host/hostfn"
)

// Engine compiles modules. It is safe for concurrent use.
type Engine interface {
	// Compile validates and compiles wasm, linking the given families
	// (core is always linked by the caller's choice of families). It
	// refuses a module importing anything that is not linked, with an
	// *ImportError.
	Compile(ctx context.Context, wasm []byte, cfg Config) (Compiled, error)
	// Close releases the engine. Idempotent.
	Close(ctx context.Context) error
}

// Precompiler is an Engine that can compile a module ahead of time into its
// persistent cache (to warm a cache directory), without linking or checking
// imports. Optional: callers type-assert for it.
type Precompiler interface {
	Precompile(ctx context.Context, wasm []byte) error
}

// Config configures one compiled module.
type Config struct {
	// Name identifies the plugin in errors and logs.
	Name string
	// Families to link (their Defs become importable).
	Families []hostfn.Family
	// Stubs are families the module may import but that are not granted:
	// linked with functions that fail every call with Denied. Used only to
	// describe a module (manifest generation), never to serve calls.
	Stubs []hostfn.Family
	// MemoryPages caps linear memory (64 KiB pages).
	MemoryPages uint32
	// Fuel bounds the instructions each call (Instance.Call, or a whole
	// RunCommand, runtime start included) may execute, on an engine that
	// meters fuel (a FuelMeter); running out ends the call with ErrFuel.
	// Instantiation is bounded by its deadline only. 0 is unmetered. An
	// engine that does not meter ignores it: the deadline alone applies.
	Fuel uint64
	// Stderr receives the guest's WASI stdout and stderr (capped by the
	// caller's writer). Nil discards.
	Stderr io.Writer
	// Notice receives the engine's remarks about the module, once each
	// (why its instances start without a snapshot). Nil discards.
	Notice func(string)
}

// FuelMeter is an Engine that meters Config.Fuel. Optional: an engine that
// does not implement it (wazero) ignores Fuel.
type FuelMeter interface {
	MetersFuel() bool
}

// MetersFuel reports whether e meters Config.Fuel.
func MetersFuel(e Engine) bool {
	m, ok := e.(FuelMeter)
	return ok && m.MetersFuel()
}

// Compiled is a compiled module, safe for concurrent use.
type Compiled interface {
	// Exports lists exported function names.
	Exports() []string
	// Instantiate makes a fresh reactor instance (running _initialize).
	Instantiate(ctx context.Context) (Instance, error)
	// RunCommand runs the module as a WASI command (_start) with stdin,
	// collecting at most maxOut bytes of stdout.
	RunCommand(ctx context.Context, c *hostfn.Call, stdin []byte, maxOut int64) (stdout []byte, exitCode uint32, err error)
	// Close releases the compiled module. Idempotent.
	Close(ctx context.Context) error
}

// Owned is a Compiled that starts the instances of one owner (a tenant)
// from a snapshot of that owner's first initialised instance (RATIONALE.md,
// "Instances from snapshots"). Optional: InstantiateFor falls back to
// Instantiate.
type Owned interface {
	// InstantiateFor makes an instance for owner, as Instantiate does.
	InstantiateFor(ctx context.Context, owner string) (Instance, error)
	// Forget releases owner's snapshot (its live instances keep working).
	Forget(owner string)
}

// InstantiateFor makes an instance of c for owner: from owner's snapshot
// where c is Owned, else from scratch.
func InstantiateFor(ctx context.Context, c Compiled, owner string) (Instance, error) {
	if o, ok := c.(Owned); ok {
		return o.InstantiateFor(ctx, owner)
	}
	return c.Instantiate(ctx)
}

// Instance is one instantiated module. Not safe for concurrent use.
type Instance interface {
	// Call invokes the exported function name with i32 params, with c
	// visible to host functions, returning its i32 result.
	Call(ctx context.Context, c *hostfn.Call, name string, params ...uint64) (int32, error)
	// Close releases the instance. Idempotent.
	Close(ctx context.Context) error
}

// ImportError reports a module import that is not linked.
type ImportError struct {
	Plugin, Module, Name string
	// Family is the capability the import belongs to, "" if unknown. The
	// engine leaves it empty; the registry, which knows the grant, sets it.
	Family string
	// Unimplemented: the family was granted but this host does not
	// implement it (set by the registry, which knows the grant).
	Unimplemented bool
}

func (e *ImportError) Error() string {
	if e.Family != "" && e.Unimplemented {
		return fmt.Sprintf("plugin %s imports %s.%s, but this host does not implement the %q family", e.Plugin, e.Module, e.Name, e.Family)
	}
	if e.Family != "" {
		return fmt.Sprintf("plugin %s imports %s.%s, but capability %q is not granted", e.Plugin, e.Module, e.Name, e.Family)
	}
	return fmt.Sprintf("plugin %s imports %s.%s, which this host does not provide", e.Plugin, e.Module, e.Name)
}

// ErrTimeout, ErrMemory, ErrFuel and ErrTrap classify call failures.
var (
	ErrTimeout = errors.New("deadline exceeded")
	ErrMemory  = errors.New("memory limit exceeded")
	ErrFuel    = errors.New("fuel limit exceeded")
	ErrTrap    = errors.New("plugin trapped")
)

// OutputBuffer collects a WASI command's stdout up to Max bytes; past that
// every write fails and Over is set (the engines' RunCommand output cap).
type OutputBuffer struct {
	bytes.Buffer
	Max  int64
	Over bool
}

func (w *OutputBuffer) Write(p []byte) (int, error) {
	if int64(w.Len()+len(p)) > w.Max {
		w.Over = true
		return 0, errors.New("output limit exceeded")
	}
	return w.Buffer.Write(p)
}
