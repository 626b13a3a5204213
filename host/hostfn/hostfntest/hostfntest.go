// Package hostfntest calls host functions the way a guest does, for the
// families' tests: the request in guest memory, the packed result, then the
// response copied out with the real aiod:core.response_read.
package hostfntest

import (
	"context"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Mem is a []byte-backed guest memory.
type Mem []byte

// Read implements hostfn.Memory.
func (m Mem) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

// Write implements hostfn.Memory.
func (m Mem) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}

// Call calls d as a guest would: request in memory, packed result, then
// aiod:core.response_read. It returns the code and the response.
func Call(ctx context.Context, d hostfn.Def, c *hostfn.Call, req []byte) (abi.Code, []byte) {
	const at = 8
	mem := make(Mem, at+len(req))
	copy(mem[at:], req)
	stack := []uint64{at, uint64(len(req))}
	d.Fn(ctx, c, mem, stack)
	code, n := abi.Code(stack[0]>>32), uint32(stack[0])
	out := make(Mem, n)
	if n > 0 {
		ResponseRead().Fn(ctx, c, out, []uint64{0})
	}
	return code, out
}

// ResponseRead is the core family's aiod:core.response_read.
func ResponseRead() hostfn.Def {
	return Defs(core.New())["response_read"]
}

// Defs are f's functions by name.
func Defs(f hostfn.Family) map[string]hostfn.Def {
	m := map[string]hostfn.Def{}
	for _, d := range f.Defs() {
		m[d.Name] = d
	}
	return m
}
