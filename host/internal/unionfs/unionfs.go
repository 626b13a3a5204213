// Package unionfs sees two directories of plugin packages as one fs.FS:
// its root lists a's entries and b's directories (a name in a wins), and
// a path below it is a's when its first element is a's, else b's. The
// host serves the built-ins and the page tools' package through it.
package unionfs

import (
	"io/fs"
	"path"
	"sort"
	"strings"
)

// New returns a and b seen as one.
func New(a, b fs.FS) fs.FS { return &unionFS{a, b} }

type unionFS struct{ a, b fs.FS }

func (u *unionFS) pick(name string) fs.FS {
	first, _, _ := strings.Cut(name, "/")
	if _, err := fs.Stat(u.a, first); err == nil {
		return u.a
	}
	return u.b
}

func (u *unionFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return u.a.Open(name) // ReadDir lists the union
	}
	return u.pick(name).Open(name)
}

// ReadDir lists the union of the two roots (fs.ReadDir uses it); other
// directories are one side's.
func (u *unionFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return fs.ReadDir(u.pick(name), name)
	}
	ea, err := fs.ReadDir(u.a, ".")
	if err != nil {
		return nil, err
	}
	eb, err := fs.ReadDir(u.b, ".")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, e := range ea {
		seen[e.Name()] = true
	}
	for _, e := range eb {
		// b's own files (a README, a .gitignore) stay out of the root
		if !seen[e.Name()] && e.IsDir() {
			ea = append(ea, e)
		}
	}
	sort.Slice(ea, func(i, j int) bool { return ea[i].Name() < ea[j].Name() })
	return ea, nil
}

// ReadFile reads a file of one side (fs.ReadFile uses it).
func (u *unionFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return fs.ReadFile(u.pick(path.Clean(name)), name)
}
