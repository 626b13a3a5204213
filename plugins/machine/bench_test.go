package main

import (
	"encoding/json"
	"strconv"
	"testing"
)

func stream(n int) []byte {
	b := []byte(`{"type":"aoi:meta","command":"many"}` + "\n")
	for i := 1; i <= n; i++ {
		b = strconv.AppendInt(append(b, `{"type":"hit","rank":`...), int64(i), 10)
		b = append(b, `,"id":"doc_x","title":"A document about agent-operable tools"}`+"\n"...)
	}
	return append(b, `{"type":"aoi:summary","ok":true,"count":10000,"truncated":false}`+"\n"...)
}

func BenchmarkCollect10000(b *testing.B) {
	s := stream(10000)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		c := &collector{command: "many"}
		for p := s; len(p) > 0; {
			k := min(32<<10, len(p))
			c.write(p[:k])
			p = p[k:]
		}
		c.end()
		if c.n != 10000 {
			b.Fatal(c.n)
		}
	}
}

// BenchmarkResult10000 is the structuredContent of a large stream (its
// text block is escaped by the host: aiod:core.bytes_keep).
func BenchmarkResult10000(b *testing.B) {
	s := stream(10000)
	c := &collector{command: "many"}
	c.write(s)
	c.end()
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		if r := structured(c, nil); !json.Valid(r) {
			b.Fatal("not JSON")
		}
	}
}

// BenchmarkCollectLines10000 is the collector on the host's lines (read
// with lines), the adapter's path: no byte of a domain event read.
func BenchmarkCollectLines10000(b *testing.B) {
	resp := linesResponse(stream(10000))
	b.SetBytes(int64(len(resp)))
	for i := 0; i < b.N; i++ {
		c := &collector{command: "many"}
		c.writeLines(resp)
		c.end()
		if c.n != 10000 || c.violation != "" {
			b.Fatal(c.n, c.violation)
		}
	}
}

// BenchmarkCollectRuns10000 is the collector on the host's runs (read
// with runs), the adapter's path for a command whose schema names its
// types: the hits come as one piece per read.
func BenchmarkCollectRuns10000(b *testing.B) {
	resp := runsResponse(stream(10000), runTypes([]string{"meta", "hit", "summary"}))
	b.SetBytes(int64(len(resp)))
	for i := 0; i < b.N; i++ {
		c := &collector{command: "many", types: []string{"meta", "hit", "summary"}}
		c.writeRuns(resp)
		c.end()
		if c.n != 10000 || c.violation != "" {
			b.Fatal(c.n, c.violation)
		}
	}
}
