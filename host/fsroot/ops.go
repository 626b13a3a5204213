package fsroot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aiodhq/aiod/host/internal/pathx"
	"github.com/aiodhq/aiod/sdk/abi"
)

// ReadRequest reads a whole file, a line range or a byte range.
type ReadRequest struct {
	Path string
	// StartLine (0-based, inclusive) and EndLine (exclusive) select lines;
	// either may be omitted. A line is everything up to and including a
	// '\n' (the last line may lack it).
	StartLine *int64
	EndLine   *int64
	// Offset and Length select bytes; Length omitted means to the end.
	// Not combinable with a line range.
	Offset int64
	Length *int64
	// MaxBytes lowers the read limit (0: the Set's limit, 16 MiB).
	MaxBytes int64
}

// WriteRequest is the header of a write; the content travels apart.
type WriteRequest struct {
	Path string
	// Append appends instead of truncating.
	Append bool
	// Exclusive fails with EEXIST if the path exists.
	Exclusive bool
	// Mode, if given, is set on the file (permission bits only, 0-0777,
	// exactly, ignoring the umask). Otherwise a new file gets 0644 less
	// the umask and an existing file keeps its mode.
	Mode *uint32
}

// WriteResult is the result of a write.
type WriteResult struct {
	BytesWritten int64
}

// StatRequest asks for a path's metadata.
type StatRequest struct {
	Path string
	// Lstat reports a symbolic link itself instead of its target.
	Lstat bool
}

// Info is the metadata of a path.
type Info struct {
	Name         string
	Path         string
	IsDirectory  bool
	IsFile       bool
	IsSymlink    bool
	Size         int64
	Mode         uint32 // permission bits
	ModeString   string // e.g. "-rw-r--r--"
	ModifiedTime time.Time
	// SymlinkTarget is the link's text (lstat of a link only).
	SymlinkTarget string
}

// ExistsRequest asks whether a path exists (following links).
type ExistsRequest struct {
	Path string
}

// ExistsResult answers an ExistsRequest.
type ExistsResult struct {
	Exists      bool
	IsDirectory bool
	IsFile      bool
}

// ListRequest lists one directory.
type ListRequest struct {
	Path string
	// MaxEntries lowers the cap of 10,000 (0: the cap).
	MaxEntries int
}

// Entry is one directory entry (lstat: a link is reported, not followed).
type Entry struct {
	Name         string
	Path         string
	IsDirectory  bool
	IsSymlink    bool
	Size         int64
	ModifiedTime time.Time
	// Depth is the level below the walked directory (walk only; 1 for
	// its children).
	Depth int
}

// ListResult is a directory listing sorted by name.
type ListResult struct {
	Path       string
	Entries    []Entry
	TotalCount int // entries in the directory
	Truncated  bool
}

// WalkRequest lists a tree.
type WalkRequest struct {
	Path string
	// MaxDepth bounds the depth (1: children only; 0: unlimited).
	MaxDepth int
	// MaxEntries bounds the entries (0: 10,000; at most 100,000).
	MaxEntries int
}

// WalkResult is a tree listing in depth-first pre-order, siblings sorted
// by name. Symbolic links are reported, never followed.
type WalkResult struct {
	Path    string
	Entries []Entry
	// Truncated: MaxEntries was reached with entries left over.
	Truncated bool
	// DepthLimited: some directories at MaxDepth were not descended into.
	DepthLimited bool
	// Errors are the subdirectories that could not be read (at most
	// 100); ErrorsTruncated if more.
	Errors          []*Error
	ErrorsTruncated bool
}

// MkdirRequest creates a directory.
type MkdirRequest struct {
	Path string
	// Parents creates missing parents and accepts an existing directory.
	Parents bool
	// Mode is the permission bits (0-0777, default 0755), less the umask.
	Mode *uint32
}

// MkdirResult answers a MkdirRequest.
type MkdirResult struct {
	Created bool
}

// RemoveRequest removes a file, link or directory.
type RemoveRequest struct {
	Path string
	// Recursive removes a directory with its contents.
	Recursive bool
}

// RenameRequest renames path to target.
type RenameRequest struct {
	Path   string
	Target string
	// Overwrite replaces an existing target (as rename(2) does); without
	// it an existing target is EEXIST.
	Overwrite bool
}

// Empty is the result of remove and rename.
type Empty struct{}

func checkMode(op, path string, m *uint32, def os.FileMode) (os.FileMode, error) {
	if m == nil {
		return def, nil
	}
	if *m > 0o777 {
		return 0, invalid(op, path, abi.FilesBadRequest, "mode must be permission bits between 0 and 0777")
	}
	return os.FileMode(*m), nil
}

// notRegular refuses reading or writing a FIFO, socket or device: opening
// one may block or have side effects.
func notRegular(op, path string) *Error {
	return invalid(op, path, abi.FilesBadRequest, path+" is not a regular file")
}

// Read returns the bytes of a file, a line range or a byte range, at most
// the read limit; more is a TooLarge error, decided before reading when
// the size is known.
func (s *Set) Read(ctx context.Context, req *ReadRequest) ([]byte, error) {
	const op = OpRead
	limit := s.opts.MaxReadBytes
	if req.MaxBytes < 0 {
		return nil, invalid(op, req.Path, abi.FilesBadRequest, "max_bytes must not be negative")
	}
	if req.MaxBytes > 0 && req.MaxBytes < limit {
		limit = req.MaxBytes
	}
	// Lines from the first to the end are the whole file.
	lines := (req.StartLine != nil && *req.StartLine != 0) || req.EndLine != nil
	switch {
	case req.StartLine != nil && *req.StartLine < 0, req.EndLine != nil && *req.EndLine < 0:
		return nil, invalid(op, req.Path, abi.FilesBadRequest, "start_line and end_line must not be negative")
	case req.Offset < 0, req.Length != nil && *req.Length < 0:
		return nil, invalid(op, req.Path, abi.FilesBadRequest, "offset and length must not be negative")
	case (req.StartLine != nil || req.EndLine != nil) && (req.Offset != 0 || req.Length != nil):
		return nil, invalid(op, req.Path, abi.FilesBadRequest, "a line range and a byte range cannot be combined")
	}
	t, err := s.lookup(op, req.Path, false)
	if err != nil {
		return nil, err
	}
	f, size, err := t.openRegular(op)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if lines {
		return readLines(ctx, f, req, limit, t)
	}
	want := max(size-req.Offset, 0)
	if req.Length != nil {
		want = min(want, *req.Length)
	}
	if want > limit {
		return nil, tooLarge(op, t.given, limit)
	}
	// The size may be wrong (a growing file, /proc): read at most one
	// byte past the limit to tell.
	n := limit + 1
	if req.Length != nil {
		n = min(n, *req.Length)
	}
	var buf bytes.Buffer
	buf.Grow(int(want) + 1)
	if _, err := buf.ReadFrom(io.NewSectionReader(f, req.Offset, n)); err != nil {
		return nil, t.err(op, err)
	}
	if int64(buf.Len()) > limit {
		return nil, tooLarge(op, t.given, limit)
	}
	return buf.Bytes(), nil
}

// openRegular opens t for reading: EISDIR for a directory, a bad_request
// for anything but a regular file (checked before opening, then again on
// the descriptor).
func (t *target) openRegular(op string) (*os.File, int64, error) {
	fi, err := t.or.Stat(t.rel)
	if err != nil {
		return nil, 0, t.err(op, err)
	}
	if fi.IsDir() {
		return nil, 0, errnoError(op, t.given, eISDIR, nil)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, notRegular(op, t.given)
	}
	f, err := t.or.OpenFile(t.rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, 0, t.err(op, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, t.err(op, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, errnoError(op, t.given, eISDIR, nil)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, notRegular(op, t.given)
	}
	return f, fi.Size(), nil
}

func readLines(ctx context.Context, f *os.File, req *ReadRequest, limit int64, t *target) ([]byte, error) {
	const op = OpRead
	start, end := int64(0), int64(-1)
	if req.StartLine != nil {
		start = *req.StartLine
	}
	if req.EndLine != nil {
		end = *req.EndLine
	}
	var out []byte
	if end >= 0 && end <= start {
		return out, nil
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var line int64
	var scanned int64
	for end < 0 || line < end {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			if line >= start {
				need := int64(len(out)) + int64(len(frag))
				if need > limit {
					return nil, tooLarge(op, t.given, limit)
				}
				if need > int64(cap(out)) { // double: append grows large slices by 1.25x
					grown := make([]byte, len(out), min(max(2*int64(cap(out)), need, 4096), limit))
					copy(grown, out)
					out = grown
				}
				out = append(out, frag...)
			}
			if frag[len(frag)-1] == '\n' {
				line++
			}
			scanned += int64(len(frag))
			if scanned >= 1<<20 {
				scanned = 0
				if err := ctx.Err(); err != nil {
					return nil, t.err(op, err)
				}
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			return out, nil
		default:
			return nil, t.err(op, err)
		}
	}
	return out, nil
}

// Write writes data to a file, creating missing parent directories.
func (s *Set) Write(_ context.Context, req *WriteRequest, data []byte) (*WriteResult, error) {
	const op = OpWrite
	mode, err := checkMode(op, req.Path, req.Mode, 0o644)
	if err != nil {
		return nil, err
	}
	t, err := s.lookup(op, req.Path, true)
	if err != nil {
		return nil, err
	}
	if t.rel == "." {
		return nil, errnoError(op, t.given, eISDIR, nil)
	}
	if dir := filepath.Dir(t.rel); dir != "." {
		if err := t.or.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) { // a parent is not a directory
				err = syscall.ENOTDIR
			}
			return nil, t.err(op, err)
		}
	}
	if fi, err := t.or.Stat(t.rel); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, notRegular(op, t.given)
	}
	flag := os.O_WRONLY | os.O_CREATE | oNonblock
	if req.Append {
		flag |= os.O_APPEND
	} else {
		flag |= os.O_TRUNC
	}
	if req.Exclusive {
		flag |= os.O_EXCL
	}
	f, err := t.or.OpenFile(t.rel, flag, mode)
	if err != nil {
		return nil, t.err(op, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(op, t.given)
	}
	n, err := f.Write(data)
	if err == nil && req.Mode != nil {
		err = f.Chmod(mode) // on the descriptor: no path race
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, t.err(op, err)
	}
	return &WriteResult{BytesWritten: int64(n)}, nil
}

func infoOf(name, path string, fi fs.FileInfo) *Info {
	return &Info{
		Name:         name,
		Path:         path,
		IsDirectory:  fi.IsDir(),
		IsFile:       fi.Mode().IsRegular(),
		IsSymlink:    fi.Mode()&fs.ModeSymlink != 0,
		Size:         fi.Size(),
		Mode:         uint32(fi.Mode().Perm()),
		ModeString:   fi.Mode().String(),
		ModifiedTime: fi.ModTime().UTC(),
	}
}

// Stat returns the metadata of a path (of a link itself with Lstat).
func (s *Set) Stat(_ context.Context, req *StatRequest) (*Info, error) {
	const op = OpStat
	t, err := s.lookup(op, req.Path, false)
	if err != nil {
		return nil, err
	}
	var fi fs.FileInfo
	if req.Lstat {
		fi, err = t.or.Lstat(t.rel)
	} else {
		fi, err = t.or.Stat(t.rel)
	}
	if err != nil {
		return nil, t.err(op, err)
	}
	info := infoOf(filepath.Base(t.abs), t.abs, fi)
	if info.IsSymlink {
		if info.SymlinkTarget, err = t.or.Readlink(t.rel); err != nil {
			return nil, t.err(op, err)
		}
	}
	return info, nil
}

// Exists reports whether a path exists, following links within the root.
// A missing path or parent (ENOENT, ENOTDIR) is not an error; a path
// outside the grant or escaping it is.
func (s *Set) Exists(_ context.Context, req *ExistsRequest) (*ExistsResult, error) {
	const op = OpExists
	t, err := s.lookup(op, req.Path, false)
	if err != nil {
		return nil, err
	}
	fi, err := t.or.Stat(t.rel)
	if err != nil {
		e := t.err(op, err).(*Error)
		if e.ErrnoName == "ENOENT" || e.ErrnoName == "ENOTDIR" {
			return &ExistsResult{}, nil
		}
		return nil, e
	}
	return &ExistsResult{Exists: true, IsDirectory: fi.IsDir(), IsFile: fi.Mode().IsRegular()}, nil
}

// List lists one directory, sorted by name, at most MaxEntries (capped at
// the Set's 10,000); TotalCount counts every entry.
func (s *Set) List(ctx context.Context, req *ListRequest) (*ListResult, error) {
	const op = OpList
	limit := s.opts.MaxListEntries
	if req.MaxEntries < 0 {
		return nil, invalid(op, req.Path, abi.FilesBadRequest, "max_entries must not be negative")
	}
	if req.MaxEntries > 0 && req.MaxEntries < limit {
		limit = req.MaxEntries
	}
	t, err := s.lookup(op, req.Path, false)
	if err != nil {
		return nil, err
	}
	dir, err := openDir(t.or, t.rel)
	if err != nil {
		return nil, t.err(op, err)
	}
	defer dir.Close()
	ents, total, err := readDirSorted(ctx, dir, limit)
	if err != nil {
		return nil, t.err(op, err)
	}
	res := &ListResult{Path: t.abs, Entries: make([]Entry, 0, len(ents)), TotalCount: total}
	for _, de := range ents {
		e, ok := entryOf(dir, de, t.abs, 0)
		if !ok {
			res.TotalCount--
			continue
		}
		res.Entries = append(res.Entries, e)
	}
	res.Truncated = res.TotalCount > len(res.Entries)
	return res, nil
}

// openDir opens directory rel as a root of its own, so its entries are
// looked up relative to the directory's descriptor (ENOTDIR if it is not
// a directory).
func openDir(or *os.Root, rel string) (*os.Root, error) {
	d, err := or.OpenRoot(rel)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err.Error() == "not a directory" { // os.Root's own text
		pe.Err = syscall.ENOTDIR
	}
	return d, err
}

// entryOf describes entry de of dir. ok is false if it vanished.
func entryOf(dir *os.Root, de fs.DirEntry, parent string, depth int) (Entry, bool) {
	e := Entry{Name: de.Name(), Path: filepath.Join(parent, de.Name()), Depth: depth}
	fi, err := dir.Lstat(de.Name())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return e, false
		}
		// Keep what readdir knew rather than drop the entry.
		e.IsDirectory = de.IsDir()
		e.IsSymlink = de.Type()&fs.ModeSymlink != 0
		return e, true
	}
	e.IsDirectory = fi.IsDir()
	e.IsSymlink = fi.Mode()&fs.ModeSymlink != 0
	e.Size = fi.Size()
	e.ModifiedTime = fi.ModTime().UTC()
	return e, true
}

// Walk lists a tree depth-first, siblings by name, not following links.
func (s *Set) Walk(ctx context.Context, req *WalkRequest) (*WalkResult, error) {
	const op = OpWalk
	if req.MaxEntries < 0 || req.MaxDepth < 0 {
		return nil, invalid(op, req.Path, abi.FilesBadRequest, "max_entries and max_depth must not be negative")
	}
	limit := min(DefaultMaxWalkEntries, s.opts.MaxWalkEntries)
	if req.MaxEntries > 0 {
		limit = min(req.MaxEntries, s.opts.MaxWalkEntries)
	}
	t, err := s.lookup(op, req.Path, false)
	if err != nil {
		return nil, err
	}
	res := &WalkResult{Path: t.abs, Entries: []Entry{}, Errors: []*Error{}}

	// A stack of entries still to emit; a directory's children are read
	// when it is popped (after it is emitted) and pushed in reverse.
	type item struct {
		e   Entry
		rel string // relative to the walked directory
	}
	var stack []item
	// readChildren reads directory rel (relative to the walked root dir).
	readChildren := func(rel, abs string, depth int) error {
		dir, err := openDir(t.or, filepath.Join(t.rel, rel))
		if err != nil {
			return err
		}
		defer dir.Close()
		keep := limit - len(res.Entries) + 1 // one more tells truncation
		ents, total, err := readDirSorted(ctx, dir, keep)
		if err != nil {
			return err
		}
		kids := make([]item, 0, len(ents))
		for _, de := range ents {
			e, ok := entryOf(dir, de, abs, depth)
			if !ok {
				total--
				continue
			}
			kids = append(kids, item{e: e, rel: filepath.Join(rel, de.Name())})
		}
		if total > len(kids) {
			res.Truncated = true
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
		return nil
	}
	if err := readChildren(".", t.abs, 1); err != nil {
		return nil, t.err(op, err)
	}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, t.err(op, err)
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(res.Entries) >= limit {
			res.Truncated = true
			break
		}
		res.Entries = append(res.Entries, it.e)
		if !it.e.IsDirectory || it.e.IsSymlink {
			continue
		}
		if req.MaxDepth > 0 && it.e.Depth >= req.MaxDepth {
			res.DepthLimited = true
			continue
		}
		if err := readChildren(it.rel, it.e.Path, it.e.Depth+1); err != nil {
			if len(res.Errors) >= maxWalkErrors {
				res.ErrorsTruncated = true
				continue
			}
			res.Errors = append(res.Errors, osError(op, it.e.Path, err))
		}
	}
	return res, nil
}

// Mkdir creates a directory (and its parents with Parents).
func (s *Set) Mkdir(_ context.Context, req *MkdirRequest) (*MkdirResult, error) {
	const op = OpMkdir
	mode, err := checkMode(op, req.Path, req.Mode, 0o755)
	if err != nil {
		return nil, err
	}
	t, err := s.lookup(op, req.Path, true)
	if err != nil {
		return nil, err
	}
	if !req.Parents {
		if err := t.or.Mkdir(t.rel, mode); err != nil {
			return nil, t.err(op, err)
		}
		return &MkdirResult{Created: true}, nil
	}
	if fi, err := t.or.Stat(t.rel); err == nil && fi.IsDir() {
		return &MkdirResult{Created: false}, nil
	}
	if err := t.or.MkdirAll(t.rel, mode); err != nil {
		return nil, t.err(op, err)
	}
	return &MkdirResult{Created: true}, nil
}

// Remove removes a file, a link (not its target) or an empty directory;
// with Recursive, a directory and its contents. A missing path is
// ENOENT either way; a root itself is refused.
func (s *Set) Remove(_ context.Context, req *RemoveRequest) (*Empty, error) {
	const op = OpRemove
	t, err := s.lookup(op, req.Path, true)
	if err != nil {
		return nil, err
	}
	if t.rel == "." {
		return nil, denied(op, t.given, t.given+" is a granted root and cannot be removed")
	}
	fi, err := t.or.Lstat(t.rel)
	if err != nil {
		return nil, t.err(op, err)
	}
	if req.Recursive && fi.IsDir() {
		err = t.or.RemoveAll(t.rel)
	} else {
		err = t.or.Remove(t.rel)
	}
	if err != nil {
		return nil, t.err(op, err)
	}
	return &Empty{}, nil
}

// Rename renames (moves) path to target, both in writable roots. A link
// is renamed itself. Paths in two roots where neither contains the other
// cannot be renamed (EXDEV): copy and remove instead.
func (s *Set) Rename(_ context.Context, req *RenameRequest) (*Empty, error) {
	const op = OpRename
	if req.Target == "" {
		return nil, invalid(op, req.Path, abi.FilesInvalidTarget, "target is required")
	}
	src, err := s.lookup(op, req.Path, true)
	if err != nil {
		return nil, err
	}
	dst, err := s.lookup(op, req.Target, true)
	if err != nil {
		return nil, err
	}
	if src.rel == "." {
		return nil, denied(op, src.given, src.given+" is a granted root and cannot be renamed")
	}
	if dst.rel == "." {
		return nil, denied(op, dst.given, dst.given+" is a granted root and cannot be replaced")
	}
	or, srel, drel := src.or, src.rel, dst.rel
	switch {
	case src.root == dst.root:
	case pathx.Within(dst.root.Path, src.root.Path): // src's root holds dst's
		drel = relTo(src.root.Path, dst.abs)
	case pathx.Within(src.root.Path, dst.root.Path):
		or, srel = dst.or, relTo(dst.root.Path, src.abs)
	default:
		e := errnoError(op, src.given, eXDEV, nil)
		e.Message += ": " + req.Path + " and " + req.Target + " are in different roots"
		return nil, e
	}
	if _, err := or.Lstat(srel); err != nil {
		return nil, src.err(op, err)
	}
	if !req.Overwrite {
		if _, err := or.Lstat(drel); err == nil {
			return nil, errnoError(op, dst.given, eEXIST, nil)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, dst.err(op, err)
		}
	}
	if err := or.Rename(srel, drel); err != nil {
		e := osError(op, src.given, err)
		if e.ErrnoName == "EINVAL" { // e.g. a directory into itself
			e.ErrorType = abi.FilesInvalidTarget
		}
		return nil, e
	}
	return &Empty{}, nil
}

func relTo(root, abs string) string {
	r, err := filepath.Rel(root, abs)
	if err != nil {
		return abs // unreachable: abs is below root
	}
	return r
}
