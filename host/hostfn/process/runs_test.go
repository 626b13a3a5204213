package process

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// entry is one entry of a read with runs, decoded.
type entry struct {
	b      string
	typ    string
	typOK  bool
	nLines int
}

// decodeRuns reads a runs response, failing t on a malformed one.
func decodeRuns(t testing.TB, b []byte) []entry {
	t.Helper()
	if len(b) < 4 {
		t.Fatalf("a runs response of %d bytes", len(b))
	}
	n := int(binary.LittleEndian.Uint32(b))
	pos := 4 + abi.RunEntry*n
	var out []entry
	for k := 0; k < n; k++ {
		e := b[4+abi.RunEntry*k:]
		l, ts, tl, lines := int(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:]), int(binary.LittleEndian.Uint32(e[12:]))
		en := entry{b: string(b[pos : pos+l]), nLines: lines}
		if ts != abi.LineUnchecked {
			en.typ, en.typOK = en.b[ts:ts+tl], true
		}
		out = append(out, en)
		pos += l
	}
	if pos != len(b) {
		t.Fatalf("%d bytes after the entries", len(b)-pos)
	}
	return out
}

// TestProcessReadRuns: a read with runs joins the consecutive lines that
// are objects of the named types (ending with their brace) with commas,
// one entry with their count and the first line's type; any other line
// (another type, prose, a blank line, a type with escapes, a trailing
// space or CR) is an entry of its own and breaks the run. (The stream is
// one write, so that it arrives whole: a read answers what is there.) The bound
// counts a run's commas; a run cut by it goes on in the next read.
func TestProcessReadRuns(t *testing.T) {
	e := newProcEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"sh"}, []string{e.root}, false)}
	raw := func(name string, req any) (abi.Code, []byte) {
		b, _ := json.Marshal(req)
		return hostfntest.Call(ctx, e.defs[name], c, b)
	}
	code, resp := raw("start", abi.ProcessStartRequest{Argv: []string{"sh", "-c",
		`printf '{"type":"aoi:meta"}\n{"type":"hit","n":1}\n{"type":"aoi:hit","n":2}\n{"type":"hit","n":3}\r\n{"type":"hit","n":4}\n` +
			`{"type":"h\\u0069t"}\n{"type":"hit","n":5}\n{"type":"hit","n":6} \n\n{"type":"other"}\nprose\n{"type":"hit","n":7}\n{"type":"hit","n":8}\n'`}})
	var st abi.ProcessStartResponse
	if code != abi.OK || json.Unmarshal(resp, &st) != nil {
		t.Fatalf("start: %v %s", code, resp)
	}
	var got []entry
	for {
		code, b := raw("read", abi.ProcessReadRequest{ID: st.ID, TimeoutMs: 5000, Runs: []string{"hit", "aoi:hit"}})
		if code != abi.OK {
			t.Fatalf("read: %v %s", code, b)
		}
		if len(b) == 0 {
			break
		}
		got = append(got, decodeRuns(t, b)...)
	}
	want := []entry{
		{`{"type":"aoi:meta"}`, "aoi:meta", true, 1},
		{`{"type":"hit","n":1},{"type":"aoi:hit","n":2}`, "hit", true, 2},
		{"{\"type\":\"hit\",\"n\":3}\r", "hit", true, 1},
		{`{"type":"hit","n":4}`, "hit", true, 1},
		{`{"type":"h\u0069t"}`, "", false, 1},
		{`{"type":"hit","n":5}`, "hit", true, 1},
		{`{"type":"hit","n":6} `, "hit", true, 1},
		{``, "", false, 1},
		{`{"type":"other"}`, "other", true, 1},
		{`prose`, "", false, 1},
		{`{"type":"hit","n":7},{"type":"hit","n":8}`, "hit", true, 2},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries:\n%+v\nwant\n%+v", got, want)
	}
	raw("wait", abi.ProcessWaitRequest{ID: st.ID})

	// too many types
	code, _ = raw("start", abi.ProcessStartRequest{Argv: []string{"sh", "-c", "echo {}"}})
	if code != abi.OK {
		t.Fatal(code)
	}
	many := make([]string, maxRunTypes+1)
	if code, b := raw("read", abi.ProcessReadRequest{ID: st.ID + 1, Runs: many}); code != abi.Invalid {
		t.Fatalf("%d types: %v %s", len(many), code, b)
	}
}

// TestLineIndexRunsBound: with a bound, a run stops where the next line
// (and its comma) would not fit, and the rest comes next.
func TestLineIndexRunsBound(t *testing.T) {
	rest := []byte(`{"type":"hit","n":1}` + "\n" + `{"type":"hit","n":2}` + "\n" + `{"type":"hit","n":3}` + "\n")
	runs := []string{"hit"}
	n := abi.RunEntry + 20 + 1 + 20 // one entry, two lines and their comma
	out, used := lineIndex(rest, false, n, runs)
	es := decodeRuns(t, out)
	if len(es) != 1 || es[0].nLines != 2 || used != 42 {
		t.Fatalf("%+v, used %d", es, used)
	}
	out, used2 := lineIndex(rest[used:], false, n, runs)
	if es := decodeRuns(t, out); len(es) != 1 || es[0].nLines != 1 || used2 != 21 {
		t.Fatalf("%+v, used %d", es, used2)
	}
	if out, used := lineIndex(nil, true, n, runs); len(out) != 0 || used != 0 {
		t.Fatalf("the end: %q %d", out, used)
	}
}

// FuzzLineIndexRuns: whatever a program writes, a read with runs holds
// the same lines as a read with lines, in order: each entry one line, or
// a run of lines that are each one object of a named type ending with its
// brace, joined with commas; the same bytes used.
func FuzzLineIndexRuns(f *testing.F) {
	f.Add([]byte("{\"type\":\"hit\"}\n{\"type\":\"hit\"}\n{\"type\":\"x\"}\n{\"type\":\"hit\"} \n{\"type\":\"hit\"}"), true, uint16(0))
	f.Add([]byte("\n\n{\"type\":\"hit\",\"a\":\"}\\n\"}\n{\"type\":\"hit\"}\n"), false, uint16(40))
	f.Fuzz(func(t *testing.T, rest []byte, eof bool, bound uint16) {
		n := int(bound)
		if n == 0 {
			n = maxReadBytes
		}
		runs := []string{"hit", "aoi:hit"}
		lb, lused := lineIndex(rest, eof, maxReadBytes, nil)
		rb, rused := lineIndex(rest, eof, n, runs)
		if len(lb) == 0 {
			if len(rb) != 0 || rused != 0 {
				t.Fatalf("no line, but runs: %q %d", rb, rused)
			}
			return
		}
		if len(rb) == 0 || rused == 0 || rused > lused {
			t.Fatalf("runs used %d of %d", rused, lused)
		}
		// the lines, from the lines response
		k := int(binary.LittleEndian.Uint32(lb))
		pos := 4 + abi.LineEntry*k
		var lines [][]byte
		for i := 0; i < k; i++ {
			l := int(binary.LittleEndian.Uint32(lb[4+abi.LineEntry*i:]))
			lines = append(lines, lb[pos:pos+l])
			pos += l
		}
		li := 0
		for _, e := range decodeRuns(t, rb) {
			if e.nLines < 1 || li+e.nLines > len(lines) {
				t.Fatalf("an entry of %d lines at line %d of %d", e.nLines, li, len(lines))
			}
			joined := bytes.Join(lines[li:li+e.nLines], []byte(","))
			if string(joined) != e.b {
				t.Fatalf("entry %q, lines %q", e.b, joined)
			}
			if e.nLines > 1 {
				for _, l := range lines[li : li+e.nLines] {
					typ, slow, ok := jsonx.ScanObject(l)
					if !ok || slow || !slices.Contains(runs, string(typ)) || l[len(l)-1] != '}' {
						t.Fatalf("a run holds %q", l)
					}
				}
			}
			li += e.nLines
		}
		if used := lineEnd(rest, li, eof); used != rused {
			t.Fatalf("used %d for %d lines, want %d", rused, li, used)
		}
	})
}

// lineEnd is where the first k lines of rest end (past the newline).
func lineEnd(rest []byte, k int, eof bool) int {
	off := 0
	for ; k > 0; k-- {
		i := bytes.IndexByte(rest[off:], '\n')
		if i < 0 {
			return len(rest)
		}
		off += i + 1
	}
	return off
}
