package wasmsnap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aiodhq/aiod/host/runtime"
)

// TestCapturingWriter: a write marks the writer and goes on to Forward
// (nowhere without one).
func TestCapturingWriter(t *testing.T) {
	var out bytes.Buffer
	w := &CapturingWriter{Forward: &out}
	if w.Wrote() {
		t.Fatal("wrote before a write")
	}
	if n, err := w.Write([]byte("hi")); n != 2 || err != nil || !w.Wrote() || out.String() != "hi" {
		t.Fatalf("write: %d %v, wrote %v, forwarded %q", n, err, w.Wrote(), out.String())
	}
	w = &CapturingWriter{}
	if n, err := w.Write([]byte("hi")); n != 2 || err != nil || !w.Wrote() {
		t.Fatalf("write without Forward: %d %v, wrote %v", n, err, w.Wrote())
	}
}

// TestEndCapture: how a capture ends for each outcome of its
// instantiation.
func TestEndCapture(t *testing.T) {
	captured := &fakeInst{how: "captured"}
	snap := &fakeSnap{id: 7}
	errTake := errors.New("memory unreadable")
	for _, tc := range []struct {
		name    string
		inst    runtime.Instance
		err     error
		wrote   bool
		takeErr error
		how     string // the instance returned ("": none)
		snap    bool
		want    error // errors.Is the error returned
	}{
		{"captured", captured, nil, false, nil, "captured", true, nil},
		{"a host function called", nil, ErrInitReach, false, nil, "scratch", false, ErrInitReach},
		{"a host function called, wrapped", nil, fmt.Errorf("trap: %w", ErrInitReach), false, nil, "scratch", false, ErrInitReach},
		{"failed", nil, errFail, false, nil, "", false, errFail},
		{"wrote", captured, nil, true, nil, "captured", false, ErrInitWrites},
		{"take failed", captured, nil, false, errTake, "captured", false, errTake},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{}
			w := &CapturingWriter{}
			if tc.wrote {
				w.Write([]byte("x"))
			}
			inst, s, err := EndCapture(context.Background(), e, tc.inst, tc.err, w, func() (*fakeSnap, error) {
				if tc.takeErr != nil {
					return nil, tc.takeErr
				}
				return snap, nil
			})
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if how := ""; inst != nil {
				how = inst.(*fakeInst).how
				if how != tc.how {
					t.Fatalf("instance %s, want %s", how, tc.how)
				}
			} else if tc.how != "" {
				t.Fatalf("no instance, want %s", tc.how)
			}
			if (s != nil) != tc.snap {
				t.Fatalf("snapshot %v", s)
			}
		})
	}
}
