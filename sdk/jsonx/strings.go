package jsonx

import "unsafe"

// The decoder's strings (a tool's arguments) are copied into a chunk of
// bytes shared by many, each part handed out once and never written
// again, instead of an allocation each: in a wasm guest an allocation
// costs ~90 ns, a part of a chunk ~15. A string kept past its call keeps
// its whole chunk reachable (at most stringChunk bytes, against the 16 of
// the runtime's own tiny allocator), so only short strings share one.
const (
	stringChunk = 512
	stringMax   = 64
)

var stringSlab []byte // what is left of the current chunk

// makeString returns a copy of b.
func makeString(b []byte) string {
	n := len(b)
	if n == 0 {
		return ""
	}
	if n > stringMax {
		return string(b)
	}
	lockStrings()
	if len(stringSlab) < n {
		stringSlab = make([]byte, stringChunk)
	}
	s := stringSlab[:n:n]
	stringSlab = stringSlab[n:]
	unlockStrings()
	copy(s, b)
	return unsafe.String(unsafe.SliceData(s), n)
}
