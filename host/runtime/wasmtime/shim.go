//go:build cgo

package wasmtime

// The few C API entry points wasmtime-go v39 does not wrap. They are
// declared here (the library is linked by wasmtime-go's own cgo flags) and
// reached through the raw pointers of wasmtime-go's objects (rawptr).

/*
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasmtime_error wasmtime_error_t;
typedef struct wasi_config_t wasi_config_t;
typedef struct { size_t size; char *data; } aiod_byte_vec_t;

extern void wasmtime_store_epoch_deadline_callback(wasmtime_store_t *,
	wasmtime_error_t *(*)(wasmtime_context_t *, void *, uint64_t *, uint8_t *),
	void *, void (*)(void *));
extern wasmtime_error_t *wasmtime_error_new(const char *);
extern void wasm_byte_vec_new(aiod_byte_vec_t *, size_t, const char *);
extern void wasi_config_set_stdin_bytes(wasi_config_t *, aiod_byte_vec_t *);
extern void wasi_config_set_stdout_custom(wasi_config_t *,
	ptrdiff_t (*)(void *, const unsigned char *, size_t), void *, void (*)(void *));
extern void wasi_config_set_stderr_custom(wasi_config_t *,
	ptrdiff_t (*)(void *, const unsigned char *, size_t), void *, void (*)(void *));

// aiod_stop is C memory (the store frees it with the callback's data): the
// guest stops at its next epoch tick once stop == gen.
typedef struct { uint32_t gen; uint32_t stop; } aiod_stop;

static wasmtime_error_t *aiod_epoch(wasmtime_context_t *ctx, void *data, uint64_t *delta, uint8_t *kind) {
	aiod_stop *s = data;
	if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) == __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE)) {
		return wasmtime_error_new("aiod: call interrupted");
	}
	*delta = 1;
	*kind = 0;
	return NULL;
}

static aiod_stop *aiod_set_epoch_callback(void *store) {
	aiod_stop *s = calloc(1, sizeof *s);
	if (s) wasmtime_store_epoch_deadline_callback(store, aiod_epoch, s, free);
	return s;
}

static void aiod_set_stdin(void *config, const char *data, size_t n) {
	aiod_byte_vec_t v;
	wasm_byte_vec_new(&v, n, data);
	wasi_config_set_stdin_bytes(config, &v);
}

extern ptrdiff_t aiodWasiWrite(void *, unsigned char *, size_t);
extern void aiodWasiFree(void *);

static ptrdiff_t aiod_write(void *data, const unsigned char *buf, size_t n) {
	return aiodWasiWrite(data, (unsigned char *)buf, n);
}

static void aiod_set_output(void *config, uintptr_t out, uintptr_t err) {
	if (out) wasi_config_set_stdout_custom(config, aiod_write, (void *)out, aiodWasiFree);
	if (err) wasi_config_set_stderr_custom(config, aiod_write, (void *)err, aiodWasiFree);
}
*/
import "C"

import (
	"errors"
	"io"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// rawptr returns the C pointer a wasmtime-go object holds in its first
// field (Store._ptr, WasiConfig._ptr). TestRawPointers checks the layout.
func rawptr[T any](p *T) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(p))
}

// stopFlag arms the store's epoch callback for one call at a time. Its C
// side is freed with the store, so fire (from a context's AfterFunc, which
// may run late) takes mu and does nothing once the store is closed.
type stopFlag struct {
	mu  sync.Mutex
	p   *C.aiod_stop // nil once the store is closed
	gen uint32
}

func setEpochCallback(s *wasmtime.Store) (*stopFlag, error) {
	p := C.aiod_set_epoch_callback(rawptr(s))
	if p == nil {
		return nil, errors.New("out of memory")
	}
	return &stopFlag{p: p}, nil
}

// arm starts a new generation: a stop for an older one is ignored.
func (f *stopFlag) arm() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if f.gen == 0 { // 0 is never armed: stop starts at 0
		f.gen++
	}
	if f.p != nil {
		(*atomic.Uint32)(unsafe.Pointer(&f.p.gen)).Store(f.gen)
	}
	return f.gen
}

// fire stops generation gen at the guest's next epoch tick.
func (f *stopFlag) fire(gen uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.p != nil && f.gen == gen {
		(*atomic.Uint32)(unsafe.Pointer(&f.p.stop)).Store(gen)
	}
}

// release forgets the C side; call it before closing the store.
func (f *stopFlag) release() {
	f.mu.Lock()
	f.p = nil
	f.mu.Unlock()
}

func setStdin(w *wasmtime.WasiConfig, b []byte) {
	if len(b) == 0 {
		return
	}
	C.aiod_set_stdin(rawptr(w), (*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b)))
}

// setOutput directs the guest's stdout and stderr to writers (nil: none).
// The handles are released by the WASI context's finalizer.
func setOutput(w *wasmtime.WasiConfig, stdout, stderr io.Writer) {
	var o, e uintptr
	if stdout != nil {
		o = uintptr(cgo.NewHandle(stdout))
	}
	if stderr != nil {
		e = uintptr(cgo.NewHandle(stderr))
	}
	C.aiod_set_output(rawptr(w), C.uintptr_t(o), C.uintptr_t(e))
}
