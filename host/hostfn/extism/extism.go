// Package extism is the Extism host ABI (spec/abi/extism.md) for form
// "extism" plugins: the kernel, vars, logging and the http family.
package extism

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/sdk/abi"
)

// The Extism host ABI (spec/abi/extism.md): the import module every
// Extism plugin links against. Extism's own hosts run a "kernel" module
// that keeps the plugin's inputs, outputs and allocations in a second
// linear memory; the guest reaches it only through these imports, by u64
// offsets. Here that memory is a Go byte arena per call (Call), so
// a bad offset is a bounds check in Go: the guest traps, the host does
// not.

// Module is the import module of the Extism host ABI.
const Module = "extism:host/env"

// extismBase is the offset of the first byte of the kernel arena: 0 is
// Extism's "no block", so no block starts there.
const extismBase = 1 << 12

// Extism kernel bounds.
const (
	// DefaultMemory bounds the arena of a call whose Call sets
	// no Max.
	DefaultMemory = 64 << 20
	// maxExtismBlocks bounds the allocations of one call (each costs host
	// bookkeeping beyond its bytes).
	maxExtismBlocks = 1 << 20
	// DefaultVarBytes bounds the vars of one plugin and owner
	// (Extism's max_var_bytes).
	DefaultVarBytes = 1 << 20
)

type extismBlock struct {
	off, len, cap uint64
	free          bool
}

// Call is the Extism kernel state of one call: the allocations the
// guest made, what it set as output and error, and the last HTTP
// response. The input is the Call's Input; the output goes to the Call's
// Output (within MaxOutput). Reset makes it ready for another call.
type Call struct {
	// Config is what config_get reads.
	Config map[string]string
	// Vars keeps var_get/var_set values across calls, per plugin and
	// owner; nil makes every var unset and var_set a trap.
	Vars *Vars
	// Max bounds the arena in bytes (DefaultMemory if 0).
	Max uint64

	mem      []byte
	blocks   map[uint64]*extismBlock
	freed    []*extismBlock
	inputOff uint64
	outOff   uint64
	outLen   uint64
	errOff   uint64
	// Err is the error text the guest set with error_set ("" for none).
	Err         string
	httpStatus  int32
	httpHeaders []byte
}

// Reset clears the kernel state for the next call (keeping the arena's
// storage unless it grew large).
func (k *Call) Reset() {
	if cap(k.mem) > 4<<20 {
		k.mem = nil
	}
	k.mem = k.mem[:0]
	if len(k.blocks) > 4096 {
		k.blocks = nil // a map keeps its buckets when cleared
	}
	clear(k.blocks)
	k.freed = k.freed[:0]
	k.inputOff, k.outOff, k.outLen, k.errOff = 0, 0, 0, 0
	k.Err, k.httpStatus, k.httpHeaders = "", 0, nil
	k.Config, k.Vars, k.Max = nil, nil, 0
}

// MemoryBytes is the size of the arena.
func (k *Call) MemoryBytes() int { return len(k.mem) }

type extismKey struct{}

// With makes k the kernel state the Extism host functions see
// during calls made with the returned context.
func With(ctx context.Context, k *Call) context.Context {
	return context.WithValue(ctx, extismKey{}, k)
}

func extismFrom(ctx context.Context, name string) *Call {
	k, _ := ctx.Value(extismKey{}).(*Call)
	if k == nil {
		panic(fmt.Errorf("%s.%s called outside an Extism call (from _initialize?)", Module, name))
	}
	return k
}

func (k *Call) alloc(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	if k.blocks == nil {
		k.blocks = map[uint64]*extismBlock{}
	}
	for i, b := range k.freed {
		if b.cap >= n && b.cap <= 2*n {
			k.freed[i] = k.freed[len(k.freed)-1]
			k.freed = k.freed[:len(k.freed)-1]
			b.free, b.len = false, n
			clear(k.mem[b.off-extismBase : b.off-extismBase+n])
			return b.off
		}
	}
	max := k.Max
	if max == 0 {
		max = DefaultMemory
	}
	if n > max || uint64(len(k.mem)) > max-n || len(k.blocks) >= maxExtismBlocks {
		return 0 // Extism's alloc answers 0 when it cannot
	}
	off := extismBase + uint64(len(k.mem))
	k.mem = append(k.mem, make([]byte, n)...)
	k.blocks[off] = &extismBlock{off: off, len: n, cap: n}
	return off
}

func (k *Call) allocBytes(b []byte) uint64 {
	off := k.alloc(uint64(len(b)))
	if off != 0 {
		copy(k.mem[off-extismBase:], b)
	} else if len(b) > 0 {
		panic(fmt.Errorf("%s: kernel memory exhausted (%d bytes)", Module, len(k.mem)))
	}
	return off
}

func (k *Call) length(off uint64) uint64 {
	if b := k.blocks[off]; b != nil && !b.free {
		return b.len
	}
	return 0
}

// span is the arena bytes [off, off+n), or a trap.
func (k *Call) span(fn string, off, n uint64) []byte {
	if off < extismBase || off-extismBase > uint64(len(k.mem)) || n > uint64(len(k.mem))-(off-extismBase) {
		panic(fmt.Errorf("%s.%s: offset %d (+%d bytes) is outside the plugin's Extism memory", Module, fn, off, n))
	}
	i := off - extismBase
	return k.mem[i : i+n : i+n]
}

// block is the contents of the live block at off (empty for 0), or a trap.
func (k *Call) block(fn string, off uint64) []byte {
	if off == 0 {
		return nil
	}
	b := k.blocks[off]
	if b == nil || b.free {
		panic(fmt.Errorf("%s.%s: offset %d is not an allocated block", Module, fn, off))
	}
	return k.span(fn, off, b.len)
}

// Vars keeps Extism vars, one space per (plugin, owner), each at
// most maxBytes (keys plus values). Nothing is persisted. Safe for
// concurrent use.
type Vars struct {
	max    int64
	mu     sync.Mutex
	spaces map[varsKey]*extismSpace
}

type varsKey struct{ plugin, owner string }

type extismSpace struct {
	kv    map[string][]byte
	bytes int64
}

// NewVars returns a var store bounding each space to maxBytes
// (DefaultVarBytes if maxBytes <= 0).
func NewVars(maxBytes int64) *Vars {
	if maxBytes <= 0 {
		maxBytes = DefaultVarBytes
	}
	return &Vars{max: maxBytes, spaces: map[varsKey]*extismSpace{}}
}

// Get returns the value of key for (plugin, owner), nil if unset.
func (v *Vars) Get(plugin, owner, key string) []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	if sp := v.spaces[varsKey{plugin, owner}]; sp != nil {
		return sp.kv[key]
	}
	return nil
}

// Set stores value under key (nil deletes it), keeping the space within
// its bound.
func (v *Vars) Set(plugin, owner, key string, value []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := varsKey{plugin, owner}
	sp := v.spaces[k]
	if sp == nil {
		if value == nil {
			return nil
		}
		sp = &extismSpace{kv: map[string][]byte{}}
		v.spaces[k] = sp
	}
	delta := int64(len(key) + len(value))
	old, had := sp.kv[key]
	if had {
		delta -= int64(len(key) + len(old))
	}
	if value == nil {
		if had {
			delete(sp.kv, key)
			sp.bytes += delta - int64(len(key))
		}
		if len(sp.kv) == 0 {
			delete(v.spaces, k)
		}
		return nil
	}
	if sp.bytes+delta > v.max {
		return fmt.Errorf("vars would use %d bytes, max %d for this plugin and owner", sp.bytes+delta, v.max)
	}
	sp.kv[key] = append([]byte(nil), value...)
	sp.bytes += delta
	return nil
}

type extismEnv struct{}

// Env returns the always-linked part of the Extism host ABI for
// plugins of form "extism": kernel memory, input, output, error, config,
// vars and logs. Its functions find their state with With.
func Env() hostfn.Family { return extismEnv{} }

func (extismEnv) Name() abi.Family { return "" }

func (extismEnv) Defs() []hostfn.Def {
	i64 := []hostfn.ValueType{hostfn.I64}
	i32 := []hostfn.ValueType{hostfn.I32}
	def := func(name string, params, results []hostfn.ValueType, fn func(k *Call, c *hostfn.Call, stack []uint64)) hostfn.Def {
		return hostfn.Def{Module: Module, Name: name, Params: params, Results: results,
			Fn: func(ctx context.Context, c *hostfn.Call, _ hostfn.Memory, stack []uint64) {
				fn(extismFrom(ctx, name), c, stack)
			}}
	}
	defs := []hostfn.Def{
		def("alloc", i64, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = k.alloc(s[0]) }),
		def("free", i64, nil, func(k *Call, _ *hostfn.Call, s []uint64) {
			if b := k.blocks[s[0]]; b != nil && !b.free {
				b.free = true
				k.freed = append(k.freed, b)
			}
		}),
		def("length", i64, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = k.length(s[0]) }),
		def("length_unsafe", i64, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = k.length(s[0]) }),
		def("load_u8", i64, i32, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = uint64(k.span("load_u8", s[0], 1)[0]) }),
		def("load_u64", i64, i64, func(k *Call, _ *hostfn.Call, s []uint64) {
			s[0] = binary.LittleEndian.Uint64(k.span("load_u64", s[0], 8))
		}),
		def("store_u8", []hostfn.ValueType{hostfn.I64, hostfn.I32}, nil, func(k *Call, _ *hostfn.Call, s []uint64) { k.span("store_u8", s[0], 1)[0] = byte(s[1]) }),
		def("store_u64", []hostfn.ValueType{hostfn.I64, hostfn.I64}, nil, func(k *Call, _ *hostfn.Call, s []uint64) {
			binary.LittleEndian.PutUint64(k.span("store_u64", s[0], 8), s[1])
		}),
		def("input_length", nil, i64, func(_ *Call, c *hostfn.Call, s []uint64) { s[0] = uint64(len(c.Input)) }),
		def("input_load_u8", i64, i32, func(_ *Call, c *hostfn.Call, s []uint64) {
			if s[0] >= uint64(len(c.Input)) {
				panic(fmt.Errorf("%s.input_load_u8: offset %d is past the input (%d bytes)", Module, s[0], len(c.Input)))
			}
			s[0] = uint64(c.Input[s[0]])
		}),
		def("input_load_u64", i64, i64, func(_ *Call, c *hostfn.Call, s []uint64) {
			if s[0] > uint64(len(c.Input)) || uint64(len(c.Input))-s[0] < 8 {
				panic(fmt.Errorf("%s.input_load_u64: offset %d (+8 bytes) is past the input (%d bytes)", Module, s[0], len(c.Input)))
			}
			s[0] = binary.LittleEndian.Uint64(c.Input[s[0]:])
		}),
		def("input_offset", nil, i64, func(k *Call, c *hostfn.Call, s []uint64) {
			if k.inputOff == 0 && len(c.Input) > 0 {
				k.inputOff = k.allocBytes(c.Input)
			}
			s[0] = k.inputOff
		}),
		def("input_set", []hostfn.ValueType{hostfn.I64, hostfn.I64}, nil, func(k *Call, c *hostfn.Call, s []uint64) {
			c.Input = append([]byte(nil), k.span("input_set", s[0], s[1])...)
			k.inputOff = 0
		}),
		def("output_set", []hostfn.ValueType{hostfn.I64, hostfn.I64}, nil, func(k *Call, c *hostfn.Call, s []uint64) {
			var b []byte
			if s[0] != 0 || s[1] != 0 {
				b = k.span("output_set", s[0], s[1])
			}
			if int64(len(b)) > c.MaxOutput {
				c.Overflow = true
				panic(hostfn.ErrResultTooLarge{Limit: c.MaxOutput})
			}
			k.outOff, k.outLen = s[0], s[1]
			c.Output = append(c.Output[:0], b...)
		}),
		def("output_length", nil, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = k.outLen }),
		def("output_offset", nil, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = k.outOff }),
		def("error_set", i64, nil, func(k *Call, _ *hostfn.Call, s []uint64) {
			k.Err = string(k.block("error_set", s[0]))
			k.errOff = s[0]
		}),
		def("error_get", nil, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = k.errOff }),
		def("reset", nil, nil, func(k *Call, c *hostfn.Call, _ []uint64) {
			cfg, vars, max := k.Config, k.Vars, k.Max
			k.Reset()
			k.Config, k.Vars, k.Max = cfg, vars, max
		}),
		def("memory_bytes", nil, i64, func(k *Call, _ *hostfn.Call, s []uint64) { s[0] = uint64(len(k.mem)) }),
		def("config_get", i64, i64, func(k *Call, _ *hostfn.Call, s []uint64) {
			v, ok := k.Config[string(k.block("config_get", s[0]))]
			s[0] = 0
			if ok {
				s[0] = k.allocBytes([]byte(v))
			}
		}),
		def("var_get", i64, i64, func(k *Call, c *hostfn.Call, s []uint64) {
			key := string(k.block("var_get", s[0]))
			s[0] = 0
			if k.Vars != nil {
				if v := k.Vars.Get(c.Plugin, c.Owner, key); v != nil {
					s[0] = k.allocBytes(v)
				}
			}
		}),
		def("var_set", []hostfn.ValueType{hostfn.I64, hostfn.I64}, nil, func(k *Call, c *hostfn.Call, s []uint64) {
			key := string(k.block("var_set", s[0]))
			var val []byte
			if s[1] != 0 {
				val = append([]byte{}, k.block("var_set", s[1])...)
			}
			if k.Vars == nil {
				panic(fmt.Errorf("%s.var_set: this call keeps no vars", Module))
			}
			if err := k.Vars.Set(c.Plugin, c.Owner, key, val); err != nil {
				panic(fmt.Errorf("%s.var_set %q: %w", Module, key, err))
			}
		}),
		def("get_log_level", nil, i32, func(_ *Call, c *hostfn.Call, s []uint64) {
			// Extism's levels: trace 0, debug 1, info 2, warn 3, error 4
			s[0] = 2
			if c.Log != nil && c.Log.Enabled(context.Background(), slog.LevelDebug) {
				s[0] = 1
			}
		}),
	}
	for _, l := range []struct {
		name  string
		level slog.Level
		mcp   string
	}{
		{"log_trace", slog.LevelDebug, "debug"}, {"log_debug", slog.LevelDebug, "debug"},
		{"log_info", slog.LevelInfo, "info"}, {"log_warn", slog.LevelWarn, "warning"}, {"log_error", slog.LevelError, "error"},
	} {
		defs = append(defs, def(l.name, i64, nil, func(k *Call, c *hostfn.Call, s []uint64) {
			b := k.block(l.name, s[0])
			msg := string(b[:min(len(b), core.MaxLogBytes)])
			if c.Log != nil {
				c.Log.Log(context.Background(), l.level, "plugin log", "plugin", c.Plugin, "msg", msg)
			}
			if c.Notify != nil {
				c.Notify("notifications/message", map[string]any{"level": l.mcp, "logger": c.Plugin, "data": msg})
			}
		}))
	}
	return defs
}

// HTTP returns the http family as Extism's functions (http_request,
// http_status_code, http_headers), for plugins of form "extism" granted
// it: every request and every redirect it follows must go to a host the
// grant allows, over http or https; the response body is bounded by the
// call's MaxOutput; the call's deadline bounds the request. client nil
// means a client of the family's own.
func HTTP(client *http.Client) hostfn.Family {
	if client == nil {
		client = &http.Client{}
	}
	return extismHTTP{client: client}
}

type extismHTTP struct{ client *http.Client }

func (extismHTTP) Name() abi.Family { return abi.FamilyHTTP }

// HTTPDenied returns Extism's http functions for a plugin not
// granted the http family: each call traps, naming the capability.
// Extism PDKs import them whether a plugin sends requests or not, so they
// are linked (and refuse) rather than left out (spec/abi/extism.md).
func HTTPDenied() hostfn.Family { return extismHTTPDenied{} }

type extismHTTPDenied struct{}

func (extismHTTPDenied) Name() abi.Family { return "" }

func (extismHTTPDenied) Defs() []hostfn.Def {
	deny := func(ctx context.Context, c *hostfn.Call, _ hostfn.Memory, stack []uint64) {
		panic(fmt.Errorf("%s.http_request: plugin %s is not granted capability %q: %w", Module, c.Plugin, abi.FamilyHTTP, hostfn.ErrDenied))
	}
	return httpDefs(deny, deny, deny)
}

func httpDefs(req, status, headers func(ctx context.Context, c *hostfn.Call, _ hostfn.Memory, stack []uint64)) []hostfn.Def {
	return []hostfn.Def{
		{Module: Module, Name: "http_request", Params: []hostfn.ValueType{hostfn.I64, hostfn.I64}, Results: []hostfn.ValueType{hostfn.I64}, Fn: req},
		{Module: Module, Name: "http_status_code", Results: []hostfn.ValueType{hostfn.I32}, Fn: status},
		{Module: Module, Name: "http_headers", Results: []hostfn.ValueType{hostfn.I64}, Fn: headers},
	}
}

// maxExtismHTTPBody bounds a response body when the call sets no MaxOutput.
const maxExtismHTTPBody = 16 << 20

func (h extismHTTP) Defs() []hostfn.Def {
	return httpDefs(
		func(ctx context.Context, c *hostfn.Call, _ hostfn.Memory, s []uint64) {
			k := extismFrom(ctx, "http_request")
			body, status, hdr, err := h.do(ctx, c, k.block("http_request", s[0]), k.block("http_request", s[1]))
			if err != nil {
				panic(fmt.Errorf("%s.http_request: %w", Module, err))
			}
			k.httpStatus, k.httpHeaders = status, hdr
			s[0] = k.allocBytes(body)
		},
		func(ctx context.Context, _ *hostfn.Call, _ hostfn.Memory, s []uint64) {
			s[0] = uint64(uint32(extismFrom(ctx, "http_status_code").httpStatus))
		},
		func(ctx context.Context, _ *hostfn.Call, _ hostfn.Memory, s []uint64) {
			k := extismFrom(ctx, "http_headers")
			s[0] = 0
			if len(k.httpHeaders) > 0 {
				s[0] = k.allocBytes(k.httpHeaders)
			}
		},
	)
}

// do sends the request {"url", "method", "headers"} with body.
func (h extismHTTP) do(ctx context.Context, c *hostfn.Call, reqJSON, body []byte) ([]byte, int32, []byte, error) {
	var req struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(reqJSON, &req); err != nil {
		return nil, 0, nil, fmt.Errorf("bad request %q: %w", truncateText(string(reqJSON), 200), err)
	}
	allowed := func(u *url.URL) error {
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("scheme %q: only http and https: %w", u.Scheme, hostfn.ErrDenied)
		}
		if c.Grant == nil || !c.Grant.HostAllowed(u.Hostname()) {
			return fmt.Errorf("host %q is not in plugin %s's http grant: %w", u.Hostname(), c.Plugin, hostfn.ErrDenied)
		}
		return nil
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("bad url %q: %w", req.URL, err)
	}
	if err := allowed(u); err != nil {
		return nil, 0, nil, err
	}
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = http.MethodGet
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = strings.NewReader(string(body))
	}
	hr, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, 0, nil, err
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	cl := *h.client
	cl.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return allowed(r.URL)
	}
	resp, err := cl.Do(hr)
	if err != nil {
		return nil, 0, nil, err
	}
	defer resp.Body.Close()
	max := c.MaxOutput
	if max <= 0 {
		max = maxExtismHTTPBody
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("read response: %w", err)
	}
	if int64(len(b)) > max {
		return nil, 0, nil, fmt.Errorf("response body over %d bytes", max)
	}
	hm := make(map[string]string, len(resp.Header))
	for k, v := range resp.Header {
		hm[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	hj, _ := json.Marshal(hm)
	return b, int32(resp.StatusCode), hj, nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
