package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/runtime"
)

type fakeEngine struct{ runtime.Engine }

func TestRegisterEngine(t *testing.T) {
	var got EngineOptions
	RegisterEngine("fake-test", func(o EngineOptions) (runtime.Engine, error) { got = o; return fakeEngine{}, nil })
	defer delete(engines, "fake-test")
	if e, err := newEngine("fake-test", EngineOptions{CacheDir: "d"}); err != nil || e != (fakeEngine{}) || got.CacheDir != "d" {
		t.Fatalf("newEngine: %v %v %+v", e, err, got)
	}
	if !strings.Contains(strings.Join(Engines(), ","), "fake-test") {
		t.Fatalf("Engines() = %v", Engines())
	}
	e, err := newEngine("", EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.Close(context.Background())
	if _, err := newEngine("nope", EngineOptions{}); err == nil || !strings.Contains(err.Error(), `engine "nope" is not built into this binary (built with: `) {
		t.Fatalf("unknown engine: %v", err)
	}
	for _, tc := range []struct {
		name string
		f    func(EngineOptions) (runtime.Engine, error)
	}{
		{"wazero", func(EngineOptions) (runtime.Engine, error) { return nil, errors.New("x") }},
		{"", func(EngineOptions) (runtime.Engine, error) { return nil, errors.New("x") }},
		{"nil-constructor", nil},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterEngine(%q) did not panic", tc.name)
				}
			}()
			RegisterEngine(tc.name, tc.f)
		}()
	}
}
