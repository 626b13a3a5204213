//go:build cgo

package runtimetest

import (
	"sync"

	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wasmtime"
)

func init() {
	engines = append(engines, &Engine{Name: "wasmtime", open: func(dir string) (runtime.Engine, error) {
		return wasmtime.New(wasmtime.Options{CacheDir: dir})
	}, once: new(sync.Once)})
}
