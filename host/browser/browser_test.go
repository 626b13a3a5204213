package browser

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Viewport
		err  bool
	}{
		{"", Viewport{1280, 800}, false},
		{"1024x768", Viewport{1024, 768}, false},
		{"1024", Viewport{}, true},
		{"axb", Viewport{}, true},
		{"10x10", Viewport{}, true},
		{"99999x10", Viewport{}, true},
	} {
		v, err := ParseViewport(tc.in)
		if (err != nil) != tc.err || v != tc.want {
			t.Errorf("ParseViewport(%q) = %v, %v", tc.in, v, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{{"", Attach, false}, {"attach", Attach, false}, {"launch", Launch, false}, {"off", Off, false}, {"on", "", true}} {
		m, err := ParseMode(tc.in)
		if (err != nil) != tc.err || m != tc.want {
			t.Errorf("ParseMode(%q) = %v, %v", tc.in, m, err)
		}
	}
	if _, err := New(Config{Mode: Launch, Path: "/nonexistent/chromium"}); err == nil || !strings.Contains(err.Error(), "AIO_BROWSER_PATH") {
		t.Errorf("launch with a missing binary: %v", err)
	}
}

// TestAbsent: attach to a port nobody listens on, and off: Conn fails
// with ErrUnavailable saying what is missing; Close is idempotent.
func TestAbsent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Port: port}, "no browser reachable over CDP at 127.0.0.1:"},
		{Config{Mode: Off}, "the browser plane is off"},
	} {
		b, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Conn(context.Background())
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Conn error %v, want %q", tc.cfg, err, tc.want)
		}
		if st := b.Status(context.Background()); st.Status != "absent" || len(st.Missing) != 1 || !strings.Contains(st.Missing[0], tc.want) {
			t.Errorf("%+v: status %+v", tc.cfg, st)
		}
		for i := range 2 { // idempotent
			if err := b.Close(); err != nil {
				t.Errorf("Close %d: %v", i, err)
			}
		}
	}
}

func needChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("launches Chromium: make test runs it, make test-short does not")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatalf("chromium is not installed (.ci/run installs it): %v", err)
	}
}

// TestLaunch launches Chromium, screenshots its viewport with typed
// cdproto commands, kills it, and sees it come back.
func TestLaunch(t *testing.T) {
	needChromium(t)
	b, err := New(Config{Mode: Launch, Viewport: "800x600", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := pageSession(ctx, t, b)
	shot, err := cdp.Call(ctx, s, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot.Data))
	if err != nil {
		t.Fatal(err)
	}
	if sz := img.Bounds().Size(); sz.X != 800 || sz.Y != 600 {
		t.Errorf("screenshot %v, want 800x600", sz)
	}
	if st := b.Status(ctx); st.Status != "ready" || !strings.Contains(st.Product, "Chrome") {
		t.Errorf("status %+v", st)
	}

	// A crash: the session and the connection end with ErrUnavailable,
	// and the supervisor brings a new browser.
	b.launcher.kill()
	select {
	case <-s.Conn().Done():
	case <-ctx.Done():
		t.Fatal("the connection outlived the browser")
	}
	if _, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: "1"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("call after the crash: %v", err)
	}
	s2 := pageSession(ctx, t, b)
	res, err := cdp.Call(ctx, s2, runtime.Evaluate, runtime.EvaluateParams{Expression: "innerWidth", ReturnByValue: ptr(true)})
	if err != nil || string(res.Result.Value) != "800" {
		t.Errorf("after the restart: %s, %v", res.Result.Value, err)
	}
	if b.launcher.restarts() != 1 {
		t.Errorf("restarts %d", b.launcher.restarts())
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
	if _, err := b.Conn(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Conn after Close: %v", err)
	}
}

func pageSession(ctx context.Context, t *testing.T, b *Browser) *Session {
	t.Helper()
	c, err := b.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range ts {
		if ti.Type == "page" {
			s, err := c.Attach(ctx, ti.TargetID)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("no page among %d targets", len(ts))
	return nil
}

// hungBrowser is a DevTools endpoint that completes the websocket
// handshake and then never answers: a browser that hangs.
func hungBrowser(t *testing.T) (host string, port int) {
	t.Helper()
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Browser":"Hung/1.0","webSocketDebuggerUrl":"ws://%s/devtools/browser/x"}`, r.Host)
	})
	var conns []net.Conn
	var mu sync.Mutex
	mux.HandleFunc("/devtools/browser/x", func(w http.ResponseWriter, r *http.Request) {
		h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", base64.StdEncoding.EncodeToString(h[:]))
		rw.Flush()
		mu.Lock()
		conns = append(conns, c) // read nothing, answer nothing
		mu.Unlock()
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		srv.Close()
	})
	a := srv.Listener.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

// TestHungBrowser: a command to a browser that never answers ends at its
// deadline, and the connection stays usable for the next one.
func TestHungBrowser(t *testing.T) {
	h, p := hungBrowser(t)
	b, err := New(Config{Host: h, Port: p, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := b.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Version().Product != "Hung/1.0" {
		t.Errorf("version %+v", c.Version())
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		began := time.Now()
		_, err = c.Targets(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(began) > 2*time.Second {
			t.Errorf("Targets on a hung browser: %v after %v", err, time.Since(began))
		}
	}
	if c.Err() != nil {
		t.Errorf("the connection ended: %v", c.Err())
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}

// TestDiscoveryRedirect: a DevTools endpoint whose /json/version answers a
// redirect (301, 302, 303, 307, 308), to another loopback address or to
// another path of its own: aiod sends nothing there, and Conn fails naming
// the status.
func TestDiscoveryRedirect(t *testing.T) {
	var elsewhere atomic.Int64 // requests that reached a redirect's target
	target := func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprintf(w, `{"Browser":"Elsewhere/1.0","webSocketDebuggerUrl":"ws://%s/devtools/browser/x"}`, r.Host)
	}
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(target)}
	go other.Serve(l)
	t.Cleanup(func() { other.Close() })
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, tg := range []struct{ name, location string }{
			{"another loopback address", "http://" + l.Addr().String() + "/json/version"},
			{"same origin", "/json/elsewhere"},
		} {
			t.Run(fmt.Sprintf("%d/%s", status, tg.name), func(t *testing.T) {
				elsewhere.Store(0)
				var redirected atomic.Int64
				mux := http.NewServeMux()
				mux.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
					redirected.Add(1)
					http.Redirect(w, r, tg.location, status)
				})
				mux.HandleFunc("/json/elsewhere", target)
				srv := httptest.NewServer(mux)
				defer srv.Close()
				a := srv.Listener.Addr().(*net.TCPAddr)
				b, err := New(Config{Host: a.IP.String(), Port: a.Port, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				_, err = b.Conn(context.Background())
				want := fmt.Sprintf("GET /json/version answered HTTP %d (a redirect, which aiod does not follow)", status)
				if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
					t.Fatalf("Conn: %v, want ErrUnavailable naming %q", err, want)
				}
				if redirected.Load() == 0 {
					t.Fatal("the endpoint redirected nothing: the test did not test")
				}
				if n := elsewhere.Load(); n != 0 {
					t.Fatalf("%d requests reached the redirect's target", n)
				}
			})
		}
	}
}
