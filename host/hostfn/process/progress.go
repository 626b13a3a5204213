package process

import (
	"bytes"
	"sync"
	"time"

	"github.com/aiodhq/aiod/host/hostfn"
)

// Output as progress (spec/abi/v1/process.md, "progress"): a process
// request with progress set sends the program's output, line by line, as
// notifications/progress of the calling request while it runs. The
// protocol layer drops them when the client sent no progress token.

// Progress pacing and bounds.
const (
	// progressEvery is the least time between two notifications: at most
	// four a second, whatever the output rate.
	progressEvery = 250 * time.Millisecond
	// progressMaxMessage bounds one notification's message; when more
	// lines arrived since the last one, the latest lines are sent.
	progressMaxMessage = 4 << 10
)

// outputProgress turns output into progress notifications: complete lines
// collect (bounded) until the next tick, which sends them as one message;
// progress counts the lines seen so far (monotonic, as MCP requires).
type outputProgress struct {
	notify func(kind string, params any)

	mu      sync.Mutex
	lines   []byte // complete lines since the last notification (bounded)
	partial []byte // an unfinished last line (bounded)
	count   int    // complete lines seen
	sent    int    // count at the last notification

	stop chan struct{}
	done chan struct{}
}

// startOutputProgress starts the ticker; nil when progress was not asked
// for or the call cannot notify. Stop it with finish before the call
// returns.
func startOutputProgress(c *hostfn.Call, want bool) *outputProgress {
	if !want || c.Notify == nil {
		return nil
	}
	p := &outputProgress{notify: c.Notify, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// write takes output read from the program (proc OnOutput, see sink).
func (p *outputProgress) write(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.partial = appendBounded(p.partial, b)
			return
		}
		p.lines = appendBounded(appendBounded(p.lines, p.partial), b[:i+1])
		p.partial = p.partial[:0]
		p.count++
		b = b[i+1:]
	}
}

// appendBounded appends b to dst, keeping only the last
// progressMaxMessage bytes (cut at a line start when there is one).
func appendBounded(dst, b []byte) []byte {
	dst = append(dst, b...)
	if over := len(dst) - progressMaxMessage; over > 0 {
		cut := dst[over:]
		if i := bytes.IndexByte(cut, '\n'); i >= 0 && i < len(cut)-1 {
			cut = cut[i+1:]
		}
		dst = append(dst[:0], cut...)
	}
	return dst
}

// sink is the callback to hand to proc, nil when p is nil.
func (p *outputProgress) sink() func([]byte) {
	if p == nil {
		return nil
	}
	return p.write
}

func (p *outputProgress) loop() {
	defer close(p.done)
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.flush(false)
		}
	}
}

// flush sends the lines collected since the last notification; at the
// end (final) an unfinished last line goes too.
func (p *outputProgress) flush(final bool) {
	p.mu.Lock()
	if final && len(p.partial) > 0 {
		p.lines = appendBounded(p.lines, p.partial)
		p.partial = p.partial[:0]
		p.count++
	}
	if p.count == p.sent {
		p.mu.Unlock()
		return
	}
	msg := string(bytes.TrimSuffix(p.lines, []byte("\n")))
	p.lines = p.lines[:0]
	p.sent = p.count
	n := p.count
	p.mu.Unlock()
	p.notify("notifications/progress", map[string]any{"progress": float64(n), "message": msg})
}

// finish stops the ticker and sends what is left; after it returns
// nothing more is sent (the Call may be reused). Nil-safe.
func (p *outputProgress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.flush(true)
}
