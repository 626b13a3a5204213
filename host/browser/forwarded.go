package browser

import (
	"context"
	"net/url"
	"strings"
)

// Forwarded is how a client reached aiod through a reverse proxy: the
// scheme, host and path prefix it used (X-Forwarded-Proto, -Host, -Prefix;
// the Host header when there is no X-Forwarded-Host) and the request's
// query string. Behind a proxy the browser's websocket URL is given as the
// client can reach it (CDPURL), as the reference aiod gives it.
type Forwarded struct {
	Proto, Host, Prefix, Query string
}

type forwardedKey struct{}

// WithForwarded returns ctx carrying f (host/server sets it on a request
// that came through a proxy).
func WithForwarded(ctx context.Context, f Forwarded) context.Context {
	return context.WithValue(ctx, forwardedKey{}, f)
}

// ForwardedFrom returns the Forwarded ctx carries, if any.
func ForwardedFrom(ctx context.Context) (Forwarded, bool) {
	f, ok := ctx.Value(forwardedKey{}).(Forwarded)
	return f, ok
}

// CDPURL is the browser websocket URL ws (ws://127.0.0.1:9222/devtools/browser/<id>)
// as a client behind the proxy reaches it:
// <ws|wss>://<host><prefix>/cdp/devtools/browser/<id>[?<query>] (the proxy
// routes <prefix>/cdp/ to the browser's DevTools port, as the AIO image's
// does). ws is returned unchanged if it is not a URL.
func (f Forwarded) CDPURL(ws string) string {
	u, err := url.Parse(ws)
	if err != nil || u.Host == "" || f.Host == "" {
		return ws
	}
	scheme := "ws"
	if p := strings.ToLower(f.Proto); p == "https" || p == "wss" {
		scheme = "wss"
	}
	prefix := strings.Trim(f.Prefix, "/")
	if prefix != "" {
		prefix = "/" + prefix
	}
	out := scheme + "://" + f.Host + prefix + "/cdp" + u.EscapedPath()
	if f.Query != "" {
		out += "?" + f.Query
	}
	return out
}
