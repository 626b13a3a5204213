// Package files is the aiod:files host function family
// (spec/abi/v1/files.md), over host/fsroot.
package files

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/fsroot"
	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/sdk/abi"
)

// Family is the aiod:files family (spec/abi/v1/files.md): read,
// write, stat, exists, list, walk, mkdir, remove and rename, each scoped to
// the calling plugin's granted file roots. Every failure carries aiod's
// structured file error (errno, errno_name, error_type, exception_type,
// message, operation, path, retryable) besides code and message.
type Family struct {
	opts fsroot.Options
	sets sync.Map // setKey -> *fsroot.Set
	// ownerDirs, when set, gives each owner its own directories
	// (SetOwnerDirs).
	ownerDirs func(owner string) (map[string]string, error)
}

// setKey is a grant's Set, per owner when the family maps directories
// per owner ("" otherwise).
type setKey struct {
	g     *caps.Grant
	owner string
}

// SetOwnerDirs makes every owner see its own directories: dirs maps the
// directories of the grants as plugins see them (/workspace, /tmp) to
// that owner's host directories, and a Set is kept per grant and owner
// (fsroot.NewMapped; roots outside the mapped directories are left out).
// Call it before the family serves calls.
func (f *Family) SetOwnerDirs(dirs func(owner string) (map[string]string, error)) {
	f.ownerDirs = dirs
}

// New returns a files family with the given limits.
func New(opts fsroot.Options) *Family { return &Family{opts: opts} }

// Name is abi.FamilyFiles.
func (*Family) Name() abi.Family { return abi.FamilyFiles }

// Defs are the functions of aiod:files.
func (f *Family) Defs() []hostfn.Def {
	return []hostfn.Def{
		hostfn.ReqResp(abi.ModuleFiles, "read", f.read),
		hostfn.ReqResp(abi.ModuleFiles, "write", f.write),
		hostfn.ReqResp(abi.ModuleFiles, "stat", fileOp(f, fsroot.OpStat, stat)),
		hostfn.ReqResp(abi.ModuleFiles, "exists", fileOp(f, fsroot.OpExists, exists)),
		hostfn.ReqResp(abi.ModuleFiles, "list", fileOp(f, fsroot.OpList, list)),
		hostfn.ReqResp(abi.ModuleFiles, "walk", fileOp(f, fsroot.OpWalk, walk)),
		hostfn.ReqResp(abi.ModuleFiles, "mkdir", fileOp(f, fsroot.OpMkdir, mkdir)),
		hostfn.ReqResp(abi.ModuleFiles, "remove", fileOp(f, fsroot.OpRemove, remove)),
		hostfn.ReqResp(abi.ModuleFiles, "rename", fileOp(f, fsroot.OpRename, rename)),
	}
}

// Set returns the fsroot.Set of grant g, opening it on first use; it is
// cached per grant until Release. It fails (denied) if g grants no files.
func (f *Family) Set(g *caps.Grant) (*fsroot.Set, error) {
	return f.set(g, "", "resolve", "")
}

// SetFor is Set for the calls of owner (the same as Set unless
// SetOwnerDirs was called).
func (f *Family) SetFor(g *caps.Grant, owner string) (*fsroot.Set, error) {
	return f.set(g, owner, "resolve", "")
}

func (f *Family) set(g *caps.Grant, owner, op, path string) (*fsroot.Set, error) {
	if g == nil || !g.Has(abi.FamilyFiles) || len(g.FileRoots) == 0 {
		return nil, Error(fsroot.DeniedError(op, path, "the plugin has no files grant"))
	}
	if f.ownerDirs == nil {
		owner = ""
	}
	key := setKey{g, owner}
	if s, ok := f.sets.Load(key); ok {
		return s.(*fsroot.Set), nil
	}
	var s *fsroot.Set
	var err error
	if f.ownerDirs != nil {
		var dirs map[string]string
		if dirs, err = f.ownerDirs(owner); err != nil {
			return nil, hostfn.Errorf(abi.Internal, "directories of %q: %v", owner, err)
		}
		s, err = fsroot.NewMapped(g.FileRoots, dirs, f.opts)
	} else {
		s, err = fsroot.New(g.FileRoots, f.opts)
	}
	if err != nil {
		return nil, hostfn.Errorf(abi.Internal, "%v", err)
	}
	if prev, loaded := f.sets.LoadOrStore(key, s); loaded {
		s.Close() // nothing opened yet
		return prev.(*fsroot.Set), nil
	}
	return s, nil
}

// Provision implements Lifecycle. The Set of a plugin opens lazily, on
// its first call, so a root that is missing at load fails that call
// rather than the load.
func (f *Family) Provision(context.Context, *caps.Grant) error { return nil }

// Cleanup implements Lifecycle: it closes and forgets the Set of the
// unloaded plugin of grant g.
func (f *Family) Cleanup(g *caps.Grant) { f.Release(g) }

// Release closes and forgets the Set of grant g (when its plugin is
// unloaded). Calls still running with it fail.
func (f *Family) Release(g *caps.Grant) {
	f.sets.Range(func(k, v any) bool {
		if k.(setKey).g == g {
			if s, ok := f.sets.LoadAndDelete(k); ok {
				s.(*fsroot.Set).Close()
			}
		}
		return true
	})
}

// Close releases every Set.
func (f *Family) Close() error {
	f.sets.Range(func(k, v any) bool {
		f.sets.Delete(k)
		v.(*fsroot.Set).Close()
		return true
	})
	return nil
}

// Error converts an *fsroot.Error into an *Error whose Detail is the
// structured file error (abi.FilesError); other errors are returned as
// they are.
func Error(err error) error {
	var fe *fsroot.Error
	if !errors.As(err, &fe) {
		return err
	}
	w := filesError(fe)
	b, _ := json.Marshal(w)
	var detail map[string]any
	_ = json.Unmarshal(b, &detail)
	return &hostfn.Error{Code: fe.Code, Message: fe.Message, Detail: detail}
}

// filesError is the wire form of fe (without code).
func filesError(fe *fsroot.Error) abi.FilesError {
	w := abi.FilesError{ErrorType: fe.ErrorType, ExceptionType: fe.ExceptionType, Message: fe.Message,
		Operation: fe.Operation, Path: fe.Path, Retryable: fe.Retryable}
	if fe.ErrnoName != "" || fe.Errno != 0 {
		errno, name := fe.Errno, fe.ErrnoName
		w.Errno, w.ErrnoName = &errno, &name
	}
	return w
}

// decodeStrict decodes one JSON object, refusing unknown fields and
// trailing data, into v; the error is a structured bad_request.
func decodeStrict(op string, raw []byte, v any) error {
	if err := hostfn.DecodeRequest(raw, v); err != nil {
		return Error(fsroot.InvalidError(op, pathOf(raw), "bad request: "+err.Error()))
	}
	return nil
}

// pathOf digs the path out of a request for an error, best effort.
func pathOf(raw []byte) string {
	var p struct {
		Path string `json:"path"`
	}
	json.Unmarshal(raw, &p)
	return p.Path
}

// fileOp wraps a JSON-in, JSON-out operation on the plugin's fsroot.Set.
func fileOp[Req, Resp any](f *Family, op string, fn func(context.Context, *fsroot.Set, *Req) (Resp, error)) func(context.Context, *hostfn.Call, []byte) ([]byte, error) {
	return func(ctx context.Context, c *hostfn.Call, raw []byte) ([]byte, error) {
		var req Req
		if err := decodeStrict(op, raw, &req); err != nil {
			return nil, err
		}
		s, err := f.set(c.Grant, c.Owner, op, pathOf(raw))
		if err != nil {
			return nil, err
		}
		resp, err := fn(ctx, s, &req)
		if err != nil {
			return nil, Error(err)
		}
		return json.Marshal(resp)
	}
}

// The operations: each maps its wire request to fsroot's and fsroot's
// result to the wire response.

func stat(ctx context.Context, s *fsroot.Set, r *abi.FilesStatRequest) (*abi.FilesInfo, error) {
	i, err := s.Stat(ctx, &fsroot.StatRequest{Path: r.Path, Lstat: r.Lstat})
	if err != nil {
		return nil, err
	}
	return &abi.FilesInfo{Name: i.Name, Path: i.Path, IsDirectory: i.IsDirectory, IsFile: i.IsFile, IsSymlink: i.IsSymlink,
		Size: i.Size, Mode: i.Mode, ModeString: i.ModeString, ModifiedTime: i.ModifiedTime, SymlinkTarget: i.SymlinkTarget}, nil
}

func exists(ctx context.Context, s *fsroot.Set, r *abi.FilesPathRequest) (*abi.FilesExistsResponse, error) {
	e, err := s.Exists(ctx, &fsroot.ExistsRequest{Path: r.Path})
	if err != nil {
		return nil, err
	}
	return &abi.FilesExistsResponse{Exists: e.Exists, IsDirectory: e.IsDirectory, IsFile: e.IsFile}, nil
}

func entries(es []fsroot.Entry) []abi.FilesEntry {
	out := make([]abi.FilesEntry, len(es))
	for i, e := range es {
		out[i] = abi.FilesEntry{Name: e.Name, Path: e.Path, IsDirectory: e.IsDirectory, IsSymlink: e.IsSymlink,
			Size: e.Size, ModifiedTime: e.ModifiedTime, Depth: e.Depth}
	}
	return out
}

func list(ctx context.Context, s *fsroot.Set, r *abi.FilesListRequest) (*abi.FilesListResponse, error) {
	l, err := s.List(ctx, &fsroot.ListRequest{Path: r.Path, MaxEntries: r.MaxEntries})
	if err != nil {
		return nil, err
	}
	return &abi.FilesListResponse{Path: l.Path, Entries: entries(l.Entries), TotalCount: l.TotalCount, Truncated: l.Truncated}, nil
}

func walk(ctx context.Context, s *fsroot.Set, r *abi.FilesWalkRequest) (*abi.FilesWalkResponse, error) {
	w, err := s.Walk(ctx, &fsroot.WalkRequest{Path: r.Path, MaxDepth: r.MaxDepth, MaxEntries: r.MaxEntries})
	if err != nil {
		return nil, err
	}
	resp := &abi.FilesWalkResponse{Path: w.Path, Entries: entries(w.Entries), Truncated: w.Truncated,
		DepthLimited: w.DepthLimited, Errors: make([]abi.FilesError, len(w.Errors)), ErrorsTruncated: w.ErrorsTruncated}
	for i, e := range w.Errors {
		resp.Errors[i] = filesError(e)
	}
	return resp, nil
}

func mkdir(ctx context.Context, s *fsroot.Set, r *abi.FilesMkdirRequest) (*abi.FilesMkdirResponse, error) {
	m, err := s.Mkdir(ctx, &fsroot.MkdirRequest{Path: r.Path, Parents: r.Parents, Mode: r.Mode})
	if err != nil {
		return nil, err
	}
	return &abi.FilesMkdirResponse{Created: m.Created}, nil
}

func remove(ctx context.Context, s *fsroot.Set, r *abi.FilesRemoveRequest) (*abi.Empty, error) {
	if _, err := s.Remove(ctx, &fsroot.RemoveRequest{Path: r.Path, Recursive: r.Recursive}); err != nil {
		return nil, err
	}
	return &abi.Empty{}, nil
}

func rename(ctx context.Context, s *fsroot.Set, r *abi.FilesRenameRequest) (*abi.Empty, error) {
	if _, err := s.Rename(ctx, &fsroot.RenameRequest{Path: r.Path, Target: r.Target, Overwrite: r.Overwrite}); err != nil {
		return nil, err
	}
	return &abi.Empty{}, nil
}

// read answers with the raw bytes of the file (not JSON).
func (f *Family) read(ctx context.Context, c *hostfn.Call, raw []byte) ([]byte, error) {
	var req abi.FilesReadRequest
	if err := decodeStrict(fsroot.OpRead, raw, &req); err != nil {
		return nil, err
	}
	s, err := f.set(c.Grant, c.Owner, fsroot.OpRead, req.Path)
	if err != nil {
		return nil, err
	}
	b, err := s.Read(ctx, &fsroot.ReadRequest{Path: req.Path, StartLine: req.StartLine, EndLine: req.EndLine,
		Offset: req.Offset, Length: req.Length, MaxBytes: req.MaxBytes})
	if err != nil {
		return nil, Error(err)
	}
	return b, nil
}

// write takes a 4-byte little-endian header length, the JSON header
// (abi.FilesWriteRequest), then the content bytes to the end.
func (f *Family) write(ctx context.Context, c *hostfn.Call, raw []byte) ([]byte, error) {
	const op = fsroot.OpWrite
	if len(raw) < 4 {
		return nil, Error(fsroot.InvalidError(op, "", "bad request: shorter than the 4-byte header length"))
	}
	n := binary.LittleEndian.Uint32(raw)
	if uint64(n) > uint64(len(raw)-4) {
		return nil, Error(fsroot.InvalidError(op, "", "bad request: header length exceeds the request"))
	}
	hdr, content := raw[4:4+n], raw[4+n:]
	var req abi.FilesWriteRequest
	if err := decodeStrict(op, hdr, &req); err != nil {
		return nil, err
	}
	s, err := f.set(c.Grant, c.Owner, op, req.Path)
	if err != nil {
		return nil, err
	}
	res, err := s.Write(ctx, &fsroot.WriteRequest{Path: req.Path, Append: req.Append, Exclusive: req.Exclusive, Mode: req.Mode}, content)
	if err != nil {
		return nil, Error(err)
	}
	return json.Marshal(abi.FilesWriteResponse{BytesWritten: res.BytesWritten})
}
