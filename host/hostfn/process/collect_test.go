package process

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aiodhq/aiod/host/hostfn"
	"github.com/aiodhq/aiod/host/hostfn/core"
	"github.com/aiodhq/aiod/host/hostfn/hostfntest"
	"github.com/aiodhq/aiod/sdk/abi"
)

// centry is one entry of a read with collect, decoded.
type centry struct {
	b         string
	typ       string
	nLines    int
	collected bool
}

// decodeCollect reads a response of a read with collect, failing t on a
// malformed one.
func decodeCollect(t testing.TB, b []byte) []centry {
	t.Helper()
	if len(b) < 4 {
		t.Fatalf("a collect response of %d bytes", len(b))
	}
	n := int(binary.LittleEndian.Uint32(b))
	pos := 4 + abi.RunEntry*n
	var out []centry
	for k := 0; k < n; k++ {
		e := b[4+abi.RunEntry*k:]
		l, ts, tl, lines := int(binary.LittleEndian.Uint32(e)), binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[8:]), int(binary.LittleEndian.Uint32(e[12:]))
		if ts == abi.LineCollected {
			if l != 0 || tl != 0 {
				t.Fatalf("a collected entry with bytes: %d %d", l, tl)
			}
			out = append(out, centry{nLines: lines, collected: true})
			continue
		}
		en := centry{b: string(b[pos : pos+l]), nLines: lines}
		if ts != abi.LineUnchecked {
			en.typ = en.b[ts : ts+tl]
		}
		out = append(out, en)
		pos += l
	}
	if pos != len(b) {
		t.Fatalf("%d bytes after the entries", len(b)-pos)
	}
	return out
}

// readCollectAll reads program id with collect (runs of "hit") to the end
// of its stdout, and returns every entry.
func readCollectAll(t *testing.T, raw func(name string, req any) (abi.Code, []byte), id int) []centry {
	t.Helper()
	var got []centry
	for {
		code, b := raw("read", abi.ProcessReadRequest{ID: id, TimeoutMs: 5000, Runs: []string{"hit"}, Collect: true})
		if code != abi.OK {
			t.Fatalf("read: %v %s", code, b)
		}
		if len(b) == 0 {
			return got
		}
		got = append(got, decodeCollect(t, b)...)
	}
}

// collectEnv starts sh -c script in a call and returns a function making
// raw requests in that call, and the program's id.
func collectEnv(t *testing.T, script string) (func(name string, req any) (abi.Code, []byte), *hostfn.Call, int) {
	t.Helper()
	e := newProcEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &hostfn.Call{Plugin: "p", Owner: "o", Grant: grantProcess([]string{"sh"}, []string{e.root}, false), MaxOutput: 1 << 20}
	raw := func(name string, req any) (abi.Code, []byte) {
		b, ok := req.([]byte)
		if !ok {
			b, _ = json.Marshal(req)
		}
		return hostfntest.Call(ctx, e.defs[name], c, b)
	}
	code, resp := raw("start", abi.ProcessStartRequest{Argv: []string{"sh", "-c", script}})
	var st abi.ProcessStartResponse
	if code != abi.OK || json.Unmarshal(resp, &st) != nil {
		t.Fatalf("start: %v %s", code, resp)
	}
	return raw, c, st.ID
}

// TestProcessReadCollect: a read with collect keeps the runs of the named
// types on the host once the first line that is not blank was the meta
// event, until the summary; each comes as its count, and a response ends
// after the first entry the plugin reads, so that an event the plugin
// adds with the next read goes into the collection in the stream's order.
// The collection, kept by wait, is the events in order, and escaped once
// ahead for the text block.
func TestProcessReadCollect(t *testing.T) {
	stream := "\n" + `{"type":"aoi:meta","command":"c"}` + "\n" +
		`{"type":"hit","n":1}` + "\n" + `{"type":"aoi:hit","n":2,"s":"a\"b"}` + "\n" +
		`{"type":"aoi:progress","progress":1}` + "\n" +
		`{"type":"hit","n":3}` + "\n" + `{"type":"aoi:error","scope":"item"}` + "\n" +
		`{"type":"hit","n":4}` + "\n" + `{"type":"hit","n":5}` + "\n" +
		`{"type":"aoi:summary","ok":true}` + "\n" + `{"type":"hit","n":6}` + "\n"
	raw, c, id := collectEnv(t, "printf '%s' '"+strings.ReplaceAll(stream, "'", `'\''`)+"'")
	runs := []string{"hit", "aoi:hit"}
	var got []centry
	var add []json.RawMessage
	for {
		code, b := raw("read", abi.ProcessReadRequest{ID: id, TimeoutMs: 5000, Runs: runs, Collect: true, Add: add})
		if code != abi.OK {
			t.Fatalf("read: %v %s", code, b)
		}
		add = nil
		if len(b) == 0 {
			break
		}
		es := decodeCollect(t, b)
		for i, e := range es {
			if !e.collected && i != len(es)-1 {
				t.Fatalf("an entry the plugin reads is not the response's last: %+v", es)
			}
		}
		// the plugin files the error event itself, as the adapter does
		if last := es[len(es)-1]; last.typ == "aoi:error" {
			add = []json.RawMessage{json.RawMessage(last.b)}
		}
		got = append(got, es...)
	}
	want := []centry{
		{b: "", nLines: 1},
		{b: `{"type":"aoi:meta","command":"c"}`, typ: "aoi:meta", nLines: 1},
		{nLines: 2, collected: true},
		{b: `{"type":"aoi:progress","progress":1}`, typ: "aoi:progress", nLines: 1},
		{nLines: 1, collected: true},
		{b: `{"type":"aoi:error","scope":"item"}`, typ: "aoi:error", nLines: 1},
		{nLines: 2, collected: true},
		{b: `{"type":"aoi:summary","ok":true}`, typ: "aoi:summary", nLines: 1},
		{b: `{"type":"hit","n":6}`, typ: "hit", nLines: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries:\n%+v\nwant\n%+v", got, want)
	}
	code, resp := raw("wait", abi.ProcessWaitRequest{ID: id, KeepCollected: true})
	var w abi.ProcessWaitResponse
	if code != abi.OK || json.Unmarshal(resp, &w) != nil || w.Collected == nil {
		t.Fatalf("wait: %v %s", code, resp)
	}
	events := `{"type":"hit","n":1},{"type":"aoi:hit","n":2,"s":"a\"b"},{"type":"hit","n":3},{"type":"aoi:error","scope":"item"},{"type":"hit","n":4},{"type":"hit","n":5}`
	if w.Collected.Kept < 0 || int(w.Collected.Kept) >= len(c.Kept) || w.Collected.Events != 6 || w.Collected.Bytes != len(events) {
		t.Fatalf("collected %+v (%d kept)", w.Collected, len(c.Kept))
	}
	k := c.Kept[w.Collected.Kept]
	if string(k.Bytes) != events || k.Items != 6 || !k.UTF8 {
		t.Fatalf("kept %q (%d items)", k.Bytes, k.Items)
	}
	if esc := core.AppendEscaped(nil, k.Bytes, 1); string(k.Escaped) != string(esc) {
		t.Fatalf("escaped ahead %q, not %q", k.Escaped, esc)
	}
}

// TestProcessReadCollectGate: nothing is collected when the first line
// is not the meta event, nor after a line whose type the host cannot
// read plainly (it might be the summary); a wait without keep_collected
// answers collected null; one with nothing collected, kept -1.
func TestProcessReadCollectGate(t *testing.T) {
	for _, tt := range []struct {
		name, stream string
		want         []centry
	}{
		{"no meta first", `{"type":"hit","n":1}` + "\n" + `{"type":"meta"}` + "\n" + `{"type":"hit","n":2}` + "\n",
			[]centry{{b: `{"type":"hit","n":1}`, typ: "hit", nLines: 1}, {b: `{"type":"meta"}`, typ: "meta", nLines: 1}, {b: `{"type":"hit","n":2}`, typ: "hit", nLines: 1}}},
		{"a type with escapes", `{"type":"meta"}` + "\n" + `{"type":"summ\u0061ry","ok":true}` + "\n" + `{"type":"hit"}` + "\n",
			[]centry{{b: `{"type":"meta"}`, typ: "meta", nLines: 1}, {b: `{"type":"summ\u0061ry","ok":true}`, nLines: 1}, {b: `{"type":"hit"}`, typ: "hit", nLines: 1}}},
		{"prose first", "prose\n" + `{"type":"aoi:meta"}` + "\n" + `{"type":"hit"}` + "\n",
			[]centry{{b: "prose", nLines: 1}, {b: `{"type":"aoi:meta"}`, typ: "aoi:meta", nLines: 1}, {b: `{"type":"hit"}`, typ: "hit", nLines: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, _, id := collectEnv(t, "printf '%s' '"+tt.stream+"'")
			got := readCollectAll(t, raw, id)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("entries:\n%+v\nwant\n%+v", got, tt.want)
			}
			code, resp := raw("wait", abi.ProcessWaitRequest{ID: id, KeepCollected: true})
			var w abi.ProcessWaitResponse
			if code != abi.OK || json.Unmarshal(resp, &w) != nil || w.Collected == nil || w.Collected.Kept != -1 || w.Collected.Events != 0 {
				t.Fatalf("wait: %v %s", code, resp)
			}
		})
	}
	raw, _, id := collectEnv(t, "echo '{}'")
	code, resp := raw("wait", abi.ProcessWaitRequest{ID: id})
	if code != abi.OK || !strings.Contains(string(resp), `"collected":null`) {
		t.Fatalf("wait without keep_collected: %v %s", code, resp)
	}
}

// TestProcessReadCollectRefused: hostile and malformed requests get a
// clear error, and a refused add changes nothing.
func TestProcessReadCollectRefused(t *testing.T) {
	raw, c, id := collectEnv(t, `printf '{"type":"meta"}\n{"type":"hit"}\n'`)
	for _, tt := range []struct {
		name string
		req  string
		code abi.Code
		msg  string
	}{
		{"collect without runs", fmt.Sprintf(`{"id":%d,"collect":true}`, id), abi.Invalid, "collect and add are for a read with runs"},
		{"add without collect", fmt.Sprintf(`{"id":%d,"runs":["hit"],"add":[{"type":"x"}]}`, id), abi.Invalid, "add is for a read with collect"},
		{"add not an object", fmt.Sprintf(`{"id":%d,"runs":["hit"],"collect":true,"add":[{"type":"x"},[1]]}`, id), abi.Invalid, "add[1] is not one JSON object"},
		{"add a string", fmt.Sprintf(`{"id":%d,"runs":["hit"],"collect":true,"add":["{}"]}`, id), abi.Invalid, "add[0] is not one JSON object"},
		{"add invalid UTF-8", fmt.Sprintf(`{"id":%d,"runs":["hit"],"collect":true,"add":[{"t":"%s"}]}`, id, "\xff"), abi.Invalid, "add[0] is not one JSON object"},
		{"add not an array", fmt.Sprintf(`{"id":%d,"runs":["hit"],"collect":true,"add":{"type":"x"}}`, id), abi.Invalid, "bad request"},
		{"another program", fmt.Sprintf(`{"id":%d,"runs":["hit"],"collect":true}`, id+7), abi.NotFound, "no started program"},
	} {
		code, b := raw("read", []byte(tt.req))
		if code != tt.code || !strings.Contains(string(b), tt.msg) {
			t.Errorf("%s: %v %s, want %v %q", tt.name, code, b, tt.code, tt.msg)
		}
	}
	// the refused adds added nothing: the collection is the stream's hit
	got := readCollectAll(t, raw, id)
	if want := []centry{{b: `{"type":"meta"}`, typ: "meta", nLines: 1}, {nLines: 1, collected: true}}; !slices.Equal(got, want) {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	code, resp := raw("wait", abi.ProcessWaitRequest{ID: id, KeepCollected: true})
	var w abi.ProcessWaitResponse
	if code != abi.OK || json.Unmarshal(resp, &w) != nil || w.Collected == nil || w.Collected.Events != 1 ||
		string(c.Kept[w.Collected.Kept].Bytes) != `{"type":"hit"}` {
		t.Fatalf("wait: %v %s", code, resp)
	}
}

// TestWithCollected: the count of the runs a read collected before its
// answer goes into the answer's first entry when that is collected, else
// comes as an entry of its own before the others.
func TestWithCollected(t *testing.T) {
	rest := []byte(`{"type":"meta"}` + "\n" + `{"type":"hit"}` + "\n" + `{"type":"x"}` + "\n")
	col := &collection{}
	out, used := indexLines(rest, false, 1<<20, []string{"hit"}, col, nil)
	if es := decodeCollect(t, withCollected(out, 3)); !slices.Equal(es, []centry{{nLines: 3, collected: true}, {b: `{"type":"meta"}`, typ: "meta", nLines: 1}}) {
		t.Fatalf("%+v", es)
	}
	out, _ = indexLines(rest[used:], false, 1<<20, []string{"hit"}, col, nil)
	if es := decodeCollect(t, withCollected(out, 3)); !slices.Equal(es, []centry{{nLines: 4, collected: true}, {b: `{"type":"x"}`, typ: "x", nLines: 1}}) {
		t.Fatalf("%+v", es)
	}
	if es := decodeCollect(t, withCollected(nil, 2)); !slices.Equal(es, []centry{{nLines: 2, collected: true}}) {
		t.Fatalf("%+v", es)
	}
}

// TestCollectionReleased: when the call ends (Reset) the kept
// collection's buffers go back for the next collection, and the call
// holds nothing of it.
func TestCollectionReleased(t *testing.T) {
	raw, c, id := collectEnv(t, `printf '{"type":"meta"}\n{"type":"hit"}\n{"type":"summary","ok":true}\n'`)
	for {
		code, b := raw("read", abi.ProcessReadRequest{ID: id, TimeoutMs: 5000, Runs: []string{"hit"}, Collect: true})
		if code != abi.OK {
			t.Fatalf("read: %v %s", code, b)
		}
		if len(b) == 0 {
			break
		}
	}
	if code, resp := raw("wait", abi.ProcessWaitRequest{ID: id, KeepCollected: true}); code != abi.OK || len(c.Kept) != 1 || c.Kept[0].Release == nil {
		t.Fatalf("wait: %v %s, %d kept", code, resp, len(c.Kept))
	}
	released := false
	rel := c.Kept[0].Release
	c.Kept[0].Release = func() { released = true; rel() }
	c.Reset()
	if !released || len(c.Kept) != 0 {
		t.Fatalf("Reset: released %v, %d kept", released, len(c.Kept))
	}
}
