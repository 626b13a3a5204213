package process

import (
	"strconv"
	"testing"
)

// BenchmarkCollectStream is the host's side of a Machine Mode stream of
// 10,000 events read with collect, as the adapter reads one: each line
// checked, collected and escaped for the text block, in the pieces of
// about 32 KiB a pipe hands over.
func BenchmarkCollectStream(b *testing.B) {
	var stream []byte
	stream = append(stream, `{"type":"aoi:meta","command":"many"}`+"\n"...)
	for i := 1; i <= 10000; i++ {
		stream = strconv.AppendInt(append(stream, `{"type":"hit","rank":`...), int64(i), 10)
		stream = strconv.AppendInt(append(stream, `,"id":"doc_`...), int64(i), 10)
		stream = append(stream, `","title":"A document about agent-operable tools"}`+"\n"...)
	}
	stream = append(stream, `{"type":"aoi:summary","ok":true,"count":10000,"truncated":false}`+"\n"...)
	runs := []string{"hit", "aoi:hit"}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		ls := &lineState{}
		for off := 0; off < len(stream); {
			// the next piece, then every line in it, as readCollect
			// takes them (a response ends after a line the plugin reads)
			end := min(off+32<<10, len(stream))
			ls.take(append([]byte(nil), stream[off:end]...))
			off, ls.eof = end, end == len(stream)
			for len(ls.rest) > 0 {
				ls.col.grow(len(ls.rest))
				_, used := indexLines(ls.rest, ls.eof, 1<<20, runs, &ls.col, &ls.spans)
				if used == 0 {
					break
				}
				ls.rest = append(ls.rest[:0], ls.rest[used:]...)
			}
		}
		if ls.col.n != 10000 || len(ls.rest) != 0 {
			b.Fatalf("%d events collected, %d bytes left", ls.col.n, len(ls.rest))
		}
		ls.col.release()
	}
}
