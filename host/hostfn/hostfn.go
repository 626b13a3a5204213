// Package hostfn is the contract between the engines and the host function
// families: a host function is a Def (import module, name, wasm signature,
// Go body over a Memory), a Family is a group of them, and the engine in
// host/runtime links the families it is given without knowing any of them.
//
// Each family lives in its own package below this one: core (aiod:core:
// input, output, log, progress, responses, the client; always linked),
// files, process, state, cdp, upstream and extism. They are built by the
// composition root (package host, host/plugin), never by an engine. A gated
// family is linked only when the plugin's Grant has it; the runtime refuses
// to load a module that imports anything else.
//
// Every gated family uses one calling convention (spec/abi/v1.md §5):
//
//	(req_ptr i32, req_len i32) -> i64
//
// The request is JSON (or raw bytes where a function says so). The result
// packs an error code in the high 32 bits (0 = ok) and the length of the
// response in the low 32 bits; the guest then copies the response out with
// aiod:core.response_read(ptr).
package hostfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/tracing"
	"github.com/aiodhq/aiod/sdk/abi"
)

// ValueType is a wasm value type of a host function signature.
type ValueType byte

// The value types used by the ABI.
const (
	I32 ValueType = 0x7f
	I64 ValueType = 0x7e
	F64 ValueType = 0x7c
)

// Memory is the calling guest's linear memory. Reads return a view that is
// only valid until the guest runs again: copy what you keep.
type Memory interface {
	Read(offset, n uint32) ([]byte, bool)
	Write(offset uint32, b []byte) bool
}

// Def is one host function.
type Def struct {
	Module  string // import module, e.g. "aiod:core"
	Name    string
	Params  []ValueType
	Results []ValueType
	// Fn runs the function. stack holds the params on entry and receives
	// the results. It may panic to trap the guest (the call then fails
	// and the instance is discarded).
	Fn func(ctx context.Context, c *Call, mem Memory, stack []uint64)
}

// Family is a group of host functions linked together.
type Family interface {
	// Name of the family; "" for the always-linked core.
	Name() abi.Family
	// Defs are the functions of the family.
	Defs() []Def
}

// Lifecycle is implemented by a Family that keeps state per loaded
// plugin. The registry calls Provision when it loads a plugin granted the
// family (before any call) and Cleanup once, when the last reference to
// that loaded plugin is released: after a reload replaced or dropped it
// and its calls in flight finished, or when the registry closes. A reload
// that carries an unchanged plugin over calls neither. The grant pointer
// identifies the loaded plugin: every load computes its own grant.
type Lifecycle interface {
	Provision(ctx context.Context, g *caps.Grant) error
	Cleanup(g *caps.Grant)
}

// Error is a host function failure carried back to the guest as
// {"code": "...", "message": "...", ...Detail}.
type Error struct {
	Code    abi.Code
	Message string
	// Detail is merged into the error object (for files: errno,
	// errno_name, error_type, exception_type, operation, path, retryable).
	Detail map[string]any
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Errorf makes an *Error.
func Errorf(code abi.Code, format string, a ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// ErrDenied is wrapped by every scope denial.
var ErrDenied = errors.New("denied by capability grant")

// CallKey is the context key of the Call a guest's host functions see.
// An engine adds the call's Call under it unless the call's context already
// answers it (the registry's call context does: no context value
// allocated per call).
type CallKey struct{}

// Call is the state of one guest invocation, visible to host functions.
// It is not safe for concurrent use: an instance runs one call at a time.
type Call struct {
	Plugin string
	Owner  string
	Grant  *caps.Grant
	Log    *slog.Logger
	// Input is what aiod_call's guest reads with input_read.
	Input []byte
	// Output collects output_write; MaxOutput caps it.
	Output    []byte
	MaxOutput int64
	// Overflow is set when the guest wrote past MaxOutput.
	Overflow bool
	// Notify sends a log or progress notification to the client, if the
	// request can carry one. May be nil.
	Notify func(kind string, params any)
	// Client is the MCP client behind the request (client.go); nil when
	// there is none (describe, internal calls).
	Client Client
	// Response is the pending response of the last family call (set by
	// ReqResp), what aiod:core.response_read copies out; nil when none is
	// pending.
	Response []byte
	// Kept are the responses kept with aiod:core.response_keep; Spliced
	// are the parts of Output that aiod:core.output_blob wrote from them.
	Kept    []Kept
	Spliced []Span
	// Configuration is what aiod:core.configuration answers (ABI v1.1):
	// the configuration and state of the configured plugin's load, as a
	// JSON object; nil for other plugins.
	Configuration []byte
	// Values holds the call's own state of a family (the process
	// family's started programs), under a key of the family's own type;
	// Reset clears it.
	Values map[any]any
	// Engine is the engine's own state of the run in progress (wazero:
	// the instance's scheduling quantum, which leaves out the time spent
	// in host functions); the engine sets it for a run and clears it.
	Engine any
}

// Kept is a response kept on the host for the rest of a call, and whether
// it is valid UTF-8.
type Kept struct {
	Bytes []byte
	UTF8  bool
	// Items, when not 0, says that Bytes are this many JSON objects, each
	// checked, joined with commas (a process family's collection, ABI
	// v1.2): output_blob may write them as they are.
	Items int
	// Escaped, when not nil, is Bytes escaped once, made ahead by the
	// family that kept them (output_blob copies it).
	Escaped []byte
	// Release, when not nil, is called when the call ends (Reset): the
	// family that kept the bytes may use their memory again.
	Release func()
}

// MaxKept bounds the responses one call may keep.
const MaxKept = 64

// Span is a range [Start, End) of a call's output that the host wrote
// itself with output_blob: JSON string contents, valid by construction;
// or, when Items is not 0, that many JSON objects joined with commas.
type Span struct{ Start, End, Items int }

// ErrResultTooLarge is the trap cause when a guest writes more output than
// its max_result_bytes.
type ErrResultTooLarge struct{ Limit int64 }

func (e ErrResultTooLarge) Error() string {
	return fmt.Sprintf("result exceeds the limit max_result_bytes=%d", e.Limit)
}

// Reset prepares a Call for reuse.
func (c *Call) Reset() {
	c.Input = nil
	c.Output = c.Output[:0]
	c.Overflow = false
	c.Response = nil
	for i := range c.Kept {
		if c.Kept[i].Release != nil {
			c.Kept[i].Release()
		}
	}
	clear(c.Kept)
	c.Kept = c.Kept[:0]
	c.Spliced = c.Spliced[:0]
	c.Notify = nil
	c.Client = nil
	c.Configuration = nil
	clear(c.Values)
}

// ReqResp wraps a request/response body in the family calling convention.
// Each call is a span (tracing.HostfnSpanName) when tracing is on.
func ReqResp(module, name string, fn func(ctx context.Context, c *Call, req []byte) ([]byte, error)) Def {
	span := tracing.HostfnSpanName(module, name)
	return Def{
		Module:  module,
		Name:    name,
		Params:  []ValueType{I32, I32},
		Results: []ValueType{I64},
		Fn: func(ctx context.Context, c *Call, mem Memory, stack []uint64) {
			req, ok := mem.Read(uint32(stack[0]), uint32(stack[1]))
			if !ok {
				panic(fmt.Errorf("%s.%s: request out of bounds", module, name))
			}
			req = append([]byte(nil), req...)
			var sp trace.Span
			if tracing.On() {
				ctx, sp = tracing.Start(ctx, span, tracing.AttrFamily.String(module), tracing.AttrFunction.String(name),
					tracing.AttrPlugin.String(c.Plugin), tracing.AttrTenant.String(c.Owner))
			}
			resp, err := fn(ctx, c, req)
			code := abi.OK
			if err != nil {
				code, resp = encodeError(err)
			}
			if sp != nil {
				tracing.End(sp, code.String())
			}
			c.Response = resp
			stack[0] = uint64(code)<<32 | uint64(uint32(len(resp)))
		},
	}
}

func encodeError(err error) (abi.Code, []byte) {
	var he *Error
	if !errors.As(err, &he) {
		he = &Error{Code: abi.Internal, Message: err.Error()}
		if errors.Is(err, ErrDenied) {
			he.Code = abi.Denied
		}
	}
	obj := make(map[string]any, len(he.Detail)+2)
	for k, v := range he.Detail {
		obj[k] = v
	}
	obj["code"] = he.Code.String()
	obj["message"] = he.Message
	b, _ := json.Marshal(obj)
	return he.Code, b
}

// DecodeRequest is the one decoder of family requests: a JSON object
// decoded with caps.StrictUnmarshal (field names exactly as specified,
// each once, no unknown fields, no trailing data), so a guest cannot send
// {"ARGV": ...} and be read differently by the host and the spec. An empty
// request is the empty object.
func DecodeRequest(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	return caps.StrictUnmarshal(raw, v)
}

// StrictJSON wraps a typed JSON-in, JSON-out family function for ReqResp:
// a request DecodeRequest refuses is invalid.
func StrictJSON[Req, Resp any](fn func(ctx context.Context, c *Call, req *Req) (Resp, error)) func(ctx context.Context, c *Call, req []byte) ([]byte, error) {
	return func(ctx context.Context, c *Call, raw []byte) ([]byte, error) {
		var r Req
		if err := DecodeRequest(raw, &r); err != nil {
			return nil, Errorf(abi.Invalid, "bad request: %v", err)
		}
		resp, err := fn(ctx, c, &r)
		if err != nil {
			return nil, err
		}
		return json.Marshal(resp)
	}
}
