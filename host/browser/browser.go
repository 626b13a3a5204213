// Package browser is aiod's browser plane: one Chromium reached over the
// Chrome DevTools Protocol, either attached to (a browser that runs
// already, at BROWSER_REMOTE_DEBUGGING_HOST:PORT) or launched and kept
// running by aiod itself (headless, its own profile, a loopback debugging
// port, restarted when it dies). The host's aiod:cdp family
// (host/hostfn/cdp) sends plugins' commands through the Conn it hands
// out.
//
// The connection is chromedp's websocket client (chromedp/remote) carrying
// cdproto messages; Conn and Session implement cdproto's cdp.Session, so
// typed commands run on them with cdp.Call. aiod routes the messages
// itself rather than through chromedp.Browser/Target, which enable the
// Network, DOM, CSS and Page domains on every attach and buffer events
// without a bound (RATIONALE.md, "Browser plane").
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode says where the browser comes from.
type Mode string

// The modes.
const (
	Attach Mode = "attach" // a browser that runs already (BROWSER_REMOTE_DEBUGGING_HOST/_PORT)
	Launch Mode = "launch" // aiod starts Chromium and keeps it running
	Off    Mode = "off"    // no browser plane
)

// Defaults of Config (each defined here only).
const (
	DefaultMode     = Attach
	DefaultHost     = "127.0.0.1"
	DefaultPort     = 9222
	DefaultPath     = "chromium"
	DefaultViewport = "1280x800"
)

// ParseMode checks a mode name ("" is DefaultMode).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return DefaultMode, nil
	case Attach, Launch, Off:
		return m, nil
	}
	return "", fmt.Errorf("browser mode %q: want attach, launch or off", s)
}

// Viewport is a size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

func (v Viewport) String() string { return strconv.Itoa(v.Width) + "x" + strconv.Itoa(v.Height) }

// ParseViewport reads "WIDTHxHEIGHT" ("" is DefaultViewport).
func ParseViewport(s string) (Viewport, error) {
	if s == "" {
		s = DefaultViewport
	}
	w, h, ok := strings.Cut(s, "x")
	wi, err1 := strconv.Atoi(w)
	hi, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil || wi < 100 || hi < 100 || wi > 7680 || hi > 4320 {
		return Viewport{}, fmt.Errorf("viewport %q: want WIDTHxHEIGHT between 100x100 and 7680x4320, such as 1280x800", s)
	}
	return Viewport{wi, hi}, nil
}

// Config configures the browser plane. The zero value attaches to
// 127.0.0.1:9222.
type Config struct {
	Mode Mode   // "" is DefaultMode
	Host string // attach: debugging host ("" is DefaultHost)
	Port int    // attach: debugging port (0 is DefaultPort)
	// Path is the Chromium binary launch runs ("" is DefaultPath, looked
	// up on PATH).
	Path string
	// Viewport is launch's window size ("" is DefaultViewport).
	Viewport string
	Logger   *slog.Logger
}

// Version is the browser's /json/version.
type Version struct {
	Product         string `json:"Browser"`
	ProtocolVersion string `json:"Protocol-Version"`
	UserAgent       string `json:"User-Agent"`
	JSVersion       string `json:"V8-Version"`
	WebSocketURL    string `json:"webSocketDebuggerUrl"`
}

// Browser is the browser plane: it hands out the current connection,
// (re)connecting or waiting for a (re)started browser as needed.
type Browser struct {
	mode     Mode
	endpoint string // host:port for attach; set by the launcher for launch
	viewport Viewport
	log      *slog.Logger
	launcher *launcher

	mu      sync.Mutex
	conn    *Conn
	lastErr error
	closed  bool
}

// New validates cfg and, for launch, starts Chromium in the background
// (Conn waits for it).
func New(cfg Config) (*Browser, error) {
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	vp, err := ParseViewport(cfg.Viewport)
	if err != nil {
		return nil, err
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("browser debugging port %d: not in 1-65535", cfg.Port)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Browser{mode: mode, viewport: vp, log: cfg.Logger}
	switch mode {
	case Attach:
		host, port := cfg.Host, cfg.Port
		if host == "" {
			host = DefaultHost
		}
		if port == 0 {
			port = DefaultPort
		}
		b.endpoint = net.JoinHostPort(host, strconv.Itoa(port))
	case Launch:
		path := cfg.Path
		if path == "" {
			path = DefaultPath
		}
		b.launcher, err = startLauncher(path, vp, cfg.Logger)
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Mode is the configured mode.
func (b *Browser) Mode() Mode { return b.mode }

// Viewport is the configured viewport (launch's window size).
func (b *Browser) Viewport() Viewport { return b.viewport }

// Conn returns the live connection to the browser, dialling one when there
// is none (launch: waiting, within ctx, for the browser to be up). Its
// errors wrap ErrUnavailable and say what is missing.
func (b *Browser) Conn(ctx context.Context) (*Conn, error) {
	if b == nil || b.mode == Off {
		return nil, fmt.Errorf("%w: the browser plane is off (--browser off)", ErrUnavailable)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("%w: aiod is shutting down", ErrUnavailable)
	}
	if b.conn != nil && b.conn.Err() == nil {
		return b.conn, nil
	}
	if b.launcher != nil {
		return b.dialLaunched(ctx)
	}
	v, err := probe(ctx, b.endpoint)
	if err == nil {
		var c *Conn
		if c, err = Dial(ctx, v); err == nil {
			b.conn, b.lastErr = c, nil
			return c, nil
		}
	}
	err = fmt.Errorf("%w: no browser reachable over CDP at %s (set BROWSER_REMOTE_DEBUGGING_HOST/_PORT, or start aiod with --browser launch): %w", ErrUnavailable, b.endpoint, err)
	b.lastErr = err
	return nil, err
}

// dialLaunched connects to the launched browser, waiting (within ctx) for
// it to be up; an endpoint that does not answer is the browser that just
// died, so it waits for the next one. A new browser's window is sized so
// that its viewport is the configured one. b.mu is held.
func (b *Browser) dialLaunched(ctx context.Context) (*Conn, error) {
	stale := ""
	for {
		endpoint, err := b.launcher.wait(ctx, stale)
		if err != nil {
			b.lastErr = err
			return nil, err
		}
		v, err := probe(ctx, endpoint)
		if err == nil {
			var c *Conn
			if c, err = Dial(ctx, v); err == nil {
				if err = fitViewport(ctx, c, b.viewport); err == nil {
					b.conn, b.lastErr = c, nil
					return c, nil
				}
				c.Close()
			}
		}
		b.log.Warn("launched browser: connecting failed", "endpoint", endpoint, "error", err)
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: the launched browser does not answer at %s: %w", ErrUnavailable, endpoint, err)
			b.lastErr = err
			return nil, err
		}
		stale = endpoint
	}
}

// discovery is the HTTP client of CDP endpoint discovery. It never follows a
// redirect: /json/version is asked of the configured host and port only, and
// a 3xx (which would send the GET, and take the websocket URL to dial, from
// wherever its Location says) is a failed probe naming the status.
var discovery = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// probe reads the browser's /json/version at endpoint (host:port).
func probe(ctx context.Context, endpoint string) (Version, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+endpoint+"/json/version", nil)
	if err != nil {
		return Version{}, err
	}
	resp, err := discovery.Do(req)
	if err != nil {
		return Version{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		return Version{}, fmt.Errorf("GET /json/version answered HTTP %d (a redirect, which aiod does not follow)", resp.StatusCode)
	}
	if resp.StatusCode != 200 {
		return Version{}, fmt.Errorf("GET /json/version: %s", resp.Status)
	}
	var v Version
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&v); err != nil {
		return Version{}, fmt.Errorf("GET /json/version: %w", err)
	}
	if v.WebSocketURL == "" {
		return Version{}, errors.New("GET /json/version: no webSocketDebuggerUrl")
	}
	return v, nil
}

// Status is the browser's entry in /v1/capabilities.
type Status struct {
	Status   string   `json:"status"` // ready or absent
	Mode     Mode     `json:"mode"`
	Endpoint string   `json:"endpoint,omitempty"`
	Product  string   `json:"product,omitempty"`
	Viewport Viewport `json:"viewport"`
	Restarts int      `json:"restarts,omitempty"`
	Missing  []string `json:"missing"`
	Warnings []string `json:"warnings"`
}

// Status probes the browser (connecting if needed, within ctx) and reports
// it.
func (b *Browser) Status(ctx context.Context) Status {
	st := Status{Status: "absent", Mode: Off, Missing: []string{}, Warnings: []string{}}
	if b == nil {
		st.Missing = []string{"browser: the browser plane is off (--browser off)"}
		return st
	}
	st.Mode, st.Viewport, st.Endpoint = b.mode, b.viewport, b.endpoint
	if b.launcher != nil {
		st.Restarts = b.launcher.restarts()
	}
	c, err := b.Conn(ctx)
	if err != nil {
		st.Missing = []string{"browser: " + strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": ")}
		return st
	}
	st.Status, st.Product = "ready", c.Version().Product
	if b.launcher != nil {
		st.Endpoint, _ = b.launcher.current()
	}
	return st
}

// Close closes the connection and stops a launched browser. Idempotent.
func (b *Browser) Close() error {
	if b == nil {
		return nil
	}
	var err error
	if b.launcher != nil {
		err = b.launcher.stop() // first: it ends a Conn waiting for the browser
	}
	b.mu.Lock()
	b.closed = true
	c := b.conn
	b.conn = nil
	b.mu.Unlock()
	if c != nil {
		c.Close()
	}
	return err
}
