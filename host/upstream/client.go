package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Every HTTP request aiod makes to an upstream (both eras: server/discover or
// initialize, tools/list, tools/call on the go-sdk client's path and on the
// fast path, the legacy standalone GET stream, the DELETE that ends a
// session) goes through a client made by newClient. It never follows a
// redirect: only loopback http:// URLs are registered (config.go), and a
// redirect would take the request, arguments included, wherever the
// upstream's Location header says. A 3xx answer is a *RedirectError, which
// the caller turns into a failed call naming the server and the status.
//
// The standalone GET stream is the exception in form, not in substance: its
// 3xx is logged (naming the server and the status) and handed to the go-sdk
// client as a 405, the answer of a server without that stream. An error there
// would make the go-sdk retry the GET for seconds and then fail the whole
// session, so one redirected GET would take every call of the upstream down
// with it; without the stream the session still serves its calls.

// RedirectError is a 3xx answered by an upstream. aiod does not follow it.
type RedirectError struct {
	Server string // the upstream's registered name
	Status int    // the HTTP status, 300 to 399
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("upstream MCP server %q answered HTTP %d (a redirect, which aiod does not follow)", e.Server, e.Status)
}

// newClient returns an HTTP client for the upstream server over rt that
// never follows a redirect: a 3xx answer is a *RedirectError (wrapped in the
// client's *url.Error), its body discarded; a GET's is logged with warn and
// answered as a 405.
func newClient(server string, rt http.RoundTripper, warn func(status int)) *http.Client {
	return &http.Client{
		Transport: noRedirect{server: server, base: rt, warn: warn},
		// Belt and braces: the transport already refuses every 3xx, so the
		// client never sees one to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// noRedirect turns a 3xx answer into a *RedirectError (a GET's into a 405).
type noRedirect struct {
	server string
	base   http.RoundTripper
	warn   func(status int) // a GET was redirected; nil: nothing logged
}

func (t noRedirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = withTrace(req) // the traceparent of the call, when tracing is on
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
		return resp, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the connection can be reused
	resp.Body.Close()
	if req.Method == http.MethodGet {
		if t.warn != nil {
			t.warn(resp.StatusCode)
		}
		return &http.Response{
			Status: "405 Method Not Allowed", StatusCode: http.StatusMethodNotAllowed,
			Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
			Header: http.Header{}, Body: http.NoBody, Request: req,
		}, nil
	}
	return nil, &RedirectError{Server: t.server, Status: resp.StatusCode}
}

// AuthFailure is implemented by the errors of a server's Auth hook
// (host/upstream/oauth: not logged in, a lapsed login, a scope asked for):
// their text, which says how to log in again, answers the call.
type AuthFailure interface {
	error
	AuthFailure()
}

// authFailed reports whether err holds an AuthFailure, and the isError
// result that answers the call.
func authFailed(err error) (json.RawMessage, bool) {
	var af AuthFailure
	if !errors.As(err, &af) {
		return nil, false
	}
	return errorResult(af.Error()), true
}

// redirected reports whether err is (or wraps) a *RedirectError, and the
// isError result that answers the call.
func redirected(err error) (json.RawMessage, bool) {
	var re *RedirectError
	if !errors.As(err, &re) {
		return nil, false
	}
	return errorResult(re.Error()), true
}
