package proc

import "testing"

// TestPartialMark: only a suffix that could begin the marker waits for
// the next read; ordinary output is handed on at once.
func TestPartialMark(t *testing.T) {
	mark := []byte("\x00tok:")
	for _, c := range []struct {
		p    string
		want int
	}{
		{"line1\n", 0},
		{"", 0},
		{"abc\x00", 1},
		{"abc\x00to", 3},
		{"abc\x00tok", 4},
		{"abc\x00tx", 0},
		{"\x00t\x00to", 3},
		{"\x00", 1},
	} {
		if got := partialMark([]byte(c.p), mark); got != c.want {
			t.Errorf("partialMark(%q) = %d, want %d", c.p, got, c.want)
		}
	}
}
