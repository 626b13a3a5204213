package proc

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
)

// The output markers of a shell command: prelude.bash writes a marker (a
// NUL, the session's token, ":", then "S:seq:pid") before a command's
// output and another ("E:seq:rc:cwd") after it; the collector cuts the
// command's output out from between them.

// collector gathers the output of one command between its markers.
type collector struct {
	mark     []byte // NUL tok ":"
	pmark    []byte // NUL ptok ":", the parent's (nil: none)
	seq      string
	max      int64
	done     chan struct{} // closed at the end marker
	onOutput func([]byte)

	mu        sync.Mutex
	out       []byte
	truncated bool
	started   bool
	pid       int
	ended     bool
	rc        int
	cwd       string
}

func (c *collector) jobPid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// feed consumes p and returns the bytes to keep for the next call (a
// possible partial marker), reusing p's storage.
func (c *collector) feed(p []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.ended {
		i, mark, parent := bytes.Index(p, c.mark), c.mark, false
		if len(c.pmark) > 0 {
			if k := bytes.Index(p, c.pmark); k >= 0 && (i < 0 || k < i) {
				i, mark, parent = k, c.pmark, true
			}
		}
		if i < 0 {
			keep := partialMark(p, c.mark)
			if len(c.pmark) > 0 {
				keep = max(keep, partialMark(p, c.pmark))
			}
			c.emit(p[:len(p)-keep])
			return append(p[:0], p[len(p)-keep:]...)
		}
		c.emit(p[:i])
		rest := p[i+len(mark):]
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			if len(rest) > maxMarkerBody { // not ours after all
				c.emit(p[i : i+len(mark)])
				p = rest
				continue
			}
			return append(p[:0], p[i:]...)
		}
		if parent {
			c.parentMarker(string(rest[:j]))
		} else {
			c.marker(string(rest[:j]))
		}
		p = rest[j+1:]
	}
	return p[:0]
}

// partialMark is the length of the longest suffix of p that begins
// mark (0 if none): only that much must wait for the next read, so output
// flows as it is written (progress) instead of lagging a marker's length.
func partialMark(p, mark []byte) int {
	for k := min(len(p), len(mark)-1); k > 0; k-- {
		if bytes.HasPrefix(mark, p[len(p)-k:]) {
			return k
		}
	}
	return 0
}

// emit adds command output, once the start marker was seen.
func (c *collector) emit(p []byte) {
	if !c.started || len(p) == 0 {
		return
	}
	if c.onOutput != nil {
		c.onOutput(p)
	}
	room := c.max - int64(len(c.out))
	if int64(len(p)) > room {
		c.truncated = true
		if room <= 0 {
			return
		}
		p = p[:room]
	}
	c.out = append(c.out, p...)
}

// parentMarker handles the parent's "X:rc:cwd", after a job that saved
// nothing (exec, a signal, its own EXIT trap): it ends the command once the
// command's start marker was seen (an X before it is of an earlier job).
func (c *collector) parentMarker(body string) {
	rest, ok := strings.CutPrefix(body, "X:")
	if !ok || !c.started {
		return
	}
	c.end(rest)
}

func (c *collector) end(rcCwd string) {
	rc, cwd, _ := strings.Cut(rcCwd, ":")
	c.rc, _ = strconv.Atoi(rc)
	c.cwd = cwd
	c.ended = true
	close(c.done)
}

// marker handles "S:seq:pid" and "E:seq:rc:cwd".
func (c *collector) marker(body string) {
	kind, rest, _ := strings.Cut(body, ":")
	seq, rest, _ := strings.Cut(rest, ":")
	if seq != c.seq {
		return
	}
	switch kind {
	case "S":
		c.started = true
		c.pid, _ = strconv.Atoi(rest)
	case "E":
		c.end(rest)
	}
}

// shQuote quotes s for bash.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
