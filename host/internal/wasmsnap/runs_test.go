package wasmsnap

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRuns: the pages that differ from the base, as runs, merged down to
// the bound by the smallest gaps (pages of 4 bytes).
func TestRuns(t *testing.T) {
	const page = 4
	// mem returns n bytes of zeros with 1 at each offset in set.
	mem := func(n int, set ...int) []byte {
		b := make([]byte, n)
		for _, k := range set {
			b[k] = 1
		}
		return b
	}
	base := bytes.Repeat([]byte{7}, 16)
	with := func(set ...int) []byte { // base with 9 at each offset in set
		b := bytes.Clone(base)
		for _, k := range set {
			b[k] = 9
		}
		return b
	}
	// Changed pages 0, 2, 5 and 8: gaps of 4, 8 and 8 bytes.
	spread := mem(36, 1, 9, 21, 33)
	for _, tc := range []struct {
		name      string
		base, cur []byte
		most      int
		want      []PageRun
	}{
		{"identical", base, bytes.Clone(base), 16, nil},
		{"no base, all zeros", nil, mem(16), 16, nil},
		{"empty", nil, nil, 16, nil},
		{"change at the start", base, with(0), 16, []PageRun{{0, 4}}},
		{"change in the middle", base, with(9), 16, []PageRun{{8, 4}}},
		{"change at the end", base, with(15), 16, []PageRun{{12, 4}}},
		{"whole page", base, with(4, 5, 6, 7), 16, []PageRun{{4, 4}}},
		{"neighbours are one run", base, with(3, 4, 12), 16, []PageRun{{0, 8}, {12, 4}}},
		{"every page", base, with(0, 4, 8, 12), 16, []PageRun{{0, 16}}},
		{"past the base's end: zeros", base[:6], append(bytes.Clone(base[:6]), mem(10)...), 16, nil},
		{"past the base's end: a change in its last page", base[:6], append(bytes.Clone(base[:6]), mem(10, 1)...), 16, []PageRun{{4, 4}}},
		{"past the base's end: a change within it", base[:6], append(with(5)[:6], mem(10)...), 16, []PageRun{{4, 4}}},
		{"past the base's end: a change after it", base[:6], append(bytes.Clone(base[:6]), mem(10, 7)...), 16, []PageRun{{12, 4}}},
		{"past the base's end: no base", nil, mem(16, 13), 16, []PageRun{{12, 4}}},
		{"base longer than memory", append(bytes.Clone(base), 1, 2, 3), with(14), 16, []PageRun{{12, 4}}},
		{"short tail page", nil, mem(10, 9), 16, []PageRun{{8, 2}}},
		{"short tail page, unchanged", base[:10], bytes.Clone(base[:10]), 16, nil},
		{"within the bound", nil, spread, 4, []PageRun{{0, 4}, {8, 4}, {20, 4}, {32, 4}}},
		{"merged to 3: the smallest gap", nil, spread, 3, []PageRun{{0, 12}, {20, 4}, {32, 4}}},
		{"merged to 2: the first of equal gaps", nil, spread, 2, []PageRun{{0, 24}, {32, 4}}},
		{"merged to 1", nil, spread, 1, []PageRun{{0, 36}}},
		{"a bound under 1 is 1", nil, spread, 0, []PageRun{{0, 36}}},
		{"merged, the later gap smaller", nil, mem(36, 1, 17, 25, 33), 3, []PageRun{{0, 4}, {16, 12}, {32, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, cur := bytes.Clone(tc.base), bytes.Clone(tc.cur)
			got := Runs(base, cur, page, tc.most)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("runs %v, want %v", got, tc.want)
			}
			if !bytes.Equal(base, tc.base) || !bytes.Equal(cur, tc.cur) {
				t.Fatal("input modified")
			}
		})
	}
}

// TestRunsCover: on random memories, the runs are in order, apart, within
// the memory, at most the bound, and hold every page that differs (and,
// unbounded, only those).
func TestRunsCover(t *testing.T) {
	const page = 8
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		cur := make([]byte, rng.IntN(40*page))
		base := make([]byte, rng.IntN(40*page))
		for k := range base {
			base[k] = byte(rng.IntN(2))
		}
		copy(cur, base)
		for range rng.IntN(12) {
			if len(cur) > 0 {
				cur[rng.IntN(len(cur))] ^= 1
			}
		}
		for _, most := range []int{1, 3, MaxRuns, 1 << 30} {
			runs := Runs(base, cur, page, most)
			if len(runs) > most {
				t.Fatalf("%d runs, at most %d", len(runs), most)
			}
			in := make([]bool, (len(cur)+page-1)/page)
			end := uint64(0)
			for k, r := range runs {
				if r.N == 0 || r.Off%page != 0 || (k > 0 && r.Off <= end) || r.Off+r.N > uint64(len(cur)) {
					t.Fatalf("runs %v of %d bytes", runs, len(cur))
				}
				end = r.Off + r.N
				for p := r.Off / page; p*page < end; p++ {
					in[p] = true
				}
			}
			for p := range in {
				lo, hi := p*page, min((p+1)*page, len(cur))
				was := make([]byte, hi-lo)
				if lo < len(base) {
					copy(was, base[lo:min(hi, len(base))])
				}
				differs := !bytes.Equal(cur[lo:hi], was)
				if differs && !in[p] || most == 1<<30 && in[p] && !differs {
					t.Fatalf("page %d (differs %v) in the runs %v: %v", p, differs, runs, in[p])
				}
			}
		}
	}
}
