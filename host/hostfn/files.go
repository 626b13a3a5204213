package hostfn

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/aiodhq/aiod/host/caps"
	"github.com/aiodhq/aiod/host/fsroot"
)

// FilesModule is the import module of the files family.
const FilesModule = "aiod:files"

// FilesFamily is the aiod:files family (spec/abi/v1/files.md): read,
// write, stat, exists, list, walk, mkdir, remove and rename, each scoped to
// the calling plugin's granted file roots. Every failure carries aiod's
// structured file error (errno, errno_name, error_type, exception_type,
// message, operation, path, retryable) besides code and message.
type FilesFamily struct {
	opts fsroot.Options
	sets sync.Map // *caps.Grant -> *fsroot.Set
}

// Files returns the files family with the default limits.
func Files() Family { return NewFiles(fsroot.Options{}) }

// NewFiles returns a files family with the given limits.
func NewFiles(opts fsroot.Options) *FilesFamily { return &FilesFamily{opts: opts} }

// Name is caps.Files.
func (*FilesFamily) Name() caps.Family { return caps.Files }

// Defs are the functions of aiod:files.
func (f *FilesFamily) Defs() []Def {
	return []Def{
		ReqResp(FilesModule, "read", f.read),
		ReqResp(FilesModule, "write", f.write),
		ReqResp(FilesModule, "stat", fileOp(f, fsroot.OpStat, (*fsroot.Set).Stat)),
		ReqResp(FilesModule, "exists", fileOp(f, fsroot.OpExists, (*fsroot.Set).Exists)),
		ReqResp(FilesModule, "list", fileOp(f, fsroot.OpList, (*fsroot.Set).List)),
		ReqResp(FilesModule, "walk", fileOp(f, fsroot.OpWalk, (*fsroot.Set).Walk)),
		ReqResp(FilesModule, "mkdir", fileOp(f, fsroot.OpMkdir, (*fsroot.Set).Mkdir)),
		ReqResp(FilesModule, "remove", fileOp(f, fsroot.OpRemove, (*fsroot.Set).Remove)),
		ReqResp(FilesModule, "rename", fileOp(f, fsroot.OpRename, (*fsroot.Set).Rename)),
	}
}

// Set returns the fsroot.Set of grant g, opening it on first use; it is
// cached per grant until Release. It fails (denied) if g grants no files.
func (f *FilesFamily) Set(g *caps.Grant) (*fsroot.Set, error) {
	return f.set(g, "resolve", "")
}

func (f *FilesFamily) set(g *caps.Grant, op, path string) (*fsroot.Set, error) {
	if g == nil || !g.Has(caps.Files) || len(g.FileRoots) == 0 {
		return nil, FileError(fsroot.DeniedError(op, path, "the plugin has no files grant"))
	}
	if s, ok := f.sets.Load(g); ok {
		return s.(*fsroot.Set), nil
	}
	s, err := fsroot.New(g.FileRoots, f.opts)
	if err != nil {
		return nil, Errorf(Internal, "%v", err)
	}
	if prev, loaded := f.sets.LoadOrStore(g, s); loaded {
		s.Close() // nothing opened yet
		return prev.(*fsroot.Set), nil
	}
	return s, nil
}

// Release closes and forgets the Set of grant g (when its plugin is
// unloaded). Calls still running with it fail.
func (f *FilesFamily) Release(g *caps.Grant) {
	if s, ok := f.sets.LoadAndDelete(g); ok {
		s.(*fsroot.Set).Close()
	}
}

// Close releases every Set.
func (f *FilesFamily) Close() error {
	f.sets.Range(func(k, v any) bool {
		f.sets.Delete(k)
		v.(*fsroot.Set).Close()
		return true
	})
	return nil
}

// FileError converts an *fsroot.Error into an *Error whose Detail is the
// structured file error; other errors are returned as they are.
func FileError(err error) error {
	var fe *fsroot.Error
	if !errors.As(err, &fe) {
		return err
	}
	code := IO
	switch fe.Code {
	case fsroot.CodeDenied:
		code = Denied
	case fsroot.CodeInvalid:
		code = Invalid
	case fsroot.CodeNotFound:
		code = NotFound
	case fsroot.CodeExists:
		code = Exists
	case fsroot.CodeTooLarge:
		code = TooLarge
	case fsroot.CodeUnavailable:
		code = Unavailable
	}
	return &Error{Code: code, Message: fe.Message, Detail: fe.Fields()}
}

// decodeStrict decodes one JSON object, refusing unknown fields and
// trailing data, into v; the error is a structured bad_request.
func decodeStrict(op string, raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil && d.Decode(new(json.RawMessage)) != io.EOF {
		err = errors.New("trailing data after the JSON object")
	}
	if err != nil {
		return FileError(fsroot.InvalidError(op, pathOf(raw), "bad request: "+err.Error()))
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

// fileOp wraps a JSON-in, JSON-out operation of fsroot.Set.
func fileOp[Req, Resp any](f *FilesFamily, op string, fn func(*fsroot.Set, context.Context, *Req) (Resp, error)) func(context.Context, *Call, []byte) ([]byte, error) {
	return func(ctx context.Context, c *Call, raw []byte) ([]byte, error) {
		var req Req
		if err := decodeStrict(op, raw, &req); err != nil {
			return nil, err
		}
		s, err := f.set(c.Grant, op, pathOf(raw))
		if err != nil {
			return nil, err
		}
		resp, err := fn(s, ctx, &req)
		if err != nil {
			return nil, FileError(err)
		}
		return json.Marshal(resp)
	}
}

// read answers with the raw bytes of the file (not JSON).
func (f *FilesFamily) read(ctx context.Context, c *Call, raw []byte) ([]byte, error) {
	var req fsroot.ReadRequest
	if err := decodeStrict(fsroot.OpRead, raw, &req); err != nil {
		return nil, err
	}
	s, err := f.set(c.Grant, fsroot.OpRead, req.Path)
	if err != nil {
		return nil, err
	}
	b, err := s.Read(ctx, &req)
	if err != nil {
		return nil, FileError(err)
	}
	return b, nil
}

// write takes a 4-byte little-endian header length, the JSON header
// (fsroot.WriteRequest), then the content bytes to the end.
func (f *FilesFamily) write(ctx context.Context, c *Call, raw []byte) ([]byte, error) {
	const op = fsroot.OpWrite
	if len(raw) < 4 {
		return nil, FileError(fsroot.InvalidError(op, "", "bad request: shorter than the 4-byte header length"))
	}
	n := binary.LittleEndian.Uint32(raw)
	if uint64(n) > uint64(len(raw)-4) {
		return nil, FileError(fsroot.InvalidError(op, "", "bad request: header length exceeds the request"))
	}
	hdr, content := raw[4:4+n], raw[4+n:]
	var req fsroot.WriteRequest
	if err := decodeStrict(op, hdr, &req); err != nil {
		return nil, err
	}
	s, err := f.set(c.Grant, op, req.Path)
	if err != nil {
		return nil, err
	}
	res, err := s.Write(ctx, &req, content)
	if err != nil {
		return nil, FileError(err)
	}
	return json.Marshal(res)
}
