package callwatch

import (
	"context"
	"sync"
	"testing"
	"time"
)

// stops records the generations a watch stopped.
type stops struct {
	mu   sync.Mutex
	gens []uint32
}

func (s *stops) stop(gen uint32) { s.mu.Lock(); s.gens = append(s.gens, gen); s.mu.Unlock() }

func (s *stops) get() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.gens...)
}

// waitStops waits up to a second for n stops.
func (s *stops) waitStops(t *testing.T, n int) []uint32 {
	t.Helper()
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if g := s.get(); len(g) >= n {
			return g
		}
	}
	return s.get()
}

func TestWatch(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, w *Watch, s *stops)
	}{
		{"a deadline stops the call with its generation, once", func(t *testing.T, w *Watch, s *stops) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			start := time.Now()
			w.Start(ctx, 7)
			g := s.waitStops(t, 1)
			if len(g) != 1 || g[0] != 7 {
				t.Fatalf("stops %v, want [7]", g)
			}
			if d := time.Since(start); d < 30*time.Millisecond {
				t.Errorf("stopped after %v, before the deadline", d)
			}
			time.Sleep(3 * PollCancel)
			if !w.End() {
				t.Error("End: not fired")
			}
			if g := s.get(); len(g) != 1 {
				t.Errorf("stops %v after the first: want one", g)
			}
		}},
		{"a cancellation is seen within PollCancel", func(t *testing.T, w *Watch, s *stops) {
			ctx, cancel := context.WithCancel(context.Background())
			w.Start(ctx, 1)
			time.Sleep(5 * time.Millisecond)
			cancel()
			at := time.Now()
			if g := s.waitStops(t, 1); len(g) != 1 || g[0] != 1 {
				t.Fatalf("stops %v, want [1]", g)
			}
			if d := time.Since(at); d > PollCancel+200*time.Millisecond {
				t.Errorf("seen %v after the cancellation", d)
			}
			if !w.End() {
				t.Error("End: not fired")
			}
		}},
		{"an ended context stops the call at once", func(t *testing.T, w *Watch, s *stops) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			w.Start(ctx, 3)
			if g := s.get(); len(g) != 1 || g[0] != 3 {
				t.Fatalf("stops %v right after Start, want [3]", g)
			}
			if !w.End() {
				t.Error("End: not fired")
			}
		}},
		{"a context that never ends arms nothing", func(t *testing.T, w *Watch, s *stops) {
			w.Start(context.Background(), 1)
			time.Sleep(3 * PollCancel)
			if w.End() || len(s.get()) != 0 || !w.armedAt().IsZero() {
				t.Errorf("stops %v, armed at %v", s.get(), w.armedAt())
			}
		}},
		{"a call that ends in time is never stopped, nor is the next", func(t *testing.T, w *Watch, s *stops) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			w.Start(ctx, 1)
			if w.End() {
				t.Error("End: fired")
			}
			cancel() // ended after the call: the timer finds no call
			w.Start(context.Background(), 2)
			time.Sleep(3 * PollCancel)
			if w.End() || len(s.get()) != 0 {
				t.Errorf("stops %v", s.get())
			}
		}},
		{"a sooner deadline re-arms the timer", func(t *testing.T, w *Watch, s *stops) {
			long, c1 := context.WithTimeout(context.Background(), time.Hour)
			defer c1()
			w.Start(long, 1)
			w.End()
			short, c2 := context.WithTimeout(context.Background(), time.Millisecond)
			defer c2()
			w.Start(short, 2)
			if g := s.waitStops(t, 1); len(g) != 1 || g[0] != 2 {
				t.Fatalf("stops %v, want [2]", g)
			}
			w.End()
		}},
		{"calls in quick succession share one arming", func(t *testing.T, w *Watch, s *stops) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			w.Start(ctx, 1)
			w.End()
			at := w.armedAt()
			for i := range 100 {
				w.Start(ctx, uint32(i))
				w.End()
			}
			// the timer (10 ms) may have fired and re-armed meanwhile
			// on a slow machine; a hundred calls' armings would not match
			if now := w.armedAt(); now != at && now.Sub(at) < PollCancel {
				t.Errorf("re-armed: %v, then %v", at, now)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &stops{}
			w := New(s.stop)
			defer w.Close()
			tc.run(t, w, s)
		})
	}
}

func TestCloseIdempotent(t *testing.T) {
	s := &stops{}
	w := New(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	w.Start(ctx, 1)
	w.Close()
	w.Close()
	time.Sleep(40 * time.Millisecond)
	if g := s.get(); len(g) != 0 {
		t.Errorf("a closed watch stopped %v", g)
	}
}

// A call allocates nothing.
func TestStartEndAllocs(t *testing.T) {
	w := New(func(uint32) {})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if n := testing.AllocsPerRun(100, func() { w.Start(ctx, 1); w.End() }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

// armedAt is when the timer is set to fire; zero when it is not.
func (w *Watch) armedAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.armed {
		return time.Time{}
	}
	return w.fireAt
}
