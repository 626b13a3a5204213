package process

import (
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// StartRequest is a program whose stdout the plugin reads while it runs
// (ABI v1.1; spec/abi/v1/process.md §3.6).
type StartRequest struct {
	// Argv, Env, Cwd and Stdin: as in SpawnRequest ("" stdin is
	// /dev/null).
	Argv  []string
	Env   map[string]string
	Cwd   string
	Stdin string
	// Timeout is the wall-clock limit (0: 30s), shortened to end before
	// the call's own deadline.
	Timeout time.Duration
	// MaxOutputBytes bounds the whole of stdout (0: 1 MiB): past it the
	// program is killed (Killed "output_limit"); the first MaxOutputBytes
	// stay readable.
	MaxOutputBytes int64
	// ClearEnv starts from an empty environment instead of the host's
	// safe base: the child gets PATH (the default path), what a sandbox
	// sets, and Env; nothing of the host's environment.
	ClearEnv bool
}

// Started is a program started with Start. It belongs to the call: when
// the call ends, the host kills it if it was not waited for.
type Started struct {
	ID      int
	Program string // the path that runs
	Cwd     string // where (symlinks resolved)
}

// WaitResult is how a started program ended: SpawnResult's fields but
// Stdout, which went to Read; StdoutBytes counts it.
type WaitResult struct {
	ExitCode        int
	Signal          string
	TimedOut        bool
	Killed          string // "timeout", "canceled", "output_limit", "stopped", "process_limit", "closed" or ""
	Duration        time.Duration
	StdoutBytes     int64
	StdoutTruncated bool
	Stderr          string
	StderrTruncated bool
}

// Start starts a program and returns at once; read its stdout with Read
// and end it with Wait. At most 8 may be started and not yet waited for
// in one call.
func Start(req StartRequest) (*Started, error) {
	w := abi.ProcessStartRequest{Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, TimeoutMs: ms(req.Timeout),
		MaxOutputBytes: req.MaxOutputBytes, ClearEnv: req.ClearEnv}
	if req.Stdin != "" {
		w.Stdin = &req.Stdin
	}
	var r abi.ProcessStartResponse
	if err := doStream("start", marshalStart(w), func(b []byte) error { return decodeStart(b, &r) }); err != nil {
		return nil, err
	}
	return &Started{ID: r.ID, Program: r.Program, Cwd: r.Cwd}, nil
}

// Read returns the next piece of the program's stdout (at most max bytes,
// 0 for the host's limit of 4 MiB), waiting up to wait for one. At the
// end of stdout it returns (nil, nil); when nothing arrived within wait,
// an *Error with code "timeout". Pieces are not aligned to lines or
// characters.
func (s *Started) Read(max int, wait time.Duration) ([]byte, error) {
	b, err := marshalRead(abi.ProcessReadRequest{ID: s.ID, MaxBytes: max, TimeoutMs: ms(wait)})
	if err != nil {
		return nil, err
	}
	return read(b)
}

// doStream calls a started-program function with an encoded request and
// decodes its response with dec (decode.go); a failure is the host's
// *Error, or code "internal" for a response that does not decode.
func doStream(name string, req []byte, dec func([]byte) error) error {
	out, code := callStream(name, req)
	if code != 0 {
		var e Error
		e.Code, e.Message = guest.Decode(out, code)
		return &e
	}
	if err := dec(out); err != nil {
		return &Error{Code: "internal", Message: "bad response from the host: " + err.Error()}
	}
	return nil
}

// read sends an encoded read request: the response's bytes, nil at the
// end of stdout, or the host's *Error.
func read(req []byte) ([]byte, error) {
	out, code := callStream("read", req)
	if code != 0 {
		var e Error
		e.Code, e.Message = guest.Decode(out, code)
		return nil, &e
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Wait ends the program: with kill it is stopped first (Killed
// "stopped"), otherwise Wait waits for it to end (within its timeout).
// Unread stdout is discarded.
func (s *Started) Wait(kill bool) (*WaitResult, error) {
	var r abi.ProcessWaitResponse
	if err := doStream("wait", marshalWait(abi.ProcessWaitRequest{ID: s.ID, Kill: kill}), func(b []byte) error { return decodeWait(b, &r) }); err != nil {
		return nil, err
	}
	return &WaitResult{ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Killed: r.Killed,
		Duration: time.Duration(r.DurationMs) * time.Millisecond, StdoutBytes: r.StdoutBytes, StdoutTruncated: r.StdoutTruncated,
		Stderr: r.Stderr, StderrTruncated: r.StderrTruncated}, nil
}

// ReadLines is Read for a program that writes lines (ABI v1.1): it
// returns whole lines only, at least one (waiting up to wait for it) and
// then as many as there are within max bytes, with the host's reading of
// each; EachLine walks them. At the end of stdout it returns (nil, nil);
// when no whole line arrived within wait, an *Error with code "timeout".
// A program is read with Read or with ReadLines, not both.
func (s *Started) ReadLines(max int, wait time.Duration) ([]byte, error) {
	b, err := marshalRead(abi.ProcessReadRequest{ID: s.ID, MaxBytes: max, TimeoutMs: ms(wait), Lines: true})
	if err != nil {
		return nil, err
	}
	return read(b)
}

// ReadRuns is ReadLines whose consecutive lines of the given types come
// as one entry (ABI v1.1): a run, the lines joined with commas, the inside
// of a JSON array, which a plugin passing a JSONL stream on files whole
// (spec/abi/v1/process.md §3.6). A line joins a run when the host found it
// to be one JSON object, read plainly, whose type is one of types and
// whose last byte is its closing brace. EachRun walks the response. At
// most 256 types.
func (s *Started) ReadRuns(max int, wait time.Duration, types []string) ([]byte, error) {
	b, err := marshalRead(abi.ProcessReadRequest{ID: s.ID, MaxBytes: max, TimeoutMs: ms(wait), Lines: true, Runs: types})
	if err != nil {
		return nil, err
	}
	return read(b)
}

// ReadCollect is ReadRuns for a plugin that passes the stream's domain
// events on without reading them (ABI v1.2; spec/abi/v1/process.md
// §3.7): once the stream's first line was its meta event and until its
// summary, the runs stay on the host, in the program's collection, and
// come as entries without bytes (EachEntry's collected); the response
// ends after the first entry that was not collected. add (the inside of
// a JSON array: objects joined with commas, or nil) are events the
// plugin files itself, appended to the collection before the read, so
// that the collection keeps the stream's order. WaitCollected ends the
// program and keeps the collection for the result.
func (s *Started) ReadCollect(max int, wait time.Duration, types []string, add []byte) ([]byte, error) {
	b, err := marshalRead(abi.ProcessReadRequest{ID: s.ID, MaxBytes: max, TimeoutMs: ms(wait), Lines: true, Runs: types, Collect: true})
	if err != nil {
		return nil, err
	}
	if len(add) > 0 {
		b = append(append(append(b[:len(b)-1], `,"add":[`...), add...), "]}"...)
	}
	return read(b)
}

// Collection is a program's collection, kept on the host for the call
// (WaitCollected): Events objects joined with commas, Bytes long.
type Collection struct {
	Events, Bytes int
	blob          *guest.Blob
}

// AppendJSON appends the collection as it is (the inside of a JSON array:
// nothing when it is empty), as a marker the host replaces when the
// result is written: for the result's structuredContent (sdk.JSONResult
// over JSON that holds it carries it into the text block too).
func (c *Collection) AppendJSON(dst []byte) []byte {
	if c == nil || c.blob == nil {
		return dst
	}
	return c.blob.AppendRaw(dst)
}

// WaitCollected is Wait that also keeps the program's collection (reads
// with ReadCollect) on the host for the rest of the call.
func (s *Started) WaitCollected(kill bool) (*WaitResult, *Collection, error) {
	var r abi.ProcessWaitResponse
	if err := doStream("wait", marshalWait(abi.ProcessWaitRequest{ID: s.ID, Kill: kill, KeepCollected: true}), func(b []byte) error { return decodeWait(b, &r) }); err != nil {
		return nil, nil, err
	}
	col := &Collection{}
	if r.Collected != nil && r.Collected.Kept >= 0 && r.Collected.Events > 0 {
		col.Events, col.Bytes = r.Collected.Events, r.Collected.Bytes
		col.blob = guest.KeptByHost(uint32(r.Collected.Kept), r.Collected.Bytes)
	}
	return &WaitResult{ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Killed: r.Killed,
		Duration: time.Duration(r.DurationMs) * time.Millisecond, StdoutBytes: r.StdoutBytes, StdoutTruncated: r.StdoutTruncated,
		Stderr: r.Stderr, StderrTruncated: r.StderrTruncated}, col, nil
}

// EachEntry is EachRun for a ReadCollect response: a collected entry
// comes with no bytes, collected true and its number of lines n.
func EachEntry(resp []byte, f func(b, typ []byte, checked bool, n int, collected bool) bool) error {
	return eachRun(resp, true, f)
}

// EachRun calls f for each entry of a ReadRuns response, in order: its
// bytes (one line, or a run of n lines joined with commas), and, when
// checked, its first line's type as EachLine has it. It stops when f
// returns false. A response that is not in the index format is an error.
func EachRun(resp []byte, f func(b, typ []byte, checked bool, n int) bool) error {
	return eachRun(resp, false, func(b, typ []byte, checked bool, n int, _ bool) bool { return f(b, typ, checked, n) })
}

func eachRun(resp []byte, collect bool, f func(b, typ []byte, checked bool, n int, collected bool) bool) error {
	if len(resp) < 4 {
		return errors.New("aiod:process.read: a runs response without its count")
	}
	n := int(binary.LittleEndian.Uint32(resp))
	if n > (len(resp)-4)/abi.RunEntry {
		return errors.New("aiod:process.read: a runs response shorter than its index")
	}
	pos := 4 + abi.RunEntry*n
	for k := 0; k < n; k++ {
		e := resp[4+abi.RunEntry*k:]
		l, ts, tl := int(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
		lines := int(binary.LittleEndian.Uint32(e[12:]))
		if ts == abi.LineCollected {
			if !collect || l != 0 || tl != 0 || lines < 1 {
				return errors.New("aiod:process.read: a collected entry where none can be")
			}
			if !f(nil, nil, false, lines, true) {
				return nil
			}
			continue
		}
		if l < 0 || l > len(resp)-pos {
			return errors.New("aiod:process.read: an entry past the end of the response")
		}
		if lines < 1 || lines > l/2+1 {
			return errors.New("aiod:process.read: an entry with an impossible number of lines")
		}
		b := resp[pos : pos+l : pos+l]
		pos += l
		var typ []byte
		checked := ts != abi.LineUnchecked && uint64(ts)+uint64(tl) <= uint64(l)
		if checked {
			typ = b[ts : ts+tl]
		} else if lines > 1 {
			return errors.New("aiod:process.read: a run without its type")
		}
		if !f(b, typ, checked, lines, false) {
			return nil
		}
	}
	return nil
}

// EachLine calls f for each line of a ReadLines response, in order: the
// line (without its newline), and, when checked, the host found it to be
// one JSON object whose top-level "type" is the string typ (its raw text,
// without escapes; jsonx.ScanObject). It stops when f returns false. A
// response that is not in the index format is an error.
func EachLine(resp []byte, f func(line, typ []byte, checked bool) bool) error {
	if len(resp) < 4 {
		return errors.New("aiod:process.read: a lines response without its count")
	}
	n := int(binary.LittleEndian.Uint32(resp))
	if n > (len(resp)-4)/abi.LineEntry {
		return errors.New("aiod:process.read: a lines response shorter than its index")
	}
	pos := 4 + abi.LineEntry*n
	for k := 0; k < n; k++ {
		e := resp[4+abi.LineEntry*k:]
		l, ts, tl := int(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:])
		if l < 0 || l > len(resp)-pos {
			return errors.New("aiod:process.read: a line past the end of the response")
		}
		line := resp[pos : pos+l : pos+l]
		pos += l
		var typ []byte
		checked := ts != abi.LineUnchecked && uint64(ts)+uint64(tl) <= uint64(l)
		if checked {
			typ = line[ts : ts+tl]
		}
		if !f(line, typ, checked) {
			return nil
		}
	}
	return nil
}

// marshalStart encodes a start request as encoding/json would (the
// fields in their order, omitempty as tagged), without reflection.
func marshalStart(r abi.ProcessStartRequest) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"argv":`...)
	if r.Argv == nil {
		b = append(b, "null"...)
	} else {
		b = jsonx.Append(b, r.Argv)
	}
	if len(r.Env) > 0 {
		b = append(b, `,"env":`...)
		b = jsonx.Append(b, r.Env) // keys sorted
	}
	if r.Cwd != "" {
		b = append(b, `,"cwd":`...)
		b = jsonx.AppendString(b, r.Cwd)
	}
	if r.Stdin != nil {
		b = append(b, `,"stdin":`...)
		b = jsonx.AppendString(b, *r.Stdin)
	}
	if r.TimeoutMs != 0 {
		b = append(b, `,"timeout_ms":`...)
		b = strconv.AppendInt(b, r.TimeoutMs, 10)
	}
	if r.MaxOutputBytes != 0 {
		b = append(b, `,"max_output_bytes":`...)
		b = strconv.AppendInt(b, r.MaxOutputBytes, 10)
	}
	if r.ClearEnv {
		b = append(b, `,"clear_env":true`...)
	}
	return append(b, '}')
}

// marshalWait encodes a wait request.
func marshalWait(r abi.ProcessWaitRequest) []byte {
	b := strconv.AppendInt(append(make([]byte, 0, 48), `{"id":`...), int64(r.ID), 10)
	if r.Kill {
		b = append(b, `,"kill":true`...)
	}
	if r.KeepCollected {
		b = append(b, `,"keep_collected":true`...)
	}
	return append(b, '}')
}

// marshalRead encodes a read request (small and fixed: no reflection).
func marshalRead(r abi.ProcessReadRequest) ([]byte, error) {
	b := make([]byte, 0, 64)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(r.ID), 10)
	if r.MaxBytes > 0 {
		b = append(b, `,"max_bytes":`...)
		b = strconv.AppendInt(b, int64(r.MaxBytes), 10)
	}
	if r.TimeoutMs > 0 {
		b = append(b, `,"timeout_ms":`...)
		b = strconv.AppendInt(b, r.TimeoutMs, 10)
	}
	if r.Lines {
		b = append(b, `,"lines":true`...)
	}
	if r.Collect {
		b = append(b, `,"collect":true`...)
	}
	if len(r.Runs) > 0 {
		b = append(b, `,"runs":[`...)
		for i, t := range r.Runs {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonx.AppendString(b, t)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}
