//go:build cgo

package register

import (
	"github.com/aiodhq/aiod/host"
	"github.com/aiodhq/aiod/host/runtime"
	"github.com/aiodhq/aiod/host/runtime/wasmtime"
)

func init() {
	host.RegisterEngine("wasmtime", func(o host.EngineOptions) (runtime.Engine, error) {
		return wasmtime.New(wasmtime.Options{CacheDir: o.CacheDir, Snapshots: o.Snapshots, Spares: o.SnapshotSpares})
	})
}
