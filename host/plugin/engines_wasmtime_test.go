//go:build cgo

package plugin_test

import (
	"sync"
	"testing"

	"github.com/aiodhq/aiod/host/internal/testplugins"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wasmtime"
)

func init() {
	var (
		once sync.Once
		eng  runtime.Engine
		err  error
	)
	testEngines = append(testEngines, testEngine{"wasmtime", func(t testing.TB) runtime.Engine {
		once.Do(func() { eng, err = wasmtime.New(wasmtime.Options{CacheDir: testplugins.CacheDir()}) })
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}})
}
