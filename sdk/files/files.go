// Package files is the guest side of the aiod:files host functions
// (spec/abi/v1/files.md): reading, writing and listing files inside the
// roots the operator granted the plugin. The plugin's manifest must ask
// for the files capability; paths must be absolute.
//
//	b, err := files.Read("/tmp/notes.txt", nil)
//	var fe *files.Error
//	if errors.As(err, &fe) {
//		// fe marshals to aiod's structured file error:
//		// {"errno":2,"errno_name":"ENOENT","error_type":"not_found",...}
//	}
//
// Every failure is a *Error; errors.Is(err, fs.ErrNotExist),
// fs.ErrExist and fs.ErrPermission work on it.
//
// Built natively (not wasip1), calls go to the fake host installed by the
// SDK's test support.
package files

import (
	"encoding/binary"
	"encoding/json"
	"io/fs"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Module is the import module of the host functions.
const Module = abi.ModuleFiles

// Error is a failed file operation: the host's error code and aiod's
// structured file error. json.Marshal of an *Error gives exactly aiod's
// object (keys errno, errno_name, error_type, exception_type, message,
// operation, path, retryable; errno and errno_name null when unknown), so
// a tool can pass it straight through as {"error": err, ...}.
type Error struct {
	// Code is the host function error code: "denied" (outside the grant),
	// "invalid", "not_found", "exists", "io", "too_large",
	// "unavailable", "internal".
	Code          string
	Errno         int // Linux errno number; 0 if none
	ErrnoName     string
	ErrorType     string // not_found, permission_denied, already_exists, bad_request, invalid_path, invalid_target, decode_error, no_space_left, other
	ExceptionType string // FileNotFoundError, PermissionError, ...
	Message       string
	Operation     string
	Path          string
	Retryable     bool
}

func (e *Error) Error() string { return e.Message }

// Is reports whether e matches fs.ErrNotExist, fs.ErrExist or
// fs.ErrPermission.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.ErrorType == "not_found"
	case fs.ErrExist:
		return e.ErrorType == "already_exists"
	case fs.ErrPermission:
		return e.ErrorType == "permission_denied"
	}
	return false
}

// ErrorSchema is the JSON Schema of the object an *Error marshals to, for
// the outputSchema of a tool that passes file errors through.
const ErrorSchema = `{"additionalProperties":false,"properties":{` +
	`"errno":{"type":["integer","null"]},"errno_name":{"type":["string","null"]},` +
	`"error_type":{"type":"string"},"exception_type":{"type":"string"},"message":{"type":"string"},` +
	`"operation":{"type":"string"},"path":{"type":"string"},"retryable":{"type":"boolean"}},` +
	`"required":["error_type","message","operation","path","retryable"],"type":"object"}`

// MarshalJSON writes aiod's structured file error (without Code).
func (e Error) MarshalJSON() ([]byte, error) {
	w := abi.FilesError{ErrorType: e.ErrorType, ExceptionType: e.ExceptionType, Message: e.Message,
		Operation: e.Operation, Path: e.Path, Retryable: e.Retryable}
	if e.Errno != 0 || e.ErrnoName != "" {
		w.Errno, w.ErrnoName = &e.Errno, &e.ErrnoName
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a host error object (or aiod's structured error).
func (e *Error) UnmarshalJSON(b []byte) error {
	var w abi.FilesError
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Error{Code: w.Code, ErrorType: w.ErrorType, ExceptionType: w.ExceptionType, Message: w.Message,
		Operation: w.Operation, Path: w.Path, Retryable: w.Retryable}
	if w.Errno != nil {
		e.Errno = *w.Errno
	}
	if w.ErrnoName != nil {
		e.ErrnoName = *w.ErrnoName
	}
	return nil
}

// hostError turns a failed call's response into an *Error.
func hostError(op, path string, code uint32, resp []byte) *Error {
	e := &Error{}
	if json.Unmarshal(resp, e) != nil || e.Message == "" {
		e = &Error{Message: string(resp)}
	}
	if e.Code == "" {
		e.Code = abi.CodeName(code)
	}
	if e.Operation == "" {
		e.Operation = op
	}
	if e.Path == "" {
		e.Path = path
	}
	if e.ErrorType == "" {
		e.ErrorType = "other"
	}
	return e
}

// do calls function name with req; a failure is an *Error.
func do(name, path string, req []byte) ([]byte, error) {
	resp, code := call(name, req)
	if code != 0 {
		return nil, hostError(name, path, code, resp)
	}
	return resp, nil
}

// doJSON marshals req, calls name and decodes the answer into resp.
func doJSON(name, path string, req, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return &Error{Code: "invalid", ErrorType: "bad_request", Message: err.Error(), Operation: name, Path: path}
	}
	out, err := do(name, path, b)
	if err != nil {
		return err
	}
	if err := jsonx.Unmarshal(out, resp); err != nil {
		return &Error{Code: "internal", ErrorType: "other", Message: "bad response from the host: " + err.Error(), Operation: name, Path: path}
	}
	return nil
}

// Line returns a pointer to n, for ReadOptions.StartLine and EndLine.
func Line(n int) *int { return &n }

// ReadOptions select part of a file. The zero value reads it whole.
type ReadOptions struct {
	// StartLine (0-based, inclusive) and EndLine (exclusive) select a line
	// range; either may be nil. Lines keep their "\n".
	StartLine, EndLine *int
	// Offset and Length select a byte range (Length 0: to the end). Not
	// combinable with a line range.
	Offset, Length int64
	// MaxBytes lowers the host's read limit (16 MiB); a larger result is
	// an error with Code "too_large", not a truncation.
	MaxBytes int64
}

func line64(n *int) *int64 {
	if n == nil {
		return nil
	}
	v := int64(*n)
	return &v
}

// Read returns the raw bytes of a file, or of the part opts select (nil:
// the whole file). A directory is an EISDIR error; a file over the limit
// fails with "file exceeds the 16 MiB buffered text limit".
func Read(path string, opts *ReadOptions) ([]byte, error) {
	b, err := json.Marshal(readRequest(path, opts))
	if err != nil {
		return nil, err
	}
	resp, err := do("read", path, b)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		resp = []byte{}
	}
	return resp, nil
}

// Text is a file's content kept by the host (ReadText): it reaches the
// tool's result without being copied into the plugin, and the host
// escapes it there. Use it as a string value in sdk.JSONResult or in a
// Result's Structured value; it is valid until the call that read it
// returns. ValidUTF8 reports whether the content is UTF-8 (invalid bytes
// would be written as U+FFFD) and Len its size in bytes.
type Text = guest.Blob

// ReadText is Read for content that goes into the result as it is: the
// bytes stay on the host. Reading a 1 MiB file this way and answering it
// with sdk.JSONResult costs the plugin a few microseconds instead of
// copying and escaping the megabyte twice in wasm.
func ReadText(path string, opts *ReadOptions) (*Text, error) {
	b, err := json.Marshal(readRequest(path, opts))
	if err != nil {
		return nil, err
	}
	t, resp, code := callKeep("read", b)
	if code != 0 {
		return nil, hostError("read", path, code, resp)
	}
	return t, nil
}

func readRequest(path string, opts *ReadOptions) abi.FilesReadRequest {
	r := abi.FilesReadRequest{Path: path}
	if opts != nil {
		r.StartLine, r.EndLine, r.Offset, r.MaxBytes = line64(opts.StartLine), line64(opts.EndLine), opts.Offset, opts.MaxBytes
		if opts.Length > 0 {
			r.Length = &opts.Length
		}
	}
	return r
}

// WriteOptions tune a write. The zero value truncates or creates the file
// with mode 0644 (less the umask).
type WriteOptions struct {
	Append    bool        // append instead of truncating
	Exclusive bool        // fail (fs.ErrExist) if the file exists
	Mode      fs.FileMode // if non-zero, set exactly (permission bits only)
}

// Write writes data to a file, creating missing parent directories, and
// returns the number of bytes written.
func Write(path string, data []byte, opts *WriteOptions) (int64, error) {
	r := abi.FilesWriteRequest{Path: path}
	if opts != nil {
		r.Append, r.Exclusive = opts.Append, opts.Exclusive
		if opts.Mode != 0 {
			m := uint32(opts.Mode)
			r.Mode = &m
		}
	}
	hdr, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	req := make([]byte, 4, 4+len(hdr)+len(data))
	binary.LittleEndian.PutUint32(req, uint32(len(hdr)))
	req = append(append(req, hdr...), data...)
	resp, err := do("write", path, req)
	if err != nil {
		return 0, err
	}
	var res abi.FilesWriteResponse
	if err := jsonx.Unmarshal(resp, &res); err != nil {
		return 0, &Error{Code: "internal", ErrorType: "other", Message: "bad response from the host: " + err.Error(), Operation: "write", Path: path}
	}
	return res.BytesWritten, nil
}

// Info is a path's metadata: Name, Path, IsDirectory, IsFile, IsSymlink,
// Size, Mode (permission bits), ModeString ("-rw-r--r--"), ModifiedTime
// and SymlinkTarget (Lstat of a link).
type Info = abi.FilesInfo

// Stat returns the metadata of path, following symbolic links (within the
// root: a link leading out is denied).
func Stat(path string) (*Info, error) { return stat(path, false) }

// Lstat returns the metadata of path; a symbolic link is described
// itself, with its target text.
func Lstat(path string) (*Info, error) { return stat(path, true) }

func stat(path string, l bool) (*Info, error) {
	var info Info
	err := doJSON("stat", path, abi.FilesStatRequest{Path: path, Lstat: l}, &info)
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// Exists reports whether path exists (following links). A path outside
// the grant is an error, not false.
func Exists(path string) (bool, error) {
	var r abi.FilesExistsResponse
	err := doJSON("exists", path, abi.FilesPathRequest{Path: path}, &r)
	return r.Exists, err
}

// Entry is one entry of a listing: Name, Path, IsDirectory, IsSymlink,
// Size, ModifiedTime and Depth (Walk: 1 for the children of the walked
// directory). Links are described, not followed.
type Entry = abi.FilesEntry

// Listing is one directory, sorted by name: Path, Entries, TotalCount
// (entries in the directory) and Truncated (more than were returned).
type Listing = abi.FilesListResponse

// ListOptions tune List.
type ListOptions struct {
	MaxEntries int // 0: the host's cap, 10,000
}

// List lists one directory.
func List(path string, opts *ListOptions) (*Listing, error) {
	r := abi.FilesListRequest{Path: path}
	if opts != nil {
		r.MaxEntries = opts.MaxEntries
	}
	var l Listing
	if err := doJSON("list", path, r, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// WalkOptions bound Walk.
type WalkOptions struct {
	MaxDepth   int // 1: children only; 0: unlimited
	MaxEntries int // 0: 10,000; the host caps it at 100,000
}

// WalkResult is a tree in depth-first pre-order, siblings by name.
type WalkResult struct {
	Path            string   `json:"path"`
	Entries         []Entry  `json:"entries"`
	Truncated       bool     `json:"truncated"`     // MaxEntries reached with more left
	DepthLimited    bool     `json:"depth_limited"` // directories at MaxDepth not descended
	Errors          []*Error `json:"errors"`        // subdirectories that could not be read
	ErrorsTruncated bool     `json:"errors_truncated,omitempty"`
}

// Walk lists the tree under path. Symbolic links are listed, never
// followed.
func Walk(path string, opts *WalkOptions) (*WalkResult, error) {
	r := abi.FilesWalkRequest{Path: path}
	if opts != nil {
		r.MaxDepth, r.MaxEntries = opts.MaxDepth, opts.MaxEntries
	}
	var w WalkResult
	if err := doJSON("walk", path, r, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// MkdirOptions tune Mkdir.
type MkdirOptions struct {
	Parents bool        // create parents; an existing directory is fine
	Mode    fs.FileMode // 0: 0755 (less the umask)
}

// Mkdir creates a directory and reports whether it did (false: it
// existed, with Parents).
func Mkdir(path string, opts *MkdirOptions) (created bool, err error) {
	r := abi.FilesMkdirRequest{Path: path}
	if opts != nil {
		r.Parents = opts.Parents
		if opts.Mode != 0 {
			m := uint32(opts.Mode)
			r.Mode = &m
		}
	}
	var res abi.FilesMkdirResponse
	err = doJSON("mkdir", path, r, &res)
	return res.Created, err
}

// RemoveOptions tune Remove.
type RemoveOptions struct {
	Recursive bool // remove a directory with its contents
}

// Remove removes a file, a link (not its target) or an empty directory.
// A missing path is an error (fs.ErrNotExist).
func Remove(path string, opts *RemoveOptions) error {
	r := abi.FilesRemoveRequest{Path: path}
	if opts != nil {
		r.Recursive = opts.Recursive
	}
	return doJSON("remove", path, r, &abi.Empty{})
}

// RenameOptions tune Rename.
type RenameOptions struct {
	Overwrite bool // replace an existing target (else fs.ErrExist)
}

// Rename renames (moves) path to target; both must be in writable roots.
func Rename(path, target string, opts *RenameOptions) error {
	r := abi.FilesRenameRequest{Path: path, Target: target}
	if opts != nil {
		r.Overwrite = opts.Overwrite
	}
	return doJSON("rename", path, r, &abi.Empty{})
}
