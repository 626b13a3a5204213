package fsroot

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/aiodhq/aiod/sdk/abi"
)

// Error is a failed file operation. Its fields are aiod's structured file
// error (the object the aiod daemon puts under "error"); the files family
// carries it to the guest as an abi.FilesError.
type Error struct {
	// Code is the host function error code the failure maps to.
	Code abi.Code
	// Errno is the Linux errno number (0 with ErrnoName "" when there is
	// none: the wire form then has null for both).
	Errno         int
	ErrnoName     string
	ErrorType     string
	ExceptionType string
	Message       string
	Operation     string
	Path          string
	Retryable     bool
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, fs.ErrNotExist) and friends work.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.ErrorType == abi.FilesNotFound
	case fs.ErrExist:
		return e.ErrorType == abi.FilesAlreadyExists
	case fs.ErrPermission:
		return e.ErrorType == abi.FilesPermissionDenied
	}
	return false
}

// errnoInfo is one errno: its Linux number and glibc/Rust description.
type errnoInfo struct {
	errno syscall.Errno // the platform's value, for matching
	num   int           // the Linux number, reported
	name  string
	text  string
}

// errnos are reported with their Linux numbers and texts on every host, so
// a plugin sees the same error everywhere. Order matters only for matching.
var errnos = []errnoInfo{
	{syscall.EPERM, 1, "EPERM", "Operation not permitted"},
	{syscall.ENOENT, 2, "ENOENT", "No such file or directory"},
	{syscall.EINTR, 4, "EINTR", "Interrupted system call"},
	{syscall.EIO, 5, "EIO", "Input/output error"},
	{syscall.ENXIO, 6, "ENXIO", "No such device or address"},
	{syscall.EBADF, 9, "EBADF", "Bad file descriptor"},
	{syscall.EAGAIN, 11, "EAGAIN", "Resource temporarily unavailable"},
	{syscall.ENOMEM, 12, "ENOMEM", "Cannot allocate memory"},
	{syscall.EACCES, 13, "EACCES", "Permission denied"},
	{syscall.EBUSY, 16, "EBUSY", "Device or resource busy"},
	{syscall.EEXIST, 17, "EEXIST", "File exists"},
	{syscall.EXDEV, 18, "EXDEV", "Invalid cross-device link"},
	{syscall.ENODEV, 19, "ENODEV", "No such device"},
	{syscall.ENOTDIR, 20, "ENOTDIR", "Not a directory"},
	{syscall.EISDIR, 21, "EISDIR", "Is a directory"},
	{syscall.EINVAL, 22, "EINVAL", "Invalid argument"},
	{syscall.ENFILE, 23, "ENFILE", "Too many open files in system"},
	{syscall.EMFILE, 24, "EMFILE", "Too many open files"},
	{syscall.ETXTBSY, 26, "ETXTBSY", "Text file busy"},
	{syscall.EFBIG, 27, "EFBIG", "File too large"},
	{syscall.ENOSPC, 28, "ENOSPC", "No space left on device"},
	{syscall.EROFS, 30, "EROFS", "Read-only file system"},
	{syscall.EMLINK, 31, "EMLINK", "Too many links"},
	{syscall.ENAMETOOLONG, 36, "ENAMETOOLONG", "File name too long"},
	{syscall.ENOTEMPTY, 39, "ENOTEMPTY", "Directory not empty"},
	{syscall.ELOOP, 40, "ELOOP", "Too many levels of symbolic links"},
	{syscall.EOVERFLOW, 75, "EOVERFLOW", "Value too large for defined data type"},
	{syscall.ENOTSUP, 95, "EOPNOTSUPP", "Operation not supported"},
	{syscall.ETIMEDOUT, 110, "ETIMEDOUT", "Connection timed out"},
	{syscall.EDQUOT, 122, "EDQUOT", "Disk quota exceeded"},
}

func lookupErrno(name string) errnoInfo {
	for _, e := range errnos {
		if e.name == name {
			return e
		}
	}
	panic("fsroot: unknown errno " + name)
}

var (
	eACCES = lookupErrno("EACCES")
	eINVAL = lookupErrno("EINVAL")
	eISDIR = lookupErrno("EISDIR")
	eNOENT = lookupErrno("ENOENT")
	eEXIST = lookupErrno("EEXIST")
	eXDEV  = lookupErrno("EXDEV")
	eFBIG  = lookupErrno("EFBIG")
	eBADF  = lookupErrno("EBADF")
)

// classify gives the error_type, exception_type, code and retryable of an
// errno, after CPython's OSError subclasses and Rust's io::ErrorKind.
func classify(name string) (errType, exc string, code abi.Code, retry bool) {
	errType, exc, code = abi.FilesOther, "OSError", abi.IO
	switch name {
	case "ENOENT":
		errType, exc, code = abi.FilesNotFound, "FileNotFoundError", abi.NotFound
	case "EACCES", "EPERM":
		errType, exc = abi.FilesPermissionDenied, "PermissionError"
	case "EROFS":
		errType = abi.FilesPermissionDenied
	case "EEXIST":
		errType, exc, code = abi.FilesAlreadyExists, "FileExistsError", abi.Exists
	case "EISDIR":
		errType, exc, code = abi.FilesInvalidPath, "IsADirectoryError", abi.Invalid
	case "ENOTDIR":
		errType, exc, code = abi.FilesInvalidPath, "NotADirectoryError", abi.Invalid
	case "ENAMETOOLONG", "ELOOP":
		errType, code = abi.FilesInvalidPath, abi.Invalid
	case "EINVAL":
		errType, code = abi.FilesBadRequest, abi.Invalid
	case "EXDEV":
		errType, code = abi.FilesInvalidTarget, abi.Invalid
	case "ENOSPC", "EDQUOT":
		errType = abi.FilesNoSpaceLeft
	case "EAGAIN":
		exc, retry = "BlockingIOError", true
	case "EINTR":
		exc, retry = "InterruptedError", true
	case "ETIMEDOUT":
		exc, retry = "TimeoutError", true
	case "EBUSY", "ETXTBSY", "EMFILE", "ENFILE":
		retry = true
	}
	return
}

// verbs are the message prefixes per operation, in the style of aiod's
// "Failed to read file: No such file or directory (os error 2)".
var verbs = map[string]string{
	OpRead:   "Failed to read file",
	OpWrite:  "Failed to write file",
	OpStat:   "Failed to get file metadata",
	OpExists: "Failed to check path",
	OpList:   "Failed to list directory",
	OpWalk:   "Failed to walk directory",
	OpMkdir:  "Failed to create directory",
	OpRemove: "Failed to remove path",
	OpRename: "Failed to rename path",
}

func verb(op string) string {
	if v, ok := verbs[op]; ok {
		return v
	}
	return "Failed to " + op
}

// errnoError is the error of an operation that failed with errno e.
func errnoError(op, path string, e errnoInfo, cause error) *Error {
	t, exc, code, retry := classify(e.name)
	return &Error{
		Code: code, Errno: e.num, ErrnoName: e.name, ErrorType: t, ExceptionType: exc,
		Message:   fmt.Sprintf("%s: %s (os error %d)", verb(op), e.text, e.num),
		Operation: op, Path: path, Retryable: retry, Err: cause,
	}
}

// denied is a refusal by the grant (not by the OS): EACCES,
// permission_denied, PermissionError, with why in the message.
func denied(op, path, why string) *Error {
	return &Error{
		Code: abi.Denied, Errno: eACCES.num, ErrnoName: eACCES.name,
		ErrorType: abi.FilesPermissionDenied, ExceptionType: "PermissionError",
		Message:   fmt.Sprintf("%s: %s", verb(op), why),
		Operation: op, Path: path,
	}
}

// invalid is a malformed request: EINVAL with the given error_type.
func invalid(op, path, errType, why string) *Error {
	return &Error{
		Code: abi.Invalid, Errno: eINVAL.num, ErrnoName: eINVAL.name,
		ErrorType: errType, ExceptionType: "ValueError",
		Message:   fmt.Sprintf("%s: %s", verb(op), why),
		Operation: op, Path: path,
	}
}

// DeniedError is the denial for op on path, for callers outside this
// package (e.g. a family refusing a call without a files grant).
func DeniedError(op, path, why string) *Error { return denied(op, path, why) }

// InvalidError is a bad_request for op on path.
func InvalidError(op, path, why string) *Error { return invalid(op, path, abi.FilesBadRequest, why) }

// tooLarge is the buffered read limit error. Its message is aiod's text
// with no verb prefix, e.g. "file exceeds the 16 MiB buffered text limit".
func tooLarge(op, path string, limit int64) *Error {
	return &Error{
		Code: abi.TooLarge, Errno: eFBIG.num, ErrnoName: eFBIG.name,
		ErrorType: abi.FilesBadRequest, ExceptionType: "OSError",
		Message:   fmt.Sprintf("file exceeds the %s buffered text limit", formatSize(limit)),
		Operation: op, Path: path,
	}
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// escapeText is the text of os.Root's (unexported) errPathEscapes.
const escapeText = "path escapes from parent"

func isEscape(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == escapeText {
			return true
		}
	}
	return false
}

// osError converts an error from the os package into an *Error for op on
// path (the path as the plugin gave it).
func osError(op, path string, err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	if isEscape(err) {
		return denied(op, path, path+" escapes the plugin's granted root through a symbolic link (a link may not be absolute or lead outside its root)")
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		for _, e := range errnos {
			if e.errno == en {
				return errnoError(op, path, e, err)
			}
		}
		text := en.Error()
		if text != "" {
			text = strings.ToUpper(text[:1]) + text[1:]
		}
		return &Error{
			Code: abi.IO, Errno: int(en), ErrnoName: "", ErrorType: abi.FilesOther, ExceptionType: "OSError",
			Message:   fmt.Sprintf("%s: %s (os error %d)", verb(op), text, int(en)),
			Operation: op, Path: path, Err: err,
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errnoError(op, path, eNOENT, err)
	case errors.Is(err, fs.ErrExist):
		return errnoError(op, path, eEXIST, err)
	case errors.Is(err, fs.ErrPermission):
		return errnoError(op, path, eACCES, err)
	case errors.Is(err, fs.ErrClosed):
		return errnoError(op, path, eBADF, err)
	}
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return &Error{
		Code: abi.IO, ErrorType: abi.FilesOther, ExceptionType: "OSError",
		Message:   fmt.Sprintf("%s: %s", verb(op), msg),
		Operation: op, Path: path, Err: err,
	}
}
