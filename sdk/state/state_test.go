//go:build !wasip1

package state_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/internal/abi"
	"github.com/aiodhq/aiod/sdk/state"
)

type mem []byte

func (m mem) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n], true
}

func (m mem) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}

// host runs the real aiod:state family behind the native fake host.
type host struct {
	call *hostfn.Call
	defs map[string]hostfn.Def
	rr   hostfn.Def
}

func (h *host) WriteOutput([]byte)                {}
func (h *host) Log(int, string)                   {}
func (h *host) Progress(float64, float64, string) {}

func (h *host) Call(module, name string, req []byte) ([]byte, uint32) {
	d, ok := h.defs[name]
	if module != state.Module || !ok {
		return []byte(`{"code":"unavailable","message":"no such function"}`), uint32(hostfn.Unavailable)
	}
	m := append(mem(nil), req...)
	stack := []uint64{0, uint64(len(req))}
	d.Fn(context.Background(), h.call, m, stack)
	code, n := uint32(stack[0]>>32), uint32(stack[0])
	if n == 0 {
		return nil, code
	}
	out := make(mem, n)
	h.rr.Fn(context.Background(), h.call, out, []uint64{0})
	return out, code
}

func setup(t *testing.T, maxBytes int64) {
	scope := &caps.StateScope{MaxBytes: maxBytes}
	p := &caps.Policy{Default: &caps.Capabilities{State: scope}}
	g := p.Allow(&caps.Manifest{Name: "t", Capabilities: caps.Capabilities{State: scope}}, caps.Env{})
	h := &host{call: &hostfn.Call{Plugin: "t", Owner: "o", Grant: g}, defs: map[string]hostfn.Def{}}
	for _, d := range hostfn.NewState(hostfn.NewStateStore(0)).Defs() {
		h.defs[d.Name] = d
	}
	for _, d := range hostfn.Core().Defs() {
		if d.Name == "response_read" {
			h.rr = d
		}
	}
	t.Cleanup(abi.SetNativeHost(h))
}

func TestState(t *testing.T) {
	setup(t, 1<<20)
	if _, ok, err := state.Get("k"); ok || err != nil {
		t.Errorf("get missing: %v %v", ok, err)
	}
	if err := state.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := state.Get("k"); v != "v" || !ok || err != nil {
		t.Errorf("get: %q %v %v", v, ok, err)
	}
	if used, max, err := state.SetUsage("k", "vv"); used != 3 || max != 1<<20 || err != nil {
		t.Errorf("usage %d/%d %v", used, max, err)
	}
	var want []string
	for i := range 2500 {
		k := fmt.Sprintf("p/%05d", i)
		want = append(want, k)
		if err := state.Set(k, ""); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := state.List("p/")
	if err != nil || !slices.Equal(keys, want) {
		t.Errorf("list: %d keys %v", len(keys), err)
	}
	if ok, err := state.Delete("k"); !ok || err != nil {
		t.Errorf("delete: %v %v", ok, err)
	}
	if err := state.Set("", "x"); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("empty key: %v", err)
	}
}

func TestStateTooLarge(t *testing.T) {
	setup(t, 10)
	err := state.Set("k", strings.Repeat("v", 10))
	var se *state.Error
	if !errors.Is(err, state.ErrTooLarge) || !errors.As(err, &se) || se.Code != "too_large" {
		t.Errorf("too large: %v", err)
	}
}
