package process

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
)

type notes struct {
	mu  sync.Mutex
	got []map[string]any
}

func (n *notes) notify(kind string, params any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if kind == "notifications/progress" {
		n.got = append(n.got, params.(map[string]any))
	}
}

func (n *notes) all() []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]map[string]any(nil), n.got...)
}

// TestOutputProgress: output becomes line messages, paced, bounded, with
// monotonic progress; the unfinished last line goes at the end; nothing
// is sent after finish or when progress was not asked for.
func TestOutputProgress(t *testing.T) {
	var n notes
	c := &hostfn.Call{Notify: n.notify}
	if p := startOutputProgress(c, false); p != nil || p.sink() != nil {
		t.Fatal("progress started although not asked for")
	}
	if p := startOutputProgress(&hostfn.Call{}, true); p != nil {
		t.Fatal("progress started without a notify function")
	}
	p := startOutputProgress(c, true)
	w := p.sink()
	w([]byte("one\ntw"))
	w([]byte("o\n"))
	time.Sleep(progressEvery + 100*time.Millisecond)
	// a burst within one tick: at most one notification for it, bounded
	big := strings.Repeat("x", 100) + "\n"
	for range 200 {
		w([]byte(big))
	}
	w([]byte("tail without newline"))
	p.finish()
	after := len(n.all())
	w([]byte("late\n"))
	time.Sleep(progressEvery + 50*time.Millisecond)
	got := n.all()
	if len(got) != after {
		t.Fatalf("notified after finish: %v", got[after:])
	}
	if len(got) < 2 || got[0]["message"] != "one\ntwo" || got[0]["progress"] != float64(2) {
		t.Fatalf("first notification: %v", got)
	}
	last := got[len(got)-1]
	if !strings.HasSuffix(last["message"].(string), "\ntail without newline") || last["progress"] != float64(203) {
		t.Fatalf("last notification: progress %v, message ends %q", last["progress"], tail(last["message"].(string)))
	}
	prev := 0.0
	for _, m := range got {
		msg := m["message"].(string)
		if len(msg) > progressMaxMessage {
			t.Errorf("message of %d bytes, over %d", len(msg), progressMaxMessage)
		}
		if strings.HasPrefix(msg, "x") && !strings.HasPrefix(msg, strings.Repeat("x", 100)) {
			t.Errorf("message cut inside a line: %q", msg[:20])
		}
		if pr := m["progress"].(float64); pr <= prev {
			t.Errorf("progress %v after %v", pr, prev)
		} else {
			prev = pr
		}
	}
}

func tail(s string) string { return s[max(0, len(s)-40):] }
