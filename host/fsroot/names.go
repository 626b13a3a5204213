package fsroot

import (
	"container/heap"
	"context"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// readDirSorted reads directory dir in batches and returns its keep
// alphabetically first entries, sorted, and the number of entries. Memory
// stays O(keep) however large the directory is.
func readDirSorted(ctx context.Context, dir *os.Root, keep int) ([]fs.DirEntry, int, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	h := &maxHeap{}
	total := 0
	for {
		batch, err := f.ReadDir(1024)
		for _, e := range batch {
			total++
			switch {
			case keep <= 0:
			case h.Len() < keep:
				heap.Push(h, e)
			case e.Name() < (*h)[0].Name():
				(*h)[0] = e
				heap.Fix(h, 0)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
	}
	out := []fs.DirEntry(*h)
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, total, nil
}

// maxHeap keeps the greatest name on top, to be displaced.
type maxHeap []fs.DirEntry

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i].Name() > h[j].Name() }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(fs.DirEntry)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
