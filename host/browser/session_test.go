package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
)

func newTestSession() *Session {
	return &Session{wake: make(chan struct{}, 1), closed: make(chan struct{})}
}

// TestSessionEvents: the buffer keeps the newest MaxSessionEvents and
// counts the rest; Events filters, bounds by count and bytes, drops an
// event that can never fit, and waits for the first one.
func TestSessionEvents(t *testing.T) {
	s := newTestSession()
	for i := range 2000 {
		m := "Page.a"
		if i%2 == 1 {
			m = "Runtime.b"
		}
		s.event(m, jsonv2.Value(`{"i":1}`))
	}
	if len(s.events) != MaxSessionEvents {
		t.Fatalf("%d buffered", len(s.events))
	}
	ctx := context.Background()
	onlyPage := func(m string) bool { return strings.HasPrefix(m, "Page.") }
	evs, dropped, more, err := s.Events(ctx, onlyPage, 10, 1<<20, 0)
	if err != nil || len(evs) != 10 || dropped != 2000-MaxSessionEvents || !more {
		t.Errorf("first read: %d events, %d dropped, more %v, %v", len(evs), dropped, more, err)
	}
	for _, e := range evs {
		if e.Method != "Page.a" {
			t.Errorf("filtered read got %s", e.Method)
		}
	}
	// Byte budget: 3 events of 6+7+64 bytes fit in 240.
	evs, dropped, _, _ = s.Events(ctx, onlyPage, 100, 3*(6+7+EventOverhead)+1, 0)
	if len(evs) != 3 || dropped != 0 {
		t.Errorf("byte-bounded read: %d events, %d dropped", len(evs), dropped)
	}
	// What did not match stays.
	evs, _, _, _ = s.Events(ctx, nil, MaxSessionEvents, 1<<30, 0)
	if len(evs) != MaxSessionEvents-13 {
		t.Errorf("the rest: %d events, want %d", len(evs), MaxSessionEvents-13)
	}
	// An event that alone is over the budget is dropped, not stuck.
	s.event("Page.big", jsonv2.Value(`"`+strings.Repeat("x", 1000)+`"`))
	s.event("Page.small", jsonv2.Value(`1`))
	evs, dropped, more, _ = s.Events(ctx, nil, 10, 200, 0)
	if len(evs) != 1 || evs[0].Method != "Page.small" || dropped != 1 || more {
		t.Errorf("oversized: %v, %d dropped, more %v", evs, dropped, more)
	}
	// Waiting: nothing comes within 50 ms; then one arrives during a wait.
	began := time.Now()
	if evs, _, _, _ = s.Events(ctx, nil, 10, 1<<20, 50*time.Millisecond); len(evs) != 0 || time.Since(began) < 50*time.Millisecond {
		t.Errorf("empty wait: %v after %v", evs, time.Since(began))
	}
	go func() { time.Sleep(20 * time.Millisecond); s.event("Page.late", nil) }()
	if evs, _, _, _ = s.Events(ctx, nil, 10, 1<<20, 5*time.Second); len(evs) != 1 || evs[0].Method != "Page.late" {
		t.Errorf("wait: %v", evs)
	}
	// A session over its byte limit drops the oldest.
	big := jsonv2.Value(`"` + strings.Repeat("y", 1<<20) + `"`)
	for range 10 {
		s.event("Page.mb", big)
	}
	if s.bytes > MaxSessionEventBytes {
		t.Errorf("%d bytes buffered, over %d", s.bytes, MaxSessionEventBytes)
	}
}
