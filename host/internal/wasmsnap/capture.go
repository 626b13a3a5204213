package wasmsnap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aiodhq/aiod/host/runtime"
)

// A capturing initialisation (an owner's first instance, whose state
// becomes the owner's snapshot) may reach nothing of the host but the
// clock, randomness and its own memory: each engine refuses every host
// function family then (its own way: wazero's callFrom panics, wasmtime's
// hostFunc traps) with ErrInitReach, and gives the guest a CapturingWriter
// for stdout and stderr. Either refuses the snapshot: the module starts as
// before (EndCapture; Owners records the refusal).

// ErrInitReach is the refusal of a host function called by a capturing
// initialisation, and the reason the module is not snapshotted.
var ErrInitReach = errors.New("the initialisation calls a host function family")

// ErrInitWrites is the reason a module whose capturing initialisation
// wrote to stdout or stderr (CapturingWriter.Wrote) is not snapshotted.
var ErrInitWrites = errors.New("the initialisation writes to stdout or stderr")

// CapturingWriter is a capturing initialisation's stdout and stderr: it
// marks that the initialisation wrote, and passes the bytes on to Forward
// (discarded when nil). Safe for concurrent use.
type CapturingWriter struct {
	Forward io.Writer

	mu    sync.Mutex
	wrote bool
}

func (w *CapturingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.wrote = true
	w.mu.Unlock()
	if w.Forward == nil {
		return len(p), nil
	}
	return w.Forward.Write(p)
}

// Wrote reports whether anything was written.
func (w *CapturingWriter) Wrote() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wrote
}

// EndCapture is how every Engine.Capture ends, given what the capturing
// instantiation returned (inst, used only when err is nil; err is, or
// wraps, ErrInitReach when the initialisation called a host function,
// and the engine has then closed what it had of the instance) and the
// writer it gave the guest: a refused capture falls back to an instance
// from scratch (e.Instantiate), returned with the reason; a failed one
// returns its error alone; otherwise take captures the instance's state.
func EndCapture[S any](ctx context.Context, e Engine[S], inst runtime.Instance, err error, w *CapturingWriter, take func() (S, error)) (runtime.Instance, S, error) {
	var none S
	switch {
	case errors.Is(err, ErrInitReach):
		// Refused, not failed: start as before (the reason is recorded).
		inst, err := e.Instantiate(ctx)
		if err != nil {
			return nil, none, err
		}
		return inst, none, ErrInitReach
	case err != nil:
		return nil, none, err
	case w.Wrote():
		return inst, none, ErrInitWrites
	}
	snap, err := take()
	if err != nil {
		return inst, none, fmt.Errorf("capture: %w", err)
	}
	return inst, snap, nil
}
