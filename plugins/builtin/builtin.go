// Package builtin embeds the built-in plugin packages that `make build`
// compiles into plugins/builtin/dist (one directory per plugin, with
// manifest.json and plugin.wasm; the file "order" fixes their order).
// The compiled modules are build outputs and are not committed; a binary
// built without `make` has no built-ins and says so at start (RATIONALE.md).
package builtin

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// FS returns the built-in plugin packages.
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	return sub
}

// Present reports whether any built-in module was embedded.
func Present() bool {
	ents, _ := fs.ReadDir(FS(), ".")
	for _, e := range ents {
		if e.IsDir() {
			return true
		}
	}
	return false
}
