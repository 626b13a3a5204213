package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The deprecated HTTP+SSE transport (2024-11-05) as a client: a GET opens
// an event stream whose first event, "endpoint", names where to POST the
// messages; the answers come back on the stream. A server of the policy
// says it speaks it ("transport": "sse"), or is found to, as the MCP
// specification tells a client to: a modern request (a POST) first, and on
// a 400, 404 or 405 answer the GET handshake. Once found, the server is
// reached that way from then on (for the life of the process). A server of
// EXTRA_MCP_SERVERS is never tried this way (seed 000's rules).
//
// The go-sdk's SSEClientTransport POSTs wherever the endpoint event says;
// every request is held to the server's origin (originOnly), so a server
// cannot send aiod's requests, headers and arguments, to another host.

// legacyRefusal reports whether status answering a modern POST means the
// server may speak the 2024-11-05 transport.
func legacyRefusal(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// sseTransport is the 2024-11-05 transport to the server's URL.
func (u *upstream) sseTransport() mcp.Transport {
	return &captureTransport{base: &mcp.SSEClientTransport{Endpoint: u.srv.URL, HTTPClient: u.hc, MaxEventSize: int(u.set.opts.MaxResultBytes)},
		life: u.set.ctx, progress: u.relayProgress}
}

// connectSSE tries the 2024-11-05 transport after a modern attempt that
// failed, when the server may be tried that way and a POST of that attempt
// was refused with a 400, 404 or 405.
func (u *upstream) connectSSE(ctx context.Context, modernErr error) (*mcp.ClientSession, error) {
	status := int(u.refused.Load())
	if !u.srv.FromPolicy || u.srv.Transport != TransportAuto || u.sse.Load() || !legacyRefusal(status) {
		return nil, modernErr
	}
	cs, err := u.cl.Connect(ctx, u.sseTransport(), nil)
	if err != nil {
		return nil, fmt.Errorf("%v; answered HTTP %d to a POST, and the 2024-11-05 HTTP+SSE handshake failed too: %w", modernErr, status, err)
	}
	u.sse.Store(true)
	u.set.logf("upstream MCP server %q answered HTTP %d to a POST and speaks the 2024-11-05 HTTP+SSE transport: reached that way from now on", u.srv.Name, status)
	return cs, nil
}

// originOnly refuses a request to another origin (scheme, host and port)
// than the server's.
type originOnly struct {
	server string
	origin string // scheme://host:port, lower case
	base   http.RoundTripper
}

func newOriginOnly(server, rawURL string, base http.RoundTripper) http.RoundTripper {
	p, err := url.Parse(rawURL)
	if err != nil {
		return base
	}
	return originOnly{server: server, origin: originOf(p), base: base}
}

func originOf(p *url.URL) string {
	port := p.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(p.Scheme)]
	}
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Hostname()) + ":" + port
}

func (t originOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := originOf(req.URL); o != t.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("upstream MCP server %q: a request to %s refused: not the server's origin (%s)", t.server, o, t.origin)
	}
	return t.base.RoundTrip(req)
}
