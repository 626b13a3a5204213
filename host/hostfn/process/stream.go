package process

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
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
	scanned int
	eof     bool
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
	if req.Lines || len(req.Runs) > 0 {
		ls := callStarted(c).lines[req.ID]
		if ls == nil {
			ls = &lineState{}
			callStarted(c).lines[req.ID] = ls
		}
		return readLines(ctx, r, ls, n, wait, req.Runs)
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
	delete(st.byID, req.ID)
	delete(st.lines, req.ID)
	res := r.Wait(req.Kill)
	return &abi.ProcessWaitResponse{
		ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Killed: res.Killed,
		DurationMs: res.Duration.Milliseconds(), StdoutBytes: res.StdoutBytes, StdoutTruncated: res.StdoutTruncated,
		Stderr: string(res.Stderr), StderrTruncated: res.StderrTruncated,
	}, nil
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
func readLines(ctx context.Context, r *proc.Running, ls *lineState, n int, wait time.Duration, runs []string) ([]byte, error) {
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
		ls.rest = append(ls.rest, b...)
		ls.eof = eof
	}
	if !ls.eof {
		// what else is there already, without waiting
		if b, eof := r.Read(ctx, n, 0); len(b) > 0 || eof {
			ls.rest = append(ls.rest, b...)
			ls.eof = eof
		}
	}
	out, used := lineIndex(ls.rest, ls.eof, n, runs)
	ls.rest = append(ls.rest[:0], ls.rest[used:]...)
	ls.scanned = 0
	return out, nil
}

// lineIndex is the response of a read with lines (with runs when runs is
// not empty) for the whole lines at the start of rest (all of it, the
// last line unfinished, when eof), as many as fit in n bytes and at least
// one, and how much of rest it used. Empty when rest holds no line.
func lineIndex(rest []byte, eof bool, n int, runs []string) ([]byte, int) {
	entry := abi.LineEntry
	if len(runs) > 0 {
		entry = abi.RunEntry
	}
	// the whole lines, as many as fit in n (at least one), each read
	type span struct {
		start, end int // the line in rest
		ts, tl     uint32
		run        bool // it may join a run
	}
	var spans []span
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
		sp := span{start: off, end: end, ts: abi.LineUnchecked, tl: abi.LineUnchecked}
		if typ, slow, ok := jsonx.ScanObject(line); ok && !slow && typ != nil {
			sp.ts, sp.tl = uint32(cap(line)-cap(typ)), uint32(len(typ))
			sp.run = len(runs) > 0 && line[len(line)-1] == '}' && slices.Contains(runs, string(typ))
		}
		joins := sp.run && len(spans) > 0 && spans[len(spans)-1].run
		// a line's index entry counts too: a flood of empty lines makes
		// no larger a response
		add := end - off
		if joins {
			add++ // its comma
		} else {
			add += entry
		}
		if len(spans) > 0 && size+add > n {
			break
		}
		size += add
		if !joins {
			entries++
		}
		spans = append(spans, sp)
		off = end + 1
	}
	if len(spans) == 0 {
		return []byte{}, 0 // the end of stdout
	}
	out := make([]byte, 4+entry*entries, 4+size)
	binary.LittleEndian.PutUint32(out, uint32(entries))
	k := -1
	for j, sp := range spans {
		line := rest[sp.start:sp.end]
		if j > 0 && sp.run && spans[j-1].run {
			// the next line of a run: its entry grows
			e := out[4+entry*k:]
			binary.LittleEndian.PutUint32(e, binary.LittleEndian.Uint32(e)+uint32(len(line))+1)
			binary.LittleEndian.PutUint32(e[12:], binary.LittleEndian.Uint32(e[12:])+1)
			out = append(append(out, ','), line...)
			continue
		}
		k++
		e := out[4+entry*k:]
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
