// Package fsroot is the native file layer behind the aiod:files host
// functions: a Set of granted directory trees, and the file operations a
// plugin may perform in them.
//
// Every path a plugin gives must be absolute. It is cleaned lexically (so
// ".." never climbs above a root, and "a/link/.." means "a"), matched to the
// root that is its longest prefix, and the rest is resolved beneath that
// root with os.Root, which opens each component relative to the root's
// directory descriptor and refuses any symbolic link that would leave it:
// absolute links (always, even if they point back inside), relative links
// with too many "..", symlinked parent directories, and links created after
// the Set was opened (each operation re-resolves from the root's descriptor,
// so there is no cached resolution to go stale). A path outside every root,
// or one that escapes through a link, is a denial; so is any mutation in a
// read-only root, and removing or renaming a root itself.
//
// Errors are *Error values carrying aiod's structured file error fields.
//
// A Set is safe for concurrent use. This package imports no engine and no
// host function code.
package fsroot

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/internal/pathx"
	"github.com/aiodhq/aiod/sdk/abi"
)

// The operations, as reported in Error.Operation.
const (
	OpRead   = "read"
	OpWrite  = "write"
	OpStat   = "stat"
	OpExists = "exists"
	OpList   = "list"
	OpWalk   = "walk"
	OpMkdir  = "mkdir"
	OpRemove = "remove"
	OpRename = "rename"
)

// Default limits.
const (
	DefaultMaxReadBytes   = 16 << 20 // aiod's buffered text limit
	DefaultMaxListEntries = 10_000   // aiod's list cut
	DefaultMaxWalkEntries = 10_000
	MaxWalkEntriesCap     = 100_000
	maxWalkErrors         = 100
)

// Options tune a Set. Zero values mean the defaults.
type Options struct {
	// MaxReadBytes is the most one read returns (and the ceiling of a
	// request's max_bytes).
	MaxReadBytes int64
	// MaxListEntries is the most entries one list returns.
	MaxListEntries int
	// MaxWalkEntries is the ceiling of a walk's max_entries (its default
	// is DefaultMaxWalkEntries, or this if lower).
	MaxWalkEntries int
}

func (o Options) withDefaults() Options {
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxListEntries <= 0 {
		o.MaxListEntries = DefaultMaxListEntries
	}
	if o.MaxWalkEntries <= 0 {
		o.MaxWalkEntries = MaxWalkEntriesCap
	}
	return o
}

// Set is a plugin's granted roots.
type Set struct {
	opts  Options
	roots []*root // longest path first

	mu     sync.Mutex
	closed bool
}

type root struct {
	caps.Root
	dir string // the host directory of Path when it differs (NewMapped)
	mu  sync.Mutex
	r   *os.Root // opened lazily, cached
}

// New makes a Set of roots. Each root path must be absolute; it is
// cleaned, and duplicates are merged (writable if any is). Directories
// are opened on first use, so a root that does not exist yet is fine.
func New(roots []caps.Root, opts Options) (*Set, error) {
	s := &Set{opts: opts.withDefaults()}
	for _, r := range roots {
		if r.Path == "" || !filepath.IsAbs(r.Path) {
			return nil, fmt.Errorf("fsroot: root %q is not an absolute path", r.Path)
		}
		p := filepath.Clean(r.Path)
		dup := false
		for _, have := range s.roots {
			if have.Path == p {
				have.Writable = have.Writable || r.Writable
				dup = true
			}
		}
		if !dup {
			s.roots = append(s.roots, &root{Root: caps.Root{Path: p, Writable: r.Writable}})
		}
	}
	slices.SortStableFunc(s.roots, func(a, b *root) int { return len(b.Path) - len(a.Path) })
	return s, nil
}

// Roots returns the roots of the Set, longest path first.
func (s *Set) Roots() []caps.Root {
	out := make([]caps.Root, len(s.roots))
	for i, r := range s.roots {
		out[i] = r.Root
	}
	return out
}

// Close closes the opened roots. It is idempotent; operations after Close
// fail.
func (s *Set) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var first error
	for _, r := range s.roots {
		r.mu.Lock()
		if r.r != nil {
			if err := r.r.Close(); err != nil && first == nil {
				first = err
			}
			r.r = nil
		}
		r.mu.Unlock()
	}
	return first
}

func (s *Set) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Resolve maps an absolute path to the root that holds it (the longest
// matching root path) and the path relative to that root ("." for the root
// itself). It is lexical: it touches no file, so a caller that then uses
// the path must still go through os.Root (or this package) to be safe
// from symbolic links. The error is an *Error for operation "resolve".
func (s *Set) Resolve(path string) (rootPath, rel string, err error) {
	r, rel, err := s.resolve("resolve", path)
	if err != nil {
		return "", "", err
	}
	return r.Path, rel, nil
}

// Writable reports whether path lies in a writable root (lexically).
func (s *Set) Writable(path string) bool {
	r, _, err := s.resolve("resolve", path)
	return err == nil && r.Writable
}

// clean validates a plugin's path and cleans it.
func clean(op, path string) (string, error) {
	switch {
	case path == "":
		return "", invalid(op, path, abi.FilesInvalidPath, "path is required")
	case strings.IndexByte(path, 0) >= 0:
		return "", invalid(op, path, abi.FilesInvalidPath, "path contains a NUL byte")
	case !filepath.IsAbs(path):
		return "", invalid(op, path, abi.FilesInvalidPath, "path must be absolute")
	}
	return filepath.Clean(path), nil
}

func (s *Set) resolve(op, path string) (*root, string, error) {
	p, err := clean(op, path)
	if err != nil {
		return nil, "", err
	}
	for _, r := range s.roots {
		if pathx.Within(p, r.Path) {
			rel := "."
			switch {
			case p == r.Path:
			case r.Path == string(filepath.Separator):
				rel = p[1:]
			default:
				rel = p[len(r.Path)+1:]
			}
			return r, rel, nil
		}
	}
	return nil, "", denied(op, path, path+" is outside the plugin's granted roots")
}

// open returns the root's cached *os.Root, opening it if needed. A failure
// is not cached: a root created later will open on a later call.
func (s *Set) open(r *root, op, path string) (*os.Root, error) {
	if s.isClosed() {
		return nil, closedError(op, path)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.r != nil {
		return r.r, nil
	}
	if s.isClosed() {
		return nil, closedError(op, path)
	}
	dir := r.Path
	if r.dir != "" {
		dir = r.dir
	}
	or, err := os.OpenRoot(dir)
	if err != nil {
		return nil, osError(op, path, err)
	}
	r.r = or
	return or, nil
}

func closedError(op, path string) *Error {
	e := errnoError(op, path, eBADF, nil)
	e.Code = abi.Unavailable
	return e
}

// target is a resolved path: its root, the os.Root, the path relative to
// it, the cleaned absolute path and the path as given.
type target struct {
	root  *root
	or    *os.Root
	rel   string
	abs   string
	given string
}

// lookup resolves and opens; write demands a writable root.
func (s *Set) lookup(op, path string, write bool) (*target, error) {
	r, rel, err := s.resolve(op, path)
	if err != nil {
		return nil, err
	}
	if write && !r.Writable {
		return nil, denied(op, path, path+" is in a read-only root of the plugin's grant")
	}
	or, err := s.open(r, op, path)
	if err != nil {
		return nil, err
	}
	return &target{root: r, or: or, rel: rel, abs: filepath.Clean(path), given: path}, nil
}

func (t *target) err(op string, err error) error { return osError(op, t.given, err) }
