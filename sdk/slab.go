package sdk

// resultSlab is where the result constructors take their Results from: a
// chunk of them allocated at once, each handed out once and never reused
// (a handler may keep a result; the collector frees a chunk once none of
// its results is reachable). In a wasm guest an allocation of a Result
// costs ~250 ns (mallocgc and the type's heap bits), a chunk of 32 little
// more than one (BENCHMARKS.md, "In-process call path").
var resultSlab struct {
	chunk *[resultChunk]Result
	next  int
}

const resultChunk = 32

func newResult() *Result {
	lockSlab()
	if resultSlab.chunk == nil || resultSlab.next == resultChunk {
		c := new([resultChunk]Result)
		resultSlab.chunk, resultSlab.next = c, 0
	}
	r := &resultSlab.chunk[resultSlab.next]
	resultSlab.next++
	unlockSlab()
	return r
}
