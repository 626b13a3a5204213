// Package aoi writes a command's output in Machine Mode (AOI-CLI v0.2):
// one compact JSON object per line, the meta event first and the summary
// last, errors from a closed taxonomy, and an exit code that follows from
// the summary. aiod's own commands use it for --output jsonl, and answer
// discovery (capabilities, schema) from the Command table they declare.
// It also holds the conformance check (Check) the tests apply to any
// Machine Mode stream, aiod's own and the test tools'. spec/machine-mode.md
// §7 is the contract.
package aoi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Version is the AOI-CLI version the streams conform to.
const Version = "0.2"

// The event types of the standard's vocabulary that aiod writes.
const (
	TypeMeta    = "aoi:meta"
	TypeSummary = "aoi:summary"
	TypeError   = "aoi:error"
	TypeWarning = "aoi:warning"
	TypeCheck   = "aoi:check"
)

// Error categories: the closed set aiod's commands use, each with its
// exit code (ExitCode).
const (
	CategoryUsage       = "usage"       // a flag or argument is wrong: fix the call
	CategoryNotFound    = "not_found"   // a file or directory named by the call does not exist
	CategoryValidation  = "validation"  // an input (a module, a package, a policy) is malformed
	CategoryAuthz       = "authz"       // the policy refuses what was asked
	CategoryConflict    = "conflict"    // the state differs from what it should be (pending upstream changes)
	CategoryUnavailable = "unavailable" // something the command needs cannot be reached
	CategoryInternal    = "internal"    // anything else
)

// Exit codes, stable: the summary decides them.
const (
	ExitOK      = 0 // the summary says ok: true
	ExitNotOK   = 1 // the command ran to its end and its answer is negative (ok: false, an error of category validation, authz or conflict)
	ExitUsage   = 2 // an error of category usage: nothing ran
	ExitFailure = 3 // the command could not do its work (not_found, unavailable, internal)
)

// ExitCode is the exit code of a run whose error of process scope has
// category c ("" for a run that ended with ok: false without one).
func ExitCode(c string) int {
	switch c {
	case CategoryUsage:
		return ExitUsage
	case "", CategoryValidation, CategoryAuthz, CategoryConflict:
		return ExitNotOK
	}
	return ExitFailure
}

// Error is an aoi:error event.
type Error struct {
	// Scope is "process" (the run ends) or "item" (one item failed, the
	// run goes on).
	Scope     string `json:"scope"`
	Category  string `json:"category"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Hint      string `json:"hint,omitempty"`
	Retryable bool   `json:"retryable"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Fail is an error of process scope, not retryable.
func Fail(category, code, format string, a ...any) *Error {
	return &Error{Scope: "process", Category: category, Code: code, Message: fmt.Sprintf(format, a...)}
}

// Meta is the meta event's content.
type Meta struct {
	Tool          string `json:"tool"`
	ToolVersion   string `json:"tool_version"`
	SchemaName    string `json:"schema_name"`
	SchemaVersion string `json:"schema_version"`
}

// Stream writes one run's events. Its methods never fail: the first write
// error is kept (Err) and the rest is dropped, since a reader that is
// gone cannot be told anything.
type Stream struct {
	w       io.Writer
	buf     []byte
	command string
	count   int    // domain events written
	fatal   *Error // the first error of process scope
	done    bool
	err     error
}

// Start begins a run of command (its words, "plugin inspect") on w with
// the meta event.
func Start(w io.Writer, m Meta, command string) *Stream {
	s := &Stream{w: w, command: command}
	s.write(TypeMeta, map[string]string{"tool": m.Tool, "tool_version": m.ToolVersion, "aoi_version": Version,
		"schema_name": m.SchemaName, "schema_version": m.SchemaVersion, "command": command})
	return s
}

// Err is the first write error, if any.
func (s *Stream) Err() error { return s.err }

// Event writes a domain event of type typ; fields is a struct or map
// marshalled as a JSON object, which must not have a "type" member of its
// own.
func (s *Stream) Event(typ string, fields any) {
	s.count++
	s.write(typ, fields)
}

// Check writes an aoi:check event: a named verification and its outcome.
func (s *Stream) Check(name string, ok bool, detail string, more map[string]any) {
	m := map[string]any{"name": name, "ok": ok, "detail": detail}
	for k, v := range more {
		m[k] = v
	}
	s.count++
	s.write(TypeCheck, m)
}

// Warning writes an aoi:warning event.
func (s *Stream) Warning(code, message string) {
	s.write(TypeWarning, map[string]string{"code": code, "message": message})
}

// Error writes an aoi:error event. One of process scope is the run's end:
// Finish then writes a summary with ok: false whatever it is told.
func (s *Stream) Error(e *Error) {
	if e.Scope == "" {
		e.Scope = "process"
	}
	if e.Scope == "process" && s.fatal == nil {
		s.fatal = e
	}
	s.write(TypeError, e)
}

// Finish writes the summary ({"ok", "count", "truncated": false, and
// extra's members}) and returns the exit code: ExitOK when ok and no
// error of process scope came, else ExitCode of that error's category.
// A stream is finished once; a second Finish writes nothing.
func (s *Stream) Finish(ok bool, extra map[string]any) int {
	if s.fatal != nil {
		ok = false
	}
	if !s.done {
		m := map[string]any{"ok": ok, "count": s.count, "truncated": false}
		for k, v := range extra {
			if _, own := m[k]; !own {
				m[k] = v
			}
		}
		s.write(TypeSummary, m)
		s.done = true
	}
	switch {
	case ok:
		return ExitOK
	case s.fatal != nil:
		return ExitCode(s.fatal.Category)
	}
	return ExitNotOK
}

// Abort ends the run with err: an error of process scope (err itself when
// it is an *Error, else one of category, with code and err's message),
// then the summary. It returns the exit code.
func (s *Stream) Abort(err error, category, code string) int {
	var e *Error
	if !errors.As(err, &e) {
		e = Fail(category, code, "%s", strings.TrimSpace(err.Error()))
	}
	s.Error(e)
	return s.Finish(false, nil)
}

func (s *Stream) write(typ string, fields any) {
	if s.err != nil || s.done {
		return
	}
	b, err := json.Marshal(fields)
	if err != nil {
		s.err = err
		return
	}
	s.buf = append(s.buf[:0], `{"type":`...)
	t, _ := json.Marshal(typ)
	s.buf = append(s.buf, t...)
	if !bytes.Equal(b, []byte("{}")) && !bytes.Equal(b, []byte("null")) {
		if len(b) < 2 || b[0] != '{' {
			s.err = fmt.Errorf("aoi: event %s is not a JSON object", typ)
			return
		}
		if hasType(b) {
			s.err = fmt.Errorf("aoi: event %s has a type member of its own", typ)
			return
		}
		s.buf = append(s.buf, ',')
		s.buf = append(s.buf, b[1:]...)
	} else {
		s.buf = append(s.buf, '}')
	}
	s.buf = append(s.buf, '\n')
	_, s.err = s.w.Write(s.buf)
}

func hasType(obj []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return false
	}
	_, ok := m["type"]
	return ok
}
