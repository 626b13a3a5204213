package main

import (
	"bytes"
	"encoding/json"
	"testing"
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
