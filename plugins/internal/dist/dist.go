// Package dist is what the packages embedding compiled plugin packages
// (plugins/builtin, plugins/browser) share: the embedded dist directory as
// an fs.FS, and whether a build put any package in it. The go:embed
// directives stay in those packages (an embed names files of its own
// package's directory).
package dist

import "io/fs"

// Sub returns the "dist" directory of embedded.
func Sub(embedded fs.FS) fs.FS {
	sub, err := fs.Sub(embedded, "dist")
	if err != nil {
		panic(err)
	}
	return sub
}

// Present reports whether fsys holds any package (a directory at its root).
func Present(fsys fs.FS) bool {
	ents, _ := fs.ReadDir(fsys, ".")
	for _, e := range ents {
		if e.IsDir() {
			return true
		}
	}
	return false
}
