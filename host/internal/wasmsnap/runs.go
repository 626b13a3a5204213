package wasmsnap

import "bytes"

// PageRun is a run of host pages of a linear memory: the bytes [Off,
// Off+N).
type PageRun struct{ Off, N uint64 }

// MaxRuns bounds the runs of a snapshot: an engine that restores by
// mapping makes each run a mapping of every instance started from it, and
// a process has at most vm.max_map_count (65,530 by default) of them. Runs
// merges the runs closest together (the unchanged pages of their gap then
// come from the snapshot too) until at most MaxRuns are left.
const MaxRuns = 16

// Runs returns the pages of cur (each page bytes long; a tail shorter than
// a page is a page of its own) whose bytes differ from base's at the same
// offsets, base read as zeros past its end, as runs in offset order, merged
// into at most most runs (at least one) by joining, each time, the two
// neighbours with the smallest gap between them (the first such pair on a
// tie). cur equal to base (or all zeros, with no base) has no runs.
func Runs(base, cur []byte, page, most int) []PageRun {
	ps := uint64(page)
	size := uint64(len(cur))
	var runs []PageRun
	var zero []byte // a page of zeros, once base ends before cur
	for off := uint64(0); off < size; off += ps {
		end := min(off+ps, size)
		p := cur[off:end]
		switch {
		case end <= uint64(len(base)):
			if bytes.Equal(p, base[off:end]) {
				continue
			}
		default:
			if zero == nil {
				zero = make([]byte, ps)
			}
			k := uint64(0) // the page's bytes within base
			if off < uint64(len(base)) {
				k = uint64(len(base)) - off
				if !bytes.Equal(p[:k], base[off:]) {
					break
				}
			}
			if bytes.Equal(p[k:], zero[:end-off-k]) {
				continue
			}
		}
		if n := len(runs); n > 0 && runs[n-1].Off+runs[n-1].N == off {
			runs[n-1].N += end - off
			continue
		}
		runs = append(runs, PageRun{off, end - off})
	}
	for len(runs) > max(most, 1) {
		best := 0 // the run followed by the smallest gap
		for k := 1; k < len(runs)-1; k++ {
			if gap(runs[k], runs[k+1]) < gap(runs[best], runs[best+1]) {
				best = k
			}
		}
		runs[best].N = runs[best+1].Off + runs[best+1].N - runs[best].Off
		runs = append(runs[:best+1], runs[best+2:]...)
	}
	return runs
}

// gap is the bytes between a and the run after it, b.
func gap(a, b PageRun) uint64 { return b.Off - (a.Off + a.N) }
