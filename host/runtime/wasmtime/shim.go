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

typedef struct wasm_config_t wasm_config_t;
typedef struct wasmtime_pooling_allocation_config_t wasmtime_pooling_allocation_config_t;
extern wasmtime_pooling_allocation_config_t *wasmtime_pooling_allocation_config_new(void);
extern void wasmtime_pooling_allocation_config_delete(wasmtime_pooling_allocation_config_t *);
extern void wasmtime_pooling_allocation_config_total_memories_set(wasmtime_pooling_allocation_config_t *, uint32_t);
extern void wasmtime_pooling_allocation_config_total_tables_set(wasmtime_pooling_allocation_config_t *, uint32_t);
extern void wasmtime_pooling_allocation_config_total_core_instances_set(wasmtime_pooling_allocation_config_t *, uint32_t);
extern void wasmtime_pooling_allocation_config_max_memory_size_set(wasmtime_pooling_allocation_config_t *, size_t);
extern void wasmtime_pooling_allocation_config_linear_memory_keep_resident_set(wasmtime_pooling_allocation_config_t *, size_t);
extern void wasmtime_pooling_allocation_config_table_keep_resident_set(wasmtime_pooling_allocation_config_t *, size_t);
extern void wasmtime_pooling_allocation_config_table_elements_set(wasmtime_pooling_allocation_config_t *, size_t);
extern void wasmtime_pooling_allocation_config_max_core_instance_size_set(wasmtime_pooling_allocation_config_t *, size_t);
extern void wasmtime_pooling_allocation_strategy_set(wasm_config_t *, const wasmtime_pooling_allocation_config_t *);

static void aiod_set_pooling(void *config, uint32_t total, size_t max_memory, size_t keep_resident, size_t table_elements) {
	wasmtime_pooling_allocation_config_t *p = wasmtime_pooling_allocation_config_new();
	wasmtime_pooling_allocation_config_total_memories_set(p, total);
	wasmtime_pooling_allocation_config_total_tables_set(p, total);
	wasmtime_pooling_allocation_config_total_core_instances_set(p, total);
	wasmtime_pooling_allocation_config_max_memory_size_set(p, max_memory);
	wasmtime_pooling_allocation_config_linear_memory_keep_resident_set(p, keep_resident);
	wasmtime_pooling_allocation_config_table_keep_resident_set(p, keep_resident);
	wasmtime_pooling_allocation_config_table_elements_set(p, table_elements);
	wasmtime_pooling_allocation_strategy_set(config, p);
	wasmtime_pooling_allocation_config_delete(p);
}

typedef struct wasmtime_instance_pre wasmtime_instance_pre_t;
typedef struct wasm_trap_t wasm_trap_t;
typedef struct { uint64_t store_id; size_t private_; } aiod_instance_t;
extern wasmtime_error_t *wasmtime_linker_instantiate_pre(const void *, const void *, wasmtime_instance_pre_t **);
extern wasmtime_error_t *wasmtime_instance_pre_instantiate(const wasmtime_instance_pre_t *, void *, aiod_instance_t *, wasm_trap_t **);
extern void wasmtime_instance_pre_delete(wasmtime_instance_pre_t *);
extern void wasmtime_error_message(const wasmtime_error_t *, aiod_byte_vec_t *);
extern void wasmtime_error_delete(wasmtime_error_t *);
extern void wasm_trap_message(const wasm_trap_t *, aiod_byte_vec_t *);
extern void wasm_trap_delete(wasm_trap_t *);
extern void wasm_byte_vec_delete(aiod_byte_vec_t *);

// aiod_message takes an error or a trap (either may be NULL) and returns
// its message in malloc'd memory, or NULL if both are NULL.
static char *aiod_message(wasmtime_error_t *e, wasm_trap_t *t) {
	if (!e && !t) return NULL;
	aiod_byte_vec_t v = {0, NULL};
	if (e) wasmtime_error_message(e, &v); else wasm_trap_message(t, &v);
	char *s = malloc(v.size + 1);
	if (!s) abort(); // as wasmtime's own allocator does
	for (size_t i = 0; i < v.size; i++) s[i] = v.data[i];
	s[v.size] = 0;
	wasm_byte_vec_delete(&v);
	if (e) wasmtime_error_delete(e);
	if (t) wasm_trap_delete(t);
	return s;
}

static char *aiod_instantiate_pre(void *linker, void *module, wasmtime_instance_pre_t **pre) {
	return aiod_message(wasmtime_linker_instantiate_pre(linker, module, pre), NULL);
}

static char *aiod_pre_instantiate(wasmtime_instance_pre_t *pre, void *context, aiod_instance_t *out) {
	wasm_trap_t *trap = NULL;
	wasmtime_error_t *e = wasmtime_instance_pre_instantiate(pre, context, out, &trap);
	return aiod_message(e, trap);
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
	goruntime "runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// rawptr returns the C pointer a wasmtime-go object holds in its first
// field (Store, WasiConfig, Linker, Module, Config: _ptr). TestRawPointers
// checks the layout.
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

// pooling configures cfg for wasmtime's pooling instance allocator: total
// instances (memories, tables) alive at once, each memory's ceiling, and
// how much of a freed memory and table stays resident for the next.
type pooling struct {
	total         uint32
	maxMemory     uint64
	keepResident  uint64
	tableElements uint64
}

func setPooling(cfg *wasmtime.Config, p pooling) {
	C.aiod_set_pooling(rawptr(cfg), C.uint32_t(p.total), C.size_t(p.maxMemory), C.size_t(p.keepResident), C.size_t(p.tableElements))
}

// instancePre is a module with its imports resolved against a linker once
// (wasmtime's InstancePre), instantiated into a store without the
// linker's per-instantiation name lookups and type checks.
type instancePre struct {
	p *C.wasmtime_instance_pre_t
}

func cMessage(msg *C.char) error {
	if msg == nil {
		return nil
	}
	err := errors.New(C.GoString(msg))
	C.free(unsafe.Pointer(msg))
	return err
}

func newInstancePre(l *wasmtime.Linker, m *wasmtime.Module) (*instancePre, error) {
	var p *C.wasmtime_instance_pre_t
	err := cMessage(C.aiod_instantiate_pre(rawptr(l), rawptr(m), &p))
	goruntime.KeepAlive(l)
	goruntime.KeepAlive(m)
	if err != nil {
		return nil, err
	}
	return &instancePre{p: p}, nil
}

// instantiate makes an instance in s (the module has no start function;
// the caller runs _initialize).
func (p *instancePre) instantiate(s *wasmtime.Store) (*wasmtime.Instance, error) {
	var raw C.aiod_instance_t
	err := cMessage(C.aiod_pre_instantiate(p.p, unsafe.Pointer(s.Context()), &raw))
	goruntime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	wi := new(wasmtime.Instance) // its one field is the C wasmtime_instance_t (TestRawPointers)
	*(*C.aiod_instance_t)(unsafe.Pointer(wi)) = raw
	return wi, nil
}

func (p *instancePre) close() {
	if p.p != nil {
		C.wasmtime_instance_pre_delete(p.p)
		p.p = nil
	}
}
