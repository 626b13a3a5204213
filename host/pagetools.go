package host

import (
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/aiodhq/aiod/host/browser"
)

// pageToolsServed reports whether cfg serves the page tools: the
// package is there, the browser plane is on, and it is launched or they
// were asked for.
func pageToolsServed(cfg Config) bool {
	if cfg.PageToolsFS == nil || cfg.Browser.Mode == browser.Off {
		return false
	}
	return cfg.PageTools || cfg.Browser.Mode == browser.Launch
}

// withPageTools is the built-in packages the registry loads: cfg.Builtins,
// plus the page tools' package when served. The page tools are not in the
// built-ins' "order" file, so they come after the ten.
func withPageTools(cfg Config) fs.FS {
	if !pageToolsServed(cfg) {
		return cfg.Builtins
	}
	if cfg.Builtins == nil {
		return cfg.PageToolsFS
	}
	return &unionFS{cfg.Builtins, cfg.PageToolsFS}
}

// unionFS is two directories of plugin packages seen as one: its root
// lists both (a name in a wins), and a path below it is a's when its
// first element is a's, else b's.
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
		// the page tools' own README and .gitignore stay out of the root
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
