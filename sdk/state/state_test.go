//go:build !wasip1

package state_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/sdk/sdktest"
	"github.com/aiodhq/aiod/sdk/state"
)

func setup(t *testing.T, maxBytes int64) {
	sdktest.New(t, sdktest.WithState(maxBytes))
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
