package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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

// FuzzLinesAgree: a stream read by whole lines with the host's readings
// (the adapter's path) is collected exactly as the same stream read in
// raw pieces and checked by the guest: the same events, summary, errors
// and violation.
func FuzzLinesAgree(f *testing.F) {
	f.Add([]byte("{\"type\":\"aoi:meta\",\"command\":\"c\"}\n{\"type\":\"hit\"}\r\n\n{\"type\":\"h\\u0069t\"}\n{\"type\":\"aoi:summary\",\"ok\":true}\n"))
	f.Add([]byte("{\"type\":\"meta\"}\n{\"type\":\"error\",\"scope\":\"process\",\"retryable\":true}\n{\"type\":7}\n"))
	f.Add([]byte("{\"type\":\"meta\"}\nprose\n"))
	f.Add([]byte("{\"type\":\"meta\"}\n{\"type\":\"other\"}\n{\"type\":\"summary\",\"ok\":false}"))
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
	})
}
