package process

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/proc"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Started programs (ABI v1.1, spec/abi/v1/process.md §3.6): start runs a
// program whose stdout the plugin reads in pieces while it runs (read)
// and which it ends with wait. They belong to the call that started them:
// when it ends, whatever it did not wait for is killed.

// started is a call's started programs, in hostfn.Call.Values.
type started struct {
	next int
	byID map[int]*proc.Running
	// lines are the line readers' states (reads with lines)
	lines map[int]*lineState
}

// lineState is what a line reader holds between reads: the unfinished
// last line (and how much of it was searched for a newline), and whether
// stdout has ended.
type lineState struct {
	rest    []byte
	own     []byte     // rest's buffer when a piece was appended to it
	spans   []lineSpan // indexLines' scratch
	scanned int
	eof     bool
	// the collection (reads with collect, v1.2): the runs kept on the
	// host, joined with commas, n of them, and where the stream stands
	col collection
}

// take appends b, a piece Running.Read handed over, to the rest: the
// piece itself when nothing is held, else the unfinished line and the
// piece in the state's own buffer, reused read after read (appending to
// the piece before made a new buffer nearly every read: 2 MB of garbage
// for a stream of 10,000 events).
func (ls *lineState) take(b []byte) {
	switch {
	case len(b) == 0:
	case len(ls.rest) == 0:
		ls.rest = b
	default:
		n := len(ls.rest) + len(b)
		if cap(ls.own) < n {
			ls.own = make([]byte, 0, max(n, 2*cap(ls.own), 64<<10))
		}
		own := ls.own[:n]
		copy(own, ls.rest) // rest may lie in own: copy moves it
		copy(own[len(ls.rest):], b)
		ls.rest = own
	}
}

// collection is a program's collection: the domain events a plugin
// passing a Machine Mode stream on never reads, kept on the host until
// the plugin writes them into its result (wait with keep_collected,
// aiod:core.output_blob with escape 0).
type collection struct {
	b []byte
	n int
	// esc is b escaped once (JSON string contents), made as the events
	// come, while the program still writes: the text block of the result
	// is then a copy, not an escaping after the stream ended
	esc []byte
	// gate is where the stream stands: before its first line that is
	// not blank; open after a first line that was its meta event; shut
	// after a summary, after a line whose type the host cannot read
	// plainly (it might be either), or when the first line was not the
	// meta event. Runs are collected only while it is open: the plugin's
	// own reading of the stream decides what comes before and after.
	gate int
}

const (
	gateBefore = iota
	gateOpen
	gateShut
)

// add appends one checked object.
func (c *collection) add(ev []byte) {
	if c.n > 0 {
		c.b = append(c.b, ',')
		c.esc = append(c.esc, ',')
	}
	c.b = append(c.b, ev...)
	c.esc = core.AppendEscapedText(c.esc, ev)
	c.n++
}

// grow makes room for about n more bytes of events, doubling (append's
// growth of a large slice is a quarter at a time: a 1 MB collection
// was copied a dozen times). A new collection starts from the buffers
// of one whose call ended.
func (c *collection) grow(n int) {
	if cap(c.b) == 0 {
		if p, ok := collPool.Get().(*collBufs); ok {
			c.b, c.esc = p.b[:0], p.esc[:0]
		}
	}
	c.b = growBytes(c.b, n)
	c.esc = growBytes(c.esc, n+n/8)
}

// collBufs are a collection's buffers, for the next one.
type collBufs struct{ b, esc []byte }

var collPool sync.Pool

// maxPooled bounds the buffers kept for reuse: a rare huge collection's
// are left to the collector.
const maxPooled = 4 << 20

// release gives the collection's buffers back once its call has ended
// (hostfn.Kept.Release): the result holds copies.
func (c *collection) release() {
	if cap(c.b) > 0 && cap(c.b) <= maxPooled && cap(c.esc) <= 2*maxPooled {
		collPool.Put(&collBufs{b: c.b[:0], esc: c.esc[:0]})
	}
	c.b, c.esc = nil, nil
}

func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n, 64<<10))
	copy(nb, b)
	return nb
}

// next is where the gate stands after one more line of the stream, whose
// type (when the host read it plainly) is typ. Blank lines are the
// plugin's (bytes.TrimSpace), as the adapter has them.
func (c *collection) next(line, typ []byte, plain bool) int {
	if c.gate == gateShut || len(bytes.TrimSpace(line)) == 0 {
		return c.gate
	}
	if c.gate == gateBefore {
		if plain && (string(typ) == "meta" || string(typ) == "aoi:meta") {
			return gateOpen
		}
		return gateShut
	}
	if !plain || string(typ) == "summary" || string(typ) == "aoi:summary" {
		return gateShut
	}
	return gateOpen
}

type startedKey struct{}

func callStarted(c *hostfn.Call) *started {
	if s, ok := c.Values[startedKey{}].(*started); ok {
		return s
	}
	s := &started{byID: map[int]*proc.Running{}, lines: map[int]*lineState{}}
	if c.Values == nil {
		c.Values = map[any]any{}
	}
	c.Values[startedKey{}] = s
	return s
}

func (f *Family) start(ctx context.Context, c *hostfn.Call, req *abi.ProcessStartRequest) (*abi.ProcessStartResponse, error) {
	g, err := processGrant(c)
	if err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, hostfn.Errorf(abi.Invalid, "argv is required")
	}
	st := callStarted(c)
	if len(st.byID) >= abi.MaxStartedPerCall {
		return nil, hostfn.Errorf(abi.Unavailable, "%d programs started and not waited for: wait for one first", abi.MaxStartedPerCall)
	}
	anyProgram := slices.Contains(g.Commands, "*")
	base := f.m.Config().BaseEnv
	if req.ClearEnv {
		base = f.m.ClearBaseEnv()
	}
	env, err := proc.MergeEnv(base, req.Env, anyProgram)
	if err != nil {
		return nil, procError(err)
	}
	path, err := f.m.ResolveProgram(req.Argv[0], g.Commands, req.Env["PATH"])
	if err != nil {
		return nil, procError(err)
	}
	dir, err := cwdFor(f.m, c.Owner, g, req.Cwd)
	if err != nil {
		return nil, err
	}
	sr := proc.SpawnRequest{
		Path: path, Args: req.Argv, Env: env, Dir: dir,
		Timeout:   callTimeout(ctx, req.TimeoutMs, f.m.Config()),
		MaxOutput: req.MaxOutputBytes,
		Owner:     c.Owner,
	}
	if req.Stdin != nil {
		sr.Stdin = []byte(*req.Stdin)
	}
	r, err := f.m.Start(ctx, sr)
	if err != nil {
		return nil, procError(err)
	}
	st.next++
	st.byID[st.next] = r
	return &abi.ProcessStartResponse{ID: st.next, Program: path, Cwd: dir}, nil
}

// maxReadBytes bounds one read.
const maxReadBytes = 4 << 20

// maxRunTypes bounds the types of a read with runs.
const maxRunTypes = 256

// read answers the next piece of a started program's stdout, raw (not
// JSON): empty at its end, the code timeout when nothing came in time.
func (f *Family) read(ctx context.Context, c *hostfn.Call, raw []byte) ([]byte, error) {
	var req abi.ProcessReadRequest
	if err := hostfn.DecodeRequest(raw, &req); err != nil {
		return nil, hostfn.Errorf(abi.Invalid, "bad request: %v", err)
	}
	if _, err := processGrant(c); err != nil {
		return nil, err
	}
	r := callStarted(c).byID[req.ID]
	if r == nil {
		return nil, hostfn.Errorf(abi.NotFound, "no started program %d in this call", req.ID)
	}
	n := req.MaxBytes
	if n <= 0 || n > maxReadBytes {
		n = maxReadBytes
	}
	wait := time.Duration(req.TimeoutMs) * time.Millisecond
	if req.TimeoutMs <= 0 {
		wait = 30 * time.Second
	}
	if len(req.Runs) > maxRunTypes {
		return nil, hostfn.Errorf(abi.Invalid, "runs names %d types, at most %d", len(req.Runs), maxRunTypes)
	}
	if (req.Collect || len(req.Add) > 0) && len(req.Runs) == 0 {
		return nil, hostfn.Errorf(abi.Invalid, "collect and add are for a read with runs")
	}
	if len(req.Add) > 0 && !req.Collect {
		return nil, hostfn.Errorf(abi.Invalid, "add is for a read with collect")
	}
	if req.Lines || len(req.Runs) > 0 {
		ls := callStarted(c).lines[req.ID]
		if ls == nil {
			ls = &lineState{}
			callStarted(c).lines[req.ID] = ls
		}
		if req.Collect {
			if err := ls.col.addAll(req.Add); err != nil {
				return nil, err
			}
		}
		return readLines(ctx, r, ls, n, wait, req.Runs, req.Collect)
	}
	b, eof := r.Read(ctx, n, wait)
	if len(b) == 0 && !eof {
		if ctx.Err() != nil {
			return nil, hostfn.Errorf(abi.Timeout, "the call ended")
		}
		return nil, hostfn.Errorf(abi.Timeout, "no output within %s", wait)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func (f *Family) wait(_ context.Context, c *hostfn.Call, req *abi.ProcessWaitRequest) (*abi.ProcessWaitResponse, error) {
	if _, err := processGrant(c); err != nil {
		return nil, err
	}
	st := callStarted(c)
	r := st.byID[req.ID]
	if r == nil {
		return nil, hostfn.Errorf(abi.NotFound, "no started program %d in this call", req.ID)
	}
	var col *abi.ProcessCollected
	if req.KeepCollected {
		col = &abi.ProcessCollected{Kept: -1}
		if ls := st.lines[req.ID]; ls != nil && ls.col.n > 0 {
			if len(c.Kept) >= hostfn.MaxKept {
				return nil, hostfn.Errorf(abi.Unavailable, "more than %d responses kept in one call", hostfn.MaxKept)
			}
			// every byte of it was checked: valid UTF-8, objects
			lc := &ls.col
			c.Kept = append(c.Kept, hostfn.Kept{Bytes: lc.b, UTF8: true, Items: lc.n, Escaped: lc.esc, Release: lc.release})
			col = &abi.ProcessCollected{Kept: int64(len(c.Kept) - 1), Events: ls.col.n, Bytes: len(ls.col.b)}
		}
	}
	delete(st.byID, req.ID)
	delete(st.lines, req.ID)
	res := r.Wait(req.Kill)
	return &abi.ProcessWaitResponse{
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Killed: res.Killed,
		DurationMs: res.Duration.Milliseconds(), StdoutBytes: res.StdoutBytes, StdoutTruncated: res.StdoutTruncated,
		Stderr: string(res.Stderr), StderrTruncated: res.StderrTruncated, Collected: col,
	}, nil
}

// addAll appends the events a plugin files itself (a read's add): each
// must be one JSON object (jsonx.ScanObject: valid UTF-8), and the
// collection stays within abi.MaxCollectedBytes.
// All of them or none: a refused add changes nothing.
func (c *collection) addAll(evs []json.RawMessage) error {
	size := len(c.b)
	for i, ev := range evs {
		ev = bytes.TrimSpace(ev)
		if _, _, ok := jsonx.ScanObject(ev); !ok {
			return hostfn.Errorf(abi.Invalid, "add[%d] is not one JSON object of valid UTF-8", i)
		}
		if size += len(ev) + 1; size > abi.MaxCollectedBytes {
			return hostfn.Errorf(abi.TooLarge, "the collection would pass %d bytes", abi.MaxCollectedBytes)
		}
	}
	for _, ev := range evs {
		c.add(bytes.TrimSpace(ev))
	}
	return nil
}

// readLines answers a read with lines: the whole lines that are there (at
// least one, waiting up to wait for it; then as many as fit, with their
// index entries, in n bytes),
// each with the host's reading of it, in the index format of
// abi.LineEntry. At the end of stdout an unfinished last line is a line;
// after it the response is empty. With runs (abi.RunEntry's format), the
// consecutive lines that are JSON objects of one of those types (read
// plainly, ending with their closing brace) come as one entry, joined
// with commas.
func readLines(ctx context.Context, r *proc.Running, ls *lineState, n int, wait time.Duration, runs []string, collect bool) ([]byte, error) {
	if collect {
		return readCollect(ctx, r, ls, n, wait, runs)
	}
	deadline := time.Now().Add(wait)
	for !ls.eof && bytes.IndexByte(ls.rest[ls.scanned:], '\n') < 0 {
		ls.scanned = len(ls.rest)
		left := time.Until(deadline)
		if left <= 0 {
			return nil, hostfn.Errorf(abi.Timeout, "no whole line within %s", wait)
		}
		b, eof := r.Read(ctx, n, left)
		if len(b) == 0 && !eof {
			if ctx.Err() != nil {
				return nil, hostfn.Errorf(abi.Timeout, "the call ended")
			}
			return nil, hostfn.Errorf(abi.Timeout, "no whole line within %s", wait)
		}
		ls.take(b)
		ls.eof = eof
	}
	if !ls.eof {
		// what else is there already, without waiting
		if b, eof := r.Read(ctx, n, 0); len(b) > 0 || eof {
			ls.take(b)
			ls.eof = eof
		}
	}
	out, used := indexLines(ls.rest, ls.eof, n, runs, nil, &ls.spans)
	ls.rest = append(ls.rest[:0], ls.rest[used:]...)
	ls.scanned = 0
	return out, nil
}

// readCollect is a read with collect. The plugin needs to see a collected
// run only as its count, so the read goes on collecting while the program
// writes, as the lines come, and answers only when a line the plugin
// reads comes (after the count of the runs collected before it), at the
// end of stdout, or when wait has passed with runs collected (a timeout
// when nothing came): a stream of domain events costs the plugin one
// read, however many pieces the program wrote it in.
func readCollect(ctx context.Context, r *proc.Running, ls *lineState, n int, wait time.Duration, runs []string) ([]byte, error) {
	deadline := time.Now().Add(wait)
	col := &ls.col
	counted := 0 // lines collected by this read
	for {
		if len(ls.rest) > 0 {
			col.grow(len(ls.rest))
			out, used := indexLines(ls.rest, ls.eof, n, runs, col, &ls.spans)
			ls.rest = append(ls.rest[:0], ls.rest[used:]...)
			if k, only := collectedOnly(out); only {
				counted += k
			} else if len(out) > 0 {
				return withCollected(out, counted), nil
			}
		}
		if ls.eof {
			if counted > 0 {
				return withCollected(nil, counted), nil
			}
			return []byte{}, nil // the end of stdout
		}
		left := time.Until(deadline)
		var b []byte
		var eof bool
		if left > 0 {
			b, eof = r.Read(ctx, maxReadBytes, left)
		}
		if len(b) == 0 && !eof {
			if counted > 0 {
				return withCollected(nil, counted), nil
			}
			if ctx.Err() != nil {
				return nil, hostfn.Errorf(abi.Timeout, "the call ended")
			}
			return nil, hostfn.Errorf(abi.Timeout, "no whole line within %s", wait)
		}
		ls.take(b)
		ls.eof = eof
	}
}

// collectedOnly reports whether out, a response of a read with collect,
// holds only collected entries, and how many lines they count.
func collectedOnly(out []byte) (int, bool) {
	if len(out) < 4 {
		return 0, false
	}
	n, lines := int(binary.LittleEndian.Uint32(out)), 0
	for k := 0; k < n; k++ {
		e := out[4+abi.RunEntry*k:]
		if binary.LittleEndian.Uint32(e[4:]) != abi.LineCollected {
			return 0, false
		}
		lines += int(binary.LittleEndian.Uint32(e[12:]))
	}
	return lines, n > 0
}

// withCollected is out (nil: no entries) with counted more collected
// lines before its entries: added to its first entry when that is
// collected, else as an entry of their own.
func withCollected(out []byte, counted int) []byte {
	if counted == 0 {
		return out
	}
	if len(out) >= 4+abi.RunEntry && binary.LittleEndian.Uint32(out) > 0 && binary.LittleEndian.Uint32(out[8:]) == abi.LineCollected {
		binary.LittleEndian.PutUint32(out[16:], binary.LittleEndian.Uint32(out[16:])+uint32(counted))
		return out
	}
	entries := 0
	if len(out) >= 4 {
		entries = int(binary.LittleEndian.Uint32(out))
		out = out[4:]
	}
	res := make([]byte, 4+abi.RunEntry, 4+abi.RunEntry+len(out))
	binary.LittleEndian.PutUint32(res, uint32(entries+1))
	binary.LittleEndian.PutUint32(res[8:], abi.LineCollected)
	binary.LittleEndian.PutUint32(res[16:], uint32(counted))
	return append(res, out...)
}

// lineIndex is the response of a read with lines (with runs when runs is
// not empty) for the whole lines at the start of rest (all of it, the
// last line unfinished, when eof), as many as fit in n bytes and at least
// one, and how much of rest it used. Empty when rest holds no line.
func lineIndex(rest []byte, eof bool, n int, runs []string) ([]byte, int) {
	return indexLines(rest, eof, n, runs, nil, nil)
}

// lineSpan is one line of indexLines' response.
type lineSpan struct {
	start, end int // the line in rest
	ts, tl     uint32
	run        bool // it may join a run
	collected  bool // it went into the collection
}

// indexLines is lineIndex, and with col a read with collect: the runs
// that come while col's gate is open go into col instead of the
// response (an entry without bytes, LineCollected), and the response
// ends after the first entry that was not collected, so that what the
// plugin adds of it comes in the stream's order.
//
// scratch, when not nil, holds the lines' spans from one call to the next
// (a read reads a few hundred lines; a new slice each time was most of
// what a stream of short events allocated).
func indexLines(rest []byte, eof bool, n int, runs []string, col *collection, scratch *[]lineSpan) ([]byte, int) {
	entry := abi.LineEntry
	if len(runs) > 0 {
		entry = abi.RunEntry
	}
	// the whole lines, as many as fit in n (at least one), each read
	var spans []lineSpan
	if scratch != nil {
		spans = (*scratch)[:0]
	}
	size, entries := 0, 0
	for off := 0; off < len(rest); {
		i := bytes.IndexByte(rest[off:], '\n')
		end := off + i
		if i < 0 {
			if !eof {
				break
			}
			end = len(rest) // the unfinished last line, at the end
		}
		line := rest[off:end]
		sp := lineSpan{start: off, end: end, ts: abi.LineUnchecked, tl: abi.LineUnchecked}
		typ, slow, ok := jsonx.ScanObject(line)
		plain := ok && !slow && typ != nil
		if plain {
			sp.ts, sp.tl = uint32(cap(line)-cap(typ)), uint32(len(typ))
			sp.run = len(runs) > 0 && line[len(line)-1] == '}' && slices.Contains(runs, string(typ))
		}
		last := len(spans) - 1
		gate := gateShut
		if col != nil {
			gate = col.next(line, typ, plain)
			sp.collected = sp.run && gate == gateOpen
		}
		joins := last >= 0 && sp.run && spans[last].run && sp.collected == spans[last].collected
		if col != nil && last >= 0 && !spans[last].collected && !joins {
			// an entry the plugin reads ends the response
			break
		}
		// a line's index entry counts too: a flood of empty lines makes
		// no larger a response
		add := end - off
		switch {
		case sp.collected && joins:
			add = 0
		case sp.collected:
			add = entry
		case joins:
			add++ // its comma
		default:
			add += entry
		}
		if len(spans) > 0 && size+add > n {
			break
		}
		size += add
		if !joins {
			entries++
		}
		if col != nil {
			col.gate = gate
			if sp.collected {
				col.add(line)
			}
		}
		spans = append(spans, sp)
		off = end + 1
	}
	if scratch != nil {
		*scratch = spans[:0] // grown, for the next call
	}
	if len(spans) == 0 {
		return []byte{}, 0 // the end of stdout
	}
	out := make([]byte, 4+entry*entries, 4+size)
	binary.LittleEndian.PutUint32(out, uint32(entries))
	k := -1
	for j, sp := range spans {
		line := rest[sp.start:sp.end]
		if j > 0 && sp.run && spans[j-1].run && sp.collected == spans[j-1].collected {
			// the next line of a run: its entry grows
			e := out[4+entry*k:]
			binary.LittleEndian.PutUint32(e[12:], binary.LittleEndian.Uint32(e[12:])+1)
			if !sp.collected {
				binary.LittleEndian.PutUint32(e, binary.LittleEndian.Uint32(e)+uint32(len(line))+1)
				out = append(append(out, ','), line...)
			}
			continue
		}
		k++
		e := out[4+entry*k:]
		if sp.collected {
			binary.LittleEndian.PutUint32(e, 0)
			binary.LittleEndian.PutUint32(e[4:], abi.LineCollected)
			binary.LittleEndian.PutUint32(e[8:], 0)
			binary.LittleEndian.PutUint32(e[12:], 1)
			continue
		}
		binary.LittleEndian.PutUint32(e, uint32(len(line)))
		binary.LittleEndian.PutUint32(e[4:], sp.ts)
		binary.LittleEndian.PutUint32(e[8:], sp.tl)
		if entry == abi.RunEntry {
			binary.LittleEndian.PutUint32(e[12:], 1)
		}
		out = append(out, line...)
	}
	return out, min(spans[len(spans)-1].end+1, len(rest))
}
