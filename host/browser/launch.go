package browser

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Launch timing.
const (
	// startTimeout bounds one start: from exec to the DevToolsActivePort
	// file.
	startTimeout = 30 * time.Second
	// Restart backoff after the browser died: doubling from the first to
	// the most.
	restartBackoff    = 500 * time.Millisecond
	maxRestartBackoff = 30 * time.Second
	// stopGrace is how long stop waits after SIGTERM before SIGKILL.
	stopGrace = 3 * time.Second
)

// chromiumFlags are the flags of every launch besides the profile, the
// port and the window size: headless, quiet, no background work (after
// chromedp's DefaultExecAllocatorOptions).
var chromiumFlags = []string{
	"--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
	"--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
	"--disable-background-networking", "--disable-background-timer-throttling",
	"--disable-backgrounding-occluded-windows", "--disable-renderer-backgrounding",
	"--disable-breakpad", "--disable-client-side-phishing-detection", "--disable-default-apps",
	"--disable-extensions", "--disable-features=Translate", "--disable-hang-monitor",
	"--disable-popup-blocking", "--disable-prompt-on-repost", "--disable-sync",
	"--force-color-profile=srgb", "--metrics-recording-only", "--password-store=basic",
	"--use-mock-keychain",
}

// launcher runs Chromium and restarts it when it dies, until stop.
type launcher struct {
	path     string
	viewport Viewport
	log      *slog.Logger
	dir      string // the profile (--user-data-dir), removed by stop

	mu       sync.Mutex
	cond     *sync.Cond
	endpoint string // 127.0.0.1:port while a browser is up, else ""
	err      error  // why there is none
	proc     *os.Process
	restartN int
	stopping bool
	stopc    chan struct{} // closed when stop begins
	done     chan struct{} // closed when the supervisor has exited
	stopOnce sync.Once
}

func startLauncher(path string, vp Viewport, log *slog.Logger) (*launcher, error) {
	bin, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("browser: --browser launch needs Chromium: %w (install Debian's chromium, or set --browser-path / AIO_BROWSER_PATH)", err)
	}
	dir, err := os.MkdirTemp("", "aiod-chromium-")
	if err != nil {
		return nil, fmt.Errorf("browser: profile dir: %w", err)
	}
	l := &launcher{path: bin, viewport: vp, log: log, dir: dir, done: make(chan struct{}), stopc: make(chan struct{}),
		err: fmt.Errorf("%w: the browser is starting", ErrUnavailable)}
	l.cond = sync.NewCond(&l.mu)
	go l.supervise()
	return l, nil
}

func (l *launcher) args() []string {
	a := append([]string{}, chromiumFlags...)
	if os.Geteuid() == 0 {
		a = append(a, "--no-sandbox") // Chromium refuses to run as root with its sandbox
	}
	return append(a,
		"--user-data-dir="+l.dir,
		"--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=0",
		"--window-size="+strconv.Itoa(l.viewport.Width)+","+strconv.Itoa(l.viewport.Height),
		// A screen with room for the window that fitViewport grows by the
		// height headless Chromium gives its (invisible) toolbars.
		"--screen-info={"+strconv.Itoa(l.viewport.Width)+"x"+strconv.Itoa(2*l.viewport.Height)+"}",
		"about:blank")
}

// supervise starts the browser, waits for it to exit, and starts it again
// (with a growing pause when it keeps dying) until stop.
func (l *launcher) supervise() {
	defer close(l.done)
	backoff := restartBackoff
	for {
		began := time.Now()
		cmd, waitc, endpoint, err := l.start()
		l.mu.Lock()
		if l.stopping {
			l.mu.Unlock()
			if cmd != nil {
				killGroup(cmd.Process)
				<-waitc
			}
			return
		}
		if err == nil {
			l.endpoint, l.err, l.proc = endpoint, nil, cmd.Process
			l.log.Info("browser launched", "endpoint", endpoint, "pid", cmd.Process.Pid)
		} else {
			l.err = fmt.Errorf("%w: launching %s: %w", ErrUnavailable, l.path, err)
			l.log.Warn("browser launch failed", "error", err)
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		if err == nil {
			werr := <-waitc
			l.mu.Lock()
			l.endpoint, l.proc = "", nil
			l.cond.Broadcast()
			stopping := l.stopping
			if !stopping {
				l.restartN++
				l.err = fmt.Errorf("%w: the browser exited (%v) and is being restarted", ErrUnavailable, werr)
				l.log.Warn("browser exited; restarting", "error", werr)
			}
			l.mu.Unlock()
			if stopping {
				return
			}
		}
		if time.Since(began) > time.Minute {
			backoff = restartBackoff
		}
		select {
		case <-time.After(backoff):
		case <-l.stopc:
			return
		}
		backoff = min(2*backoff, maxRestartBackoff)
	}
}

// start execs Chromium and waits for its DevToolsActivePort file. The
// returned channel gets the process's exit.
func (l *launcher) start() (*exec.Cmd, <-chan error, string, error) {
	portFile := filepath.Join(l.dir, "DevToolsActivePort")
	os.Remove(portFile)
	cmd := exec.Command(l.path, l.args()...)
	stderr := &limitedBuffer{n: 8 << 10}
	cmd.Stderr = stderr
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, nil, "", err
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(portFile); err == nil {
			if port, _, ok := strings.Cut(string(b), "\n"); ok {
				if _, err := strconv.Atoi(port); err == nil {
					return cmd, waitc, "127.0.0.1:" + port, nil
				}
			}
		}
		select {
		case werr := <-waitc:
			killGroup(cmd.Process)
			return nil, nil, "", fmt.Errorf("exited at start (%v): %s", werr, lastLine(stderr.String()))
		case <-deadline.C:
			killGroup(cmd.Process)
			<-waitc
			return nil, nil, "", fmt.Errorf("no DevTools port after %s: %s", startTimeout, lastLine(stderr.String()))
		case <-l.stopc:
			killGroup(cmd.Process)
			<-waitc
			return nil, nil, "", fmt.Errorf("%w: aiod is shutting down", ErrUnavailable)
		case <-tick.C:
		}
	}
}

// wait returns the endpoint of the running browser, other than stale (one
// that did not answer), waiting within ctx while it starts or restarts.
func (l *launcher) wait(ctx context.Context, stale string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	up := func() bool { return l.endpoint != "" && l.endpoint != stale }
	if up() {
		return l.endpoint, nil
	}
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	for !up() && !l.stopping && ctx.Err() == nil {
		l.cond.Wait()
	}
	switch {
	case up():
		return l.endpoint, nil
	case l.stopping:
		return "", fmt.Errorf("%w: aiod is shutting down", ErrUnavailable)
	}
	return "", fmt.Errorf("%w (waited: %v)", l.err, ctx.Err())
}

func (l *launcher) current() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endpoint, l.err
}

func (l *launcher) restarts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.restartN
}

// kill kills the running browser (tests: a crash); the supervisor
// restarts it.
func (l *launcher) kill() {
	l.mu.Lock()
	p := l.proc
	l.mu.Unlock()
	if p != nil {
		killGroup(p)
	}
}

// stop ends the browser (SIGTERM, then SIGKILL after stopGrace), waits for
// the supervisor and removes the profile. Idempotent.
func (l *launcher) stop() error {
	var err error
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.stopping = true
		close(l.stopc)
		p := l.proc
		l.cond.Broadcast()
		l.mu.Unlock()
		if p != nil {
			termGroup(p)
			select {
			case <-l.done:
			case <-time.After(stopGrace):
				killGroup(p)
			}
		}
		<-l.done
		err = os.RemoveAll(l.dir)
	})
	return err
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int
}

func (w *limitedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (w *limitedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no output"
	}
	return s
}
