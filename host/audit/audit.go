// Package audit writes the audit log (--audit-log): one JSON line per MCP
// request naming who asked for what and how it ended, never what was
// asked: arguments appear only as their SHA-256, and keys and tokens not
// at all (spec/tenants.md §5).
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/mcp"
	"github.com/aiodhq/aiod/host/tenant"
)

// Outcome is how a request ended.
type Outcome string

// The outcomes.
const (
	OK            Outcome = "ok"             // a result (a tool's isError false)
	ToolError     Outcome = "tool_error"     // a tool result with isError true
	ProtocolError Outcome = "protocol_error" // a JSON-RPC error
	Denied        Outcome = "denied"         // not authenticated, or a name the tenant may not use
	Quota         Outcome = "quota"          // over a quota of the tenant
)

// Entry is one line of the audit log.
type Entry struct {
	Time        time.Time `json:"time"`
	Tenant      string    `json:"tenant"`
	Session     string    `json:"session,omitempty"`
	Method      string    `json:"method"`
	Tool        string    `json:"tool,omitempty"`
	ArgsSHA256  string    `json:"args_sha256,omitempty"`
	DurationMs  float64   `json:"duration_ms"`
	Outcome     Outcome   `json:"outcome"`
	Code        int       `json:"code,omitempty"` // the JSON-RPC error code, when one
	ResultBytes int       `json:"result_bytes"`
	Quota       string    `json:"quota,omitempty"`
	// Via and Step mark a call a program made (spec/code-tools.md): the
	// tool whose program made it, and which of its calls it was.
	Via  string `json:"via,omitempty"`
	Step int    `json:"step,omitempty"`
	// Reason says why a program's call was refused before it ran.
	Reason string `json:"reason,omitempty"`
	// Enriched is what the audit-enrichment guard added to the result
	// (its _meta's EnrichmentKey object; spec/hooks.md §3), when there
	// is one: argument names, content kinds, the operator's labels.
	Enriched json.RawMessage `json:"enriched,omitempty"`
}

// EnrichmentKey is the result _meta member the audit-enrichment guard
// writes and the log records (at most MaxEnrichedBytes of it).
const EnrichmentKey = "aiod.dev/audit"

// MaxEnrichedBytes bounds the enrichment one entry records.
const MaxEnrichedBytes = 4 << 10

// enrichment is the EnrichmentKey object of a tools/call result, nil when
// it has none (or one that is not an object, or too large).
func enrichment(req *mcp.Request, res json.RawMessage) json.RawMessage {
	if req.Method != "tools/call" || !bytes.Contains(res, []byte(`"`+EnrichmentKey+`"`)) {
		return nil
	}
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(res, &r) != nil {
		return nil
	}
	v := bytes.TrimSpace(r.Meta[EnrichmentKey])
	if len(v) < 2 || v[0] != '{' || len(v) > MaxEnrichedBytes {
		return nil
	}
	return v
}

// ErrUnavailable refuses a request whose audit line could not be written
// when the log is required.
var ErrUnavailable = errors.New("the audit log cannot be written: the request is refused")

// Log is an audit log. Its methods are safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	w        io.Writer
	f        *os.File // nil when w is not a file of ours
	required bool
	failing  atomic.Bool
	closed   bool
	// recent is the last RecentEntries entries written, oldest first from
	// next (the admin page's recent calls)
	recent [RecentEntries]Entry
	next   int
	filled bool
}

// RecentEntries is how many of the last entries a Log keeps in memory
// (Recent).
const RecentEntries = 100

// Options configure a Log.
type Options struct {
	// Required refuses every request whose line cannot be written (the
	// lockdown form): its result is withheld, and while writes fail the
	// requests that follow are refused before they run.
	Required bool
}

// Open opens (creating, appending) the audit log file path, mode 0600.
func Open(path string, o Options) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &Log{w: f, f: f, required: o.Required}, nil
}

// New returns a Log writing to w (tests); a nil w keeps the recent entries
// in memory only (Recent) and writes nothing.
func New(w io.Writer, o Options) *Log { return &Log{w: w, required: o.Required} }

// Recent returns the last entries written (at most RecentEntries), newest
// first. They carry no argument values: an entry never does.
func (l *Log) Recent() []Entry {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.filled {
		n = RecentEntries
	}
	out := make([]Entry, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, l.recent[(l.next-i+RecentEntries)%RecentEntries])
	}
	return out
}

func (l *Log) remember(e Entry) {
	l.recent[l.next] = e
	l.next++
	if l.next == RecentEntries {
		l.next, l.filled = 0, true
	}
}

// Required reports whether a request must be refused when its line cannot
// be written.
func (l *Log) Required() bool { return l != nil && l.required }

// Write appends one entry as a JSON line. A nil Log writes nothing.
func (l *Log) Write(e Entry) error {
	if l == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if l.w == nil {
		l.mu.Lock()
		l.remember(e)
		l.mu.Unlock()
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remember(e)
	if l.closed {
		err = os.ErrClosed
	} else {
		_, err = l.w.Write(b)
	}
	l.failing.Store(err != nil)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// Close closes the file. Idempotent.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.f != nil {
		return l.f.Close()
	}
	return nil
}

// Middleware writes a line for every request the method table serves; it
// must sit inside tenant.Set.Middleware (which puts the tenant in the
// context). With Required, a request is refused when its line cannot be
// written, and while the log is failing requests are refused before they
// run.
func (l *Log) Middleware() mcp.Middleware {
	return func(next mcp.Handler) mcp.Handler {
		return func(ctx context.Context, req *mcp.Request) (json.RawMessage, error) {
			start := time.Now()
			e := Entry{Time: start.UTC(), Tenant: req.Owner(), Session: req.SessionID, Method: req.Method, Tool: req.Name,
				Via: req.Via, Step: req.Step}
			if l.w != nil { // a log in memory only keeps no digests
				e.ArgsSHA256 = argsDigest(req)
			}
			if t := tenant.FromContext(ctx); t != nil {
				e.Tenant = t.Name
			}
			if l.required && l.failing.Load() {
				e.Outcome = Denied
				if l.Write(e) != nil {
					return nil, refusal()
				}
			}
			res, err := next(ctx, req)
			e.DurationMs = float64(time.Since(start).Microseconds()) / 1000
			e.Outcome, e.Code = Classify(ctx, req, res, err)
			e.ResultBytes = len(res)
			if l.w != nil {
				e.Enriched = enrichment(req, res)
			}
			if werr := l.Write(e); werr != nil && l.required {
				return nil, refusal()
			}
			return res, err
		}
	}
}

func refusal() error { return &mcp.Error{Code: mcp.CodeInternal, Message: ErrUnavailable.Error()} }

// Classify is the outcome of a request served by the method table (the
// metrics use it too): the tenant is read from ctx for telling a hidden
// name (denied) from a missing one.
func Classify(ctx context.Context, req *mcp.Request, res json.RawMessage, err error) (Outcome, int) {
	if err != nil {
		var me *mcp.Error
		code := mcp.CodeInternal
		if errors.As(err, &me) {
			code = me.Code
		}
		if req.Name != "" && !tenant.FromContext(ctx).Allowed(req.Name) {
			return Denied, code
		}
		return ProtocolError, code
	}
	if req.Method == "tools/call" && isError(res) {
		return ToolError, 0
	}
	return OK, 0
}

// isError reports whether a CallToolResult says "isError": true. The flag
// is looked for before decoding anything.
func isError(res []byte) bool {
	// The Go SDK writes the flag last: a valid object that ends so says
	// it at its top level, and a large result need not be decoded.
	switch {
	case bytes.HasSuffix(res, []byte(`,"isError":false}`)):
		return false
	case bytes.HasSuffix(res, []byte(`,"isError":true}`)):
		return true
	}
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}

// argsDigest is the SHA-256 of a tools/call's arguments (as sent), or of
// the params of another method; "" when there are none.
func argsDigest(req *mcp.Request) string {
	raw := []byte(req.Params)
	if req.Method == "tools/call" {
		var p struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			return ""
		}
		raw = p.Arguments
	}
	if len(raw) == 0 {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
