package abi

import "time"

// The wire types of aiod:files (spec/abi/v1/files.md). read answers with
// the file's raw bytes; write's request is a 4-byte little-endian header
// length, the FilesWriteRequest header, then the content.

// FilesReadRequest is the request of read: a whole file, a line range or
// a byte range.
type FilesReadRequest struct {
	Path string `json:"path"`
	// StartLine (0-based, inclusive) and EndLine (exclusive) select lines.
	StartLine *int64 `json:"start_line,omitempty"`
	EndLine   *int64 `json:"end_line,omitempty"`
	// Offset and Length select bytes; not combinable with lines.
	Offset int64  `json:"offset,omitempty"`
	Length *int64 `json:"length,omitempty"`
	// MaxBytes lowers the read limit.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// FilesWriteRequest is the header of write.
type FilesWriteRequest struct {
	Path      string  `json:"path"`
	Append    bool    `json:"append,omitempty"`
	Exclusive bool    `json:"exclusive,omitempty"`
	Mode      *uint32 `json:"mode,omitempty"`
}

// FilesWriteResponse is the response of write.
type FilesWriteResponse struct {
	BytesWritten int64 `json:"bytes_written"`
}

// FilesStatRequest is the request of stat.
type FilesStatRequest struct {
	Path  string `json:"path"`
	Lstat bool   `json:"lstat,omitempty"`
}

// FilesInfo is the response of stat: a path's metadata.
type FilesInfo struct {
	Name          string    `json:"name"`
	Path          string    `json:"path"`
	IsDirectory   bool      `json:"is_directory"`
	IsFile        bool      `json:"is_file"`
	IsSymlink     bool      `json:"is_symlink"`
	Size          int64     `json:"size"`
	Mode          uint32    `json:"mode"`        // permission bits
	ModeString    string    `json:"mode_string"` // "-rw-r--r--"
	ModifiedTime  time.Time `json:"modified_time"`
	SymlinkTarget string    `json:"symlink_target,omitempty"` // lstat of a link
}

// FilesPathRequest is the request of exists.
type FilesPathRequest struct {
	Path string `json:"path"`
}

// FilesExistsResponse is the response of exists.
type FilesExistsResponse struct {
	Exists      bool `json:"exists"`
	IsDirectory bool `json:"is_directory"`
	IsFile      bool `json:"is_file"`
}

// FilesListRequest is the request of list.
type FilesListRequest struct {
	Path       string `json:"path"`
	MaxEntries int    `json:"max_entries,omitempty"`
}

// FilesEntry is one entry of a listing (links described, not followed).
type FilesEntry struct {
	Name         string    `json:"name"`
	Path         string    `json:"path"`
	IsDirectory  bool      `json:"is_directory"`
	IsSymlink    bool      `json:"is_symlink"`
	Size         int64     `json:"size"`
	ModifiedTime time.Time `json:"modified_time"`
	// Depth is the level below the walked directory (walk only).
	Depth int `json:"depth,omitempty"`
}

// FilesListResponse is the response of list, sorted by name.
type FilesListResponse struct {
	Path       string       `json:"path"`
	Entries    []FilesEntry `json:"entries"`
	TotalCount int          `json:"total_count"`
	Truncated  bool         `json:"truncated"`
}

// FilesWalkRequest is the request of walk.
type FilesWalkRequest struct {
	Path       string `json:"path"`
	MaxDepth   int    `json:"max_depth,omitempty"`
	MaxEntries int    `json:"max_entries,omitempty"`
}

// FilesWalkResponse is the response of walk: depth-first pre-order,
// siblings by name.
type FilesWalkResponse struct {
	Path            string       `json:"path"`
	Entries         []FilesEntry `json:"entries"`
	Truncated       bool         `json:"truncated"`
	DepthLimited    bool         `json:"depth_limited"`
	Errors          []FilesError `json:"errors"`
	ErrorsTruncated bool         `json:"errors_truncated,omitempty"`
}

// FilesMkdirRequest is the request of mkdir.
type FilesMkdirRequest struct {
	Path    string  `json:"path"`
	Parents bool    `json:"parents,omitempty"`
	Mode    *uint32 `json:"mode,omitempty"`
}

// FilesMkdirResponse is the response of mkdir.
type FilesMkdirResponse struct {
	Created bool `json:"created"`
}

// FilesRemoveRequest is the request of remove.
type FilesRemoveRequest struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// FilesRenameRequest is the request of rename.
type FilesRenameRequest struct {
	Path      string `json:"path"`
	Target    string `json:"target"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// Empty is the response of remove and rename.
type Empty struct{}

// FilesError is aiod's structured file error: the error object of a
// failed files function (with Code), and an entry of
// FilesWalkResponse.Errors (without). Errno and ErrnoName are null when
// there is no errno.
type FilesError struct {
	Code          string  `json:"code,omitempty"`
	Errno         *int    `json:"errno"`
	ErrnoName     *string `json:"errno_name"`
	ErrorType     string  `json:"error_type"`
	ExceptionType string  `json:"exception_type"`
	Message       string  `json:"message"`
	Operation     string  `json:"operation"`
	Path          string  `json:"path"`
	Retryable     bool    `json:"retryable"`
}

// The error_type values of a FilesError.
const (
	FilesNotFound         = "not_found"
	FilesPermissionDenied = "permission_denied"
	FilesAlreadyExists    = "already_exists"
	FilesBadRequest       = "bad_request"
	FilesInvalidPath      = "invalid_path"
	FilesInvalidTarget    = "invalid_target"
	FilesDecodeError      = "decode_error"
	FilesNoSpaceLeft      = "no_space_left"
	FilesOther            = "other"
)
