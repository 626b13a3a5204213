package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/aiodhq/aiod/sdk/jsonx"
	"github.com/aiodhq/aiod/sdk/process"
)

// The stream (spec/machine-mode.md §5): the JSONL a command writes on
// stdout, read as it comes and checked line by line against the standard.
// The events are kept as the command wrote them (their bytes go into the
// result unchanged); only the meta event, the summary, errors and
// progress are decoded.

// collector reads one command's stream.
type collector struct {
	command string   // the command called, which the meta event names
	types   []string // the types the command's schema allows (bare)
	// progress forwards an aoi:progress event (progress, total, message)
	progress func(p, total float64, msg string)

	line    int    // lines read
	nprog   int    // progress events read
	partial []byte // an unfinished last line
	meta    bool   // the meta event was read
	// events are the events kept, as the tool wrote them, joined with
	// commas (the inside of the result's "events" array), n of them
	events []byte
	n      int
	// coll is the host's collection (a read with collect, ABI v1.2):
	// the events before those in events, kept on the host, which the
	// guest never reads; events then holds only what the guest filed
	// since its last read (sent with the next one) or after its last
	coll    *process.Collection
	summary []byte
	ok      bool
	// fatal is the first error of process scope, lastErr the last error
	fatal, lastErr []byte
	// violation is how the stream broke the standard ("" while it has
	// not); the collector stops there
	violation string
}

// write takes the next piece of stdout. It returns false once the stream
// broke the standard (violation says how): nothing more is read.
func (c *collector) write(b []byte) bool {
	for len(b) > 0 && c.violation == "" {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.partial = append(c.partial, b...)
			return true
		}
		line := b[:i]
		if len(c.partial) > 0 {
			line = append(c.partial, line...)
			c.partial = c.partial[:0:0]
		}
		c.takeLine(line)
		b = b[i+1:]
	}
	return c.violation == ""
}

// end is the end of stdout: an unfinished last line counts as a line.
func (c *collector) end() {
	if len(c.partial) > 0 && c.violation == "" {
		line := c.partial
		c.partial = nil
		c.takeLine(line)
	}
}

// header is what the adapter decodes of every event.
type header struct {
	Type *string `json:"type"`
}

// writeLines takes the whole lines of a read with lines (sdk/process
// ReadLines): a line the host checked is filed without being read again.
// It returns false once the stream broke the standard.
func (c *collector) writeLines(resp []byte) bool {
	// room for all of them at once: the events buffer does not double its
	// way up a large stream
	c.events = slices.Grow(c.events, len(resp))
	err := process.EachLine(resp, func(line, typ []byte, checked bool) bool {
		c.take(line, typ, checked)
		return c.violation == ""
	})
	if err != nil && c.violation == "" {
		c.violation = err.Error()
	}
	return c.violation == ""
}

// writeRuns takes the entries of a read with runs (sdk/process
// ReadRuns): a run of domain events the host checked is filed whole, as
// the host joined it. It returns false once the stream broke the
// standard.
func (c *collector) writeRuns(resp []byte) bool {
	c.events = slices.Grow(c.events, len(resp))
	err := process.EachRun(resp, func(b, typ []byte, checked bool, n int) bool {
		c.takeN(b, typ, checked, n)
		return c.violation == ""
	})
	if err != nil && c.violation == "" {
		c.violation = err.Error()
	}
	return c.violation == ""
}

// writeEntries takes the entries of a read with collect (sdk/process
// ReadCollect): a collected run is counted, its events on the host; the
// rest as writeRuns files them. It returns false once the stream broke
// the standard.
func (c *collector) writeEntries(resp []byte) bool {
	err := process.EachEntry(resp, func(b, typ []byte, checked bool, n int, collected bool) bool {
		if collected {
			c.takeCollected(n)
		} else {
			c.takeN(b, typ, checked, n)
		}
		return c.violation == ""
	})
	if err != nil && c.violation == "" {
		c.violation = err.Error()
	}
	return c.violation == ""
}

// takeCollected counts n events the host collected: it collects only
// between the meta event and the summary, as the adapter files them.
func (c *collector) takeCollected(n int) {
	c.line++
	if !c.meta || c.summary != nil {
		c.violation = fmt.Sprintf("line %d: the host collected events where the stream allows none", c.line)
		return
	}
	c.line += n - 1
	c.n += n
}

// runTypes are the types of a read with runs for a command whose schema
// allows types: its domain types, bare and with "aoi:" (nil when it
// allows any type, or too many to name).
func runTypes(types []string) []string {
	var out []string
	for _, t := range types {
		if isDomain([]byte(t)) {
			out = append(out, t, "aoi:"+t)
		}
	}
	if len(out) > 256 {
		return nil
	}
	return out
}

// takeLine checks one line and files its event.
func (c *collector) takeLine(line []byte) { c.take(line, nil, false) }

// take files one line; checked means the host found it to be one JSON
// object whose top-level type is the string typ.
func (c *collector) take(line, typ []byte, checked bool) { c.takeN(line, typ, checked, 1) }

// takeN files one line, or a run of n lines of domain events (n > 1)
// joined with commas, whose first line's type is typ.
func (c *collector) takeN(line, typ []byte, checked bool, n int) {
	c.line++
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(bytes.TrimSpace(line)) == 0 {
		return // a blank line carries nothing
	}
	if c.summary != nil {
		c.violation = fmt.Sprintf("line %d comes after the summary, which must be the last", c.line)
		return
	}
	// one pass checks the line and finds its type without decoding it
	// (keys match exactly: "TYPE" is not "type", as it is not to the
	// client); the rare line it cannot read exactly is decoded
	raw, slow, ok := typ, false, true
	if !checked {
		raw, slow, ok = jsonx.ScanObject(line)
	}
	if !ok {
		if !utf8.Valid(line) {
			c.violation = fmt.Sprintf("line %d is not UTF-8", c.line)
		} else {
			c.violation = fmt.Sprintf("line %d is not a JSON object (machine mode allows nothing else on stdout): %s", c.line, excerpt(line))
		}
		return
	}
	if slow {
		var h header
		if jsonx.Unmarshal(line, &h) != nil {
			c.violation = fmt.Sprintf("line %d is not a JSON object (machine mode allows nothing else on stdout): %s", c.line, excerpt(line))
			return
		}
		if h.Type == nil {
			c.violation = fmt.Sprintf("line %d has no \"type\"", c.line)
			return
		}
		raw = []byte(*h.Type)
	} else if raw == nil {
		c.violation = fmt.Sprintf("line %d has no \"type\"", c.line)
		return
	}
	// a domain event (most lines) is filed without a string made of it
	if c.meta && c.summary == nil && isDomain(raw) && c.allows(raw) {
		c.add(line)
		c.n += n - 1
		c.line += n - 1
		return
	}
	if n > 1 && c.meta {
		// a run is of domain events the command's schema allows, and
		// the summary has not come (checked above): not reached
		c.violation = fmt.Sprintf("line %d starts a run of events that cannot be filed", c.line)
		return
	}
	t := bare(string(raw))
	typeName := string(raw)
	h := header{Type: &typeName}
	if !c.meta {
		if t != "meta" {
			c.violation = fmt.Sprintf("line %d is a %s event: the stream must start with the meta event", c.line, *h.Type)
			return
		}
		var m struct {
			Command *string `json:"command"`
		}
		if jsonx.Unmarshal(line, &m) == nil && m.Command != nil && *m.Command != c.command {
			c.violation = fmt.Sprintf("the meta event names command %q, not %q", *m.Command, c.command)
			return
		}
		c.meta = true
		return
	}
	if len(c.types) > 0 && !slices.Contains(c.types, t) && t != "progress" && t != "heartbeat" {
		c.violation = fmt.Sprintf("line %d is a %s event, which the command's schema does not allow", c.line, *h.Type)
		return
	}
	switch t {
	case "meta":
		c.violation = fmt.Sprintf("line %d is a second meta event", c.line)
	case "summary":
		var s struct {
			OK         *bool  `json:"ok"`
			Truncated  *bool  `json:"truncated"`
			NextCursor *any   `json:"next_cursor"`
			Type       string `json:"type"`
		}
		if err := jsonx.Unmarshal(line, &s); err != nil {
			c.violation = fmt.Sprintf("the summary does not read: %v", err)
			return
		}
		if s.NextCursor != nil && *s.NextCursor != nil {
			if _, isString := (*s.NextCursor).(string); !isString {
				c.violation = "the summary's next_cursor is not a string"
				return
			}
		}
		c.summary = clone(line)
		c.ok = s.OK != nil && *s.OK
	case "progress":
		if c.progress != nil {
			c.forwardProgress(line)
		}
	case "heartbeat":
	case "error":
		var e struct {
			Scope     *string `json:"scope"`
			Category  *string `json:"category"`
			Code      *string `json:"code"`
			Message   *string `json:"message"`
			Hint      *string `json:"hint"`
			Retryable *bool   `json:"retryable"`
		}
		if err := jsonx.Unmarshal(line, &e); err != nil {
			c.violation = fmt.Sprintf("line %d: the error event does not read: %v", c.line, err)
			return
		}
		ev := clone(line)
		c.lastErr = ev
		if e.Scope != nil && *e.Scope == "process" && c.fatal == nil {
			c.fatal = ev
		}
		c.add(ev)
	default:
		c.add(line)
	}
}

// isDomain reports whether t (raw, with or without "aoi:") is not one of
// the standard types the collector reads.
func isDomain(t []byte) bool {
	if len(t) >= 4 && string(t[:4]) == "aoi:" {
		t = t[4:]
	}
	switch string(t) {
	case "meta", "summary", "progress", "heartbeat", "error":
		return false
	}
	return true
}

// allows reports whether the command's schema allows type t (raw).
func (c *collector) allows(t []byte) bool {
	if len(c.types) == 0 {
		return true
	}
	if len(t) >= 4 && string(t[:4]) == "aoi:" {
		t = t[4:]
	}
	for _, a := range c.types {
		if a == string(t) {
			return true
		}
	}
	return false
}

// add keeps an event (its bytes are copied).
func (c *collector) add(ev []byte) {
	if len(c.events) > 0 {
		c.events = append(c.events, ',')
	}
	c.events = append(c.events, ev...)
	c.n++
}

// forwardProgress sends an aoi:progress event on as MCP progress: its
// progress (or current, done, completed; or percent of 100), total and
// message.
func (c *collector) forwardProgress(line []byte) {
	var p map[string]any
	if json.Unmarshal(line, &p) != nil {
		return
	}
	num := func(keys ...string) (float64, bool) {
		for _, k := range keys {
			if f, ok := p[k].(float64); ok && !math.IsNaN(f) {
				return f, true
			}
		}
		return 0, false
	}
	prog, ok := num("progress", "current", "done", "completed")
	total, _ := num("total")
	if !ok {
		if pct, ok2 := num("percent", "pct"); ok2 {
			prog, total, ok = pct, 100, true
		}
	}
	msg, _ := p["message"].(string)
	c.nprog++
	if !ok {
		prog = float64(c.nprog) // MCP's progress must grow: the count does
	}
	c.progress(prog, total, msg)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// excerpt is the start of an offending line, for the message.
func excerpt(b []byte) string {
	const n = 60
	if len(b) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return strconv.Quote(string(b[:cut])) + "..."
	}
	return strconv.Quote(string(b))
}
