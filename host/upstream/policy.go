package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/aiodhq/aiod/host/caps"
)

// Servers the policy names (its "upstreams" object, caps.ParseUpstreams):
// the kinds EXTRA_MCP_SERVERS refuses, each opted into per server by the
// operator. FromPolicy turns a validated entry into a Server, reading what
// the entry refers to (environment variables, the CA file) once, at start.

// Transport values of a Server.
const (
	TransportAuto       = ""                // Streamable HTTP, else the 2024-11-05 HTTP+SSE transport
	TransportStreamable = "streamable-http" // Streamable HTTP only
	TransportSSE        = "sse"             // the 2024-11-05 HTTP+SSE transport only
)

// FromPolicy returns the Server of a policy entry: its headers with every
// "${VAR}" replaced by lookup(VAR) (a variable that is not set is an error
// naming it, never a value), its CA file read. s must have passed
// caps.ParseUpstreams.
func FromPolicy(s caps.UpstreamServer, lookup func(string) (string, bool)) (Server, error) {
	srv := Server{Name: s.Name, URL: s.URL, Prefix: s.Prefix, Transport: s.Transport, FromPolicy: true,
		Tenants: s.Tenants}
	if len(s.Headers) > 0 {
		srv.Headers = make(http.Header, len(s.Headers))
		for name, v := range s.Headers {
			val, err := caps.ExpandVars(v, lookup)
			if err != nil {
				return Server{}, fmt.Errorf("upstream MCP server %q: header %s: %w", s.Name, name, err)
			}
			srv.Headers.Set(name, val)
		}
	}
	if s.CAFile != "" {
		pool, err := loadCAs(s.CAFile)
		if err != nil {
			return Server{}, fmt.Errorf("upstream MCP server %q: ca_file: %w", s.Name, err)
		}
		srv.RootCAs = pool
	}
	if s.Stdio() {
		srv.Stdio = &Stdio{Command: s.Command, Args: s.Args, Env: s.Env, Hosts: s.Hosts, SHA256: s.SHA256, ReadOnly: s.ReadOnly}
	}
	return srv, nil
}

// loadCAs reads a PEM file of certificates.
func loadCAs(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no PEM certificate in " + path)
	}
	return pool, nil
}

// serverTransport is the HTTP transport of srv: base (a clone of
// http.DefaultTransport when nil) verifying with srv's CAs when it has its
// own, and setting srv's headers on every request.
func serverTransport(srv Server, base http.RoundTripper) http.RoundTripper {
	if base == nil || srv.RootCAs != nil {
		var t *http.Transport
		if bt, ok := base.(*http.Transport); ok {
			t = bt.Clone()
		} else if base == nil {
			t = http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = 64
		}
		if t != nil {
			if srv.RootCAs != nil {
				t.TLSClientConfig = &tls.Config{RootCAs: srv.RootCAs, MinVersion: tls.VersionTLS12}
			}
			base = t
		}
	}
	if len(srv.Headers) > 0 {
		base = headerTransport{base: base, h: srv.Headers}
	}
	if srv.Auth != nil {
		base = srv.Auth(base)
	}
	return base
}

// headerTransport sets the server's configured headers on each request.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}
