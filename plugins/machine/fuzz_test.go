package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// FuzzCollector: whatever a command writes on stdout, in whatever pieces,
// the collector does not panic, and what it keeps makes a result whose
// structuredContent is one JSON object with the events, as the
// outputSchema says: every event a JSON object with a type, the summary an
// object or null.
func FuzzCollector(f *testing.F) {
	for _, s := range []string{
		"{\"type\":\"aoi:meta\",\"command\":\"c\"}\n{\"type\":\"hit\"}\n{\"type\":\"aoi:summary\",\"ok\":true,\"next_cursor\":\"x\"}\n",
		"{\"type\":\"meta\"}\r\n\n{\"type\":\"error\",\"scope\":\"process\",\"retryable\":true}\n{\"type\":\"summary\",\"ok\":false}",
		"prose\n", "{\"type\":\"aoi:meta\"}\n{\"type\":\"aoi:progress\",\"percent\":50}\n{", "\xff\xfe\n", "{}\n[]\n\"x\"\n",
		"{\"type\":\"aoi:meta\"}\n{\"type\":\"aoi:summary\",\"ok\":true}\n{\"type\":\"hit\"}\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		n := int(piece)%64 + 1
		c := &collector{command: "c", types: []string{"meta", "hit", "summary", "error"}, progress: func(float64, float64, string) {}}
		for s := stream; len(s) > 0; {
			k := min(n, len(s))
			if !c.write(s[:k]) {
				break
			}
			s = s[k:]
		}
		c.end()
		var errEv []byte
		if c.fatal != nil {
			errEv = c.fatal
		}
		r := result(c, errEv, c.violation != "" || !c.ok)
		b := r.Structured.(json.RawMessage)
		var sc struct {
			Events  []map[string]any `json:"events"`
			Summary *map[string]any  `json:"summary"`
			Error   map[string]any   `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&sc); err != nil || dec.More() {
			t.Fatalf("structuredContent does not read: %v\n%s", err, b)
		}
		if len(sc.Events) != c.n {
			t.Fatalf("%d events, kept %d", len(sc.Events), c.n)
		}
		for _, e := range sc.Events {
			if _, ok := e["type"].(string); !ok {
				t.Fatalf("an event without a string type: %v", e)
			}
		}
		if c.summary != nil && (sc.Summary == nil || *sc.Summary == nil) {
			t.Fatalf("summary lost: %s", b)
		}
	})
}

// linesResponse is what the host answers a read with lines for the whole
// of stream (spec/abi/v1/process.md §3.6), made here as the host makes it.
func linesResponse(stream []byte) []byte {
	var lines [][]byte
	for len(stream) > 0 {
		i := bytes.IndexByte(stream, '\n')
		if i < 0 {
			lines = append(lines, stream)
			break
		}
		lines = append(lines, stream[:i])
		stream = stream[i+1:]
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(lines)))
	for _, l := range lines {
		ts, tl := uint32(abi.LineUnchecked), uint32(abi.LineUnchecked)
		if typ, slow, ok := jsonx.ScanObject(l); ok && !slow && typ != nil {
			ts, tl = uint32(cap(l)-cap(typ)), uint32(len(typ))
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(l)))
		out = binary.LittleEndian.AppendUint32(out, ts)
		out = binary.LittleEndian.AppendUint32(out, tl)
	}
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}

// runsResponse is what the host answers a read with runs for the whole of
// stream, made here as the host makes it: consecutive lines that are each
// one object of a type in runs, read plainly and ending with their brace,
// are one entry, joined with commas.
func runsResponse(stream []byte, runs []string) []byte {
	var lines [][]byte
	for len(stream) > 0 {
		i := bytes.IndexByte(stream, '\n')
		if i < 0 {
			lines = append(lines, stream)
			break
		}
		lines = append(lines, stream[:i])
		stream = stream[i+1:]
	}
	type entry struct {
		b      []byte
		ts, tl uint32
		n      int
		run    bool
	}
	var es []entry
	for _, l := range lines {
		e := entry{b: l, ts: abi.LineUnchecked, tl: abi.LineUnchecked, n: 1}
		if typ, slow, ok := jsonx.ScanObject(l); ok && !slow && typ != nil {
			e.ts, e.tl = uint32(cap(l)-cap(typ)), uint32(len(typ))
			e.run = l[len(l)-1] == '}' && slices.Contains(runs, string(typ))
		}
		if last := len(es) - 1; e.run && last >= 0 && es[last].run {
			es[last].b = append(append(es[last].b, ','), l...)
			es[last].n++
			continue
		}
		e.b = slices.Clone(e.b)
		es = append(es, e)
	}
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(es)))
	for _, e := range es {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(e.b)))
		out = binary.LittleEndian.AppendUint32(out, e.ts)
		out = binary.LittleEndian.AppendUint32(out, e.tl)
		out = binary.LittleEndian.AppendUint32(out, uint32(e.n))
	}
	for _, e := range es {
		out = append(out, e.b...)
	}
	return out
}

// FuzzLinesAgree: a stream read by whole lines with the host's readings,
// and read with runs (the adapter's path), is collected exactly as the
// same stream read in raw pieces and checked by the guest: the same
// events, summary, errors and violation.
func FuzzLinesAgree(f *testing.F) {
	f.Add([]byte("{\"type\":\"aoi:meta\",\"command\":\"c\"}\n{\"type\":\"hit\"}\r\n\n{\"type\":\"h\\u0069t\"}\n{\"type\":\"aoi:summary\",\"ok\":true}\n"))
	f.Add([]byte("{\"type\":\"meta\"}\n{\"type\":\"error\",\"scope\":\"process\",\"retryable\":true}\n{\"type\":7}\n"))
	f.Add([]byte("{\"type\":\"meta\"}\nprose\n"))
	f.Add([]byte("{\"type\":\"meta\"}\n{\"type\":\"other\"}\n{\"type\":\"summary\",\"ok\":false}"))
	f.Add([]byte("{\"type\":\"hit\"}\n{\"type\":\"hit\"}\n{\"type\":\"aoi:meta\",\"command\":\"c\"}\n"))
	f.Add([]byte("{\"type\":\"aoi:meta\",\"command\":\"c\"}\n{\"type\":\"hit\",\"a\":[1]}\n{\"type\":\"aoi:hit\"} \n{\"type\":\"hit\"}\n\n{\"type\":\"hit\"}\n" +
		"{\"type\":\"error\",\"scope\":\"item\"}\n{\"type\":\"hit\"}\n{\"type\":\"summary\",\"ok\":true}\n{\"type\":\"hit\"}\n{\"type\":\"hit\"}\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		types := []string{"meta", "hit", "summary", "error"}
		a := &collector{command: "c", types: types}
		a.write(stream)
		a.end()
		b := &collector{command: "c", types: types}
		if len(stream) > 0 {
			b.writeLines(linesResponse(stream))
		}
		b.end()
		if a.violation != b.violation || !bytes.Equal(a.events, b.events) || !bytes.Equal(a.summary, b.summary) ||
			!bytes.Equal(a.fatal, b.fatal) || a.ok != b.ok || a.n != b.n || a.meta != b.meta {
			t.Fatalf("pieces: %q %q %q\nlines:  %q %q %q", a.violation, a.events, a.summary, b.violation, b.events, b.summary)
		}
		r := &collector{command: "c", types: types}
		if len(stream) > 0 {
			r.writeRuns(runsResponse(stream, runTypes(types)))
		}
		r.end()
		if a.violation != r.violation || !bytes.Equal(a.events, r.events) || !bytes.Equal(a.summary, r.summary) ||
			!bytes.Equal(a.fatal, r.fatal) || a.ok != r.ok || a.n != r.n || a.meta != r.meta || a.line != r.line {
			t.Fatalf("pieces: %q %q %q %d\nruns:   %q %q %q %d", a.violation, a.events, a.summary, a.line, r.violation, r.events, r.summary, r.line)
		}
		k, events := collectRun(stream, types)
		if a.violation != k.violation || !bytes.Equal(a.events, events) || !bytes.Equal(a.summary, k.summary) ||
			!bytes.Equal(a.fatal, k.fatal) || a.ok != k.ok || a.n != k.n || a.meta != k.meta || a.line != k.line {
			t.Fatalf("pieces:  %q %q %q %d\ncollect: %q %q %q %d", a.violation, a.events, a.summary, a.line, k.violation, events, k.summary, k.line)
		}
	})
}

// collectRun reads stream as the adapter does with reads with collect
// (spec/abi/v1/process.md §3.7), the host's side made here as the host
// makes it: the runs of domain types that come once the first line that
// is not blank was the meta event, until the summary or a line whose type
// the host cannot read plainly, are kept in the collection and come as
// their count; a response ends after an entry the guest reads; what the
// guest files goes into the collection before the next lines. It returns
// the collector and the events as the result has them (the collection,
// then what the guest filed after its last read).
func collectRun(stream []byte, types []string) (*collector, []byte) {
	runs := runTypes(types)
	c := &collector{command: "c", types: types}
	var coll []byte
	collAdd := func(b []byte) {
		if len(b) == 0 {
			return
		}
		if len(coll) > 0 {
			coll = append(coll, ',')
		}
		coll = append(coll, b...)
	}
	const before, open, shut = 0, 1, 2
	gate, counted := before, 0
	respond := func(line []byte, ts, tl uint32) bool {
		out := binary.LittleEndian.AppendUint32(nil, 0)
		n := 0
		if counted > 0 {
			out = binary.LittleEndian.AppendUint32(out, 0)
			out = binary.LittleEndian.AppendUint32(out, abi.LineCollected)
			out = binary.LittleEndian.AppendUint32(out, 0)
			out = binary.LittleEndian.AppendUint32(out, uint32(counted))
			n++
		}
		if line != nil {
			out = binary.LittleEndian.AppendUint32(out, uint32(len(line)))
			out = binary.LittleEndian.AppendUint32(out, ts)
			out = binary.LittleEndian.AppendUint32(out, tl)
			out = binary.LittleEndian.AppendUint32(out, 1)
			out = append(out, line...)
			n++
		}
		binary.LittleEndian.PutUint32(out, uint32(n))
		counted = 0
		ok := c.writeEntries(out)
		if ok {
			collAdd(c.events) // sent with the next read
			c.events = c.events[:0]
		}
		return ok
	}
	var lines [][]byte
	if len(stream) > 0 {
		lines = bytes.Split(stream, []byte("\n"))
		if stream[len(stream)-1] == '\n' {
			lines = lines[:len(lines)-1]
		}
	}
	for _, l := range lines {
		typ, slow, ok := jsonx.ScanObject(l)
		plain := ok && !slow && typ != nil
		blank := len(bytes.TrimSpace(l)) == 0
		switch {
		case gate == before && !blank:
			gate = shut
			if plain && (string(typ) == "meta" || string(typ) == "aoi:meta") {
				gate = open
			}
		case gate == open && !blank && (!plain || string(typ) == "summary" || string(typ) == "aoi:summary"):
			gate = shut
		}
		run := plain && l[len(l)-1] == '}' && slices.Contains(runs, string(typ))
		if run && gate == open {
			collAdd(l)
			counted++
			continue
		}
		ts, tl := uint32(abi.LineUnchecked), uint32(abi.LineUnchecked)
		if plain {
			ts, tl = uint32(cap(l)-cap(typ)), uint32(len(typ))
		}
		if !respond(l, ts, tl) {
			return c, joinEvents(coll, c.events)
		}
	}
	if counted > 0 {
		respond(nil, 0, 0)
	}
	c.end()
	return c, joinEvents(coll, c.events)
}

// joinEvents is the inside of the result's events array: the collection,
// then the guest's own.
func joinEvents(coll, own []byte) []byte {
	switch {
	case len(coll) == 0:
		return own
	case len(own) == 0:
		return coll
	}
	return append(append(append([]byte(nil), coll...), ','), own...)
}
