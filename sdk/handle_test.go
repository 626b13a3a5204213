//go:build !wasip1

package sdk

import (
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// discard is a native host that keeps the last output.
type discard struct{ out []byte }

func (d *discard) WriteOutput(b []byte)                         { d.out = append(d.out[:0], b...) }
func (d *discard) Log(int, string)                              {}
func (d *discard) Progress(float64, float64, string)            {}
func (d *discard) Call(string, string, []byte) ([]byte, uint32) { return nil, uint32(abi.Unavailable) }

type echoArgs struct {
	Text string `json:"text"`
}

func init() {
	AddTool(Tool{Name: "handle-echo", InputSchema: `{"type":"object"}`}, func(_ *Ctx, a echoArgs) (*Result, error) {
		return TextResult(a.Text), nil
	})
}

// TestHandleEchoAllocs: the SDK's part of an echo call (the tool's
// lookup, its arguments decoded, its result written) allocates nothing
// of its own: no closure per call, the arguments are decoded into a value
// the tool keeps, their short strings share a chunk (jsonx), and the
// result comes from a slab of 32 (RATIONALE, "The call path's
// allocations"); 200 calls make a few chunks. Each allocation costs a
// wasm guest far more than a native one.
func TestHandleEchoAllocs(t *testing.T) {
	d := &discard{}
	defer guest.SetNativeHost(d)()
	name, args := []byte("handle-echo"), []byte(`{"text":"hi"}`)
	n := testing.AllocsPerRun(200, func() {
		if ret := handle(abi.OpToolCall, name, args); ret != abi.RetOK {
			t.Fatalf("ret %d", ret)
		}
	})
	if string(d.out) != `{"content":[{"type":"text","text":"hi"}],"isError":false}` {
		t.Fatalf("output %s", d.out)
	}
	if n > 0 {
		t.Errorf("an echo call allocates %.1f times in the SDK, want none", n)
	}
	// a call that fails its decode, then one that succeeds: the second
	// does not see the first's fields
	handle(abi.OpToolCall, name, []byte(`{"text":"first"}`))
	handle(abi.OpToolCall, name, []byte(`{}`))
	if string(d.out) != `{"content":[{"type":"text","text":""}],"isError":false}` {
		t.Fatalf("a call without text answered %s", d.out)
	}
}

func BenchmarkHandleEcho(b *testing.B) {
	d := &discard{}
	defer guest.SetNativeHost(d)()
	name, args := []byte("handle-echo"), []byte(`{"text":"hi"}`)
	b.ReportAllocs()
	for b.Loop() {
		handle(abi.OpToolCall, name, args)
	}
}
