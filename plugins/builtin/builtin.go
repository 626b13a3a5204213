// Package builtin embeds the built-in plugin packages that `make build`
// compiles into plugins/builtin/dist (one directory per plugin, with
// manifest.json and plugin.wasm; the file "order" fixes their order).
// The compiled modules are build outputs and are not committed; a binary
// built without `make` has no built-ins and says so at start (RATIONALE.md).
package builtin

import (
	"embed"
	"io/fs"

	"github.com/aiodhq/aiod/plugins/internal/dist"
)

//go:embed all:dist
var embedded embed.FS

// FS returns the built-in plugin packages.
func FS() fs.FS { return dist.Sub(embedded) }

// Present reports whether any built-in module was embedded.
func Present() bool { return dist.Present(FS()) }
