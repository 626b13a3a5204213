// Package mcp is aiod's MCP dispatch: JSON-RPC 2.0 messages in, JSON-RPC
// messages out, over the plugin registry. It knows nothing of HTTP
// frameworks; host/server adapts it to Fiber.
//
// The tools/call path is written for speed: the envelope is decoded once,
// arguments stay raw bytes until the plugin reads them, and the plugin's
// result bytes are spliced into the response without re-encoding.
package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiodhq/aiod/host/plugin"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// LatestLegacyVersion is answered to initialize when the client's version
// is not supported.
const LatestLegacyVersion = "2025-11-25"

// LegacyVersions are the initialize-era protocol versions served.
var LegacyVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Implementation names the server in initialize results.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Server dispatches MCP requests to the registry, in both protocol eras
// (serve.go): legacy initialize sessions and sessionless POSTs, and the
// stateless 2026-07-28 protocol.
type Server struct {
	reg  *plugin.Registry
	info Implementation
	log  *slog.Logger

	opts      Options
	sessions  *sessions
	sealer    *stateSealer
	headers   headerCache
	pending   sync.Map // server→client request id -> *pendingReq
	nextID    atomic.Uint64
	listeners listeners
	metaJSON  []byte // {"io.modelcontextprotocol/serverInfo":{...}}
	base      context.Context
	stop      context.CancelFunc
}

// Options configure a Server.
type Options struct {
	Info   Implementation
	Logger *slog.Logger
	// MaxSessions bounds the legacy sessions alive at once (default
	// DefaultMaxSessions); SessionIdleTimeout ends a session unused that
	// long (default DefaultSessionIdleTimeout).
	MaxSessions        int
	SessionIdleTimeout time.Duration
	// RequestStateTTL is how long an MRTR requestState stays valid
	// (default 10 minutes).
	RequestStateTTL time.Duration
	// Instructions are sent in initialize and server/discover results.
	Instructions string
}

// NewServer returns a dispatcher over reg.
func NewServer(reg *plugin.Registry, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "aiod", Version: "dev"}
	}
	if opts.RequestStateTTL <= 0 {
		opts.RequestStateTTL = 10 * time.Minute
	}
	s := &Server{reg: reg, info: opts.Info, log: opts.Logger, opts: opts,
		sessions: newSessions(opts.MaxSessions, opts.SessionIdleTimeout),
		sealer:   newStateSealer(opts.RequestStateTTL)}
	s.base, s.stop = context.WithCancel(context.Background())
	s.metaJSON, _ = json.Marshal(map[string]any{MetaServerInfo: opts.Info})
	if reg != nil {
		reg.OnSwap(func(*plugin.Catalog) {
			for _, k := range []string{"tools", "prompts", "resources"} {
				s.broadcastListChanged(k)
			}
		})
	}
	return s
}

// SessionCount is the number of live legacy sessions.
func (s *Server) SessionCount() int { return s.sessions.Len() }

// Close ends every session and open stream. Idempotent.
func (s *Server) Close() {
	s.stop()
	s.sessions.close()
	s.listeners.closeAll()
}

// Request is a decoded JSON-RPC message from the client.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	// Result and Error are set on responses the client sends back.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// IsNotification reports whether the message has no id.
func (r *Request) IsNotification() bool { return len(r.ID) == 0 }

// Reply is what the transport sends back for one POSTed message.
type Reply struct {
	// Status is the HTTP status (200, or 202 for accepted notifications).
	Status int
	// Body is the JSON-RPC response, empty for 202.
	Body []byte
}

// Principal identifies who is calling: the tenant owning instances.
type Principal struct {
	Owner string
}

// Handle processes one POSTed body with no headers: a legacy, sessionless
// request (what plain curl sends). The HTTP transport uses Serve.
func (s *Server) Handle(ctx context.Context, p Principal, body []byte) Reply {
	r := s.Serve(ctx, &Exchange{Method: "POST", Header: MapHeaders{}, Body: body, Principal: p})
	if r.Stream != nil { // no Accept header never streams; be safe anyway
		r.Stream.q.leave()
		return Reply{Status: 500}
	}
	return Reply{Status: r.Status, Body: r.Body}
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func idOK(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch c := firstByte(id); {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

func validID(id json.RawMessage) json.RawMessage {
	if idOK(id) {
		return id
	}
	return nil
}

// resultResponse splices a raw result into a response envelope.
func resultResponse(id json.RawMessage, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// errorResponse renders a JSON-RPC error (id null when unknown).
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	b := make([]byte, 0, len(e)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, e...)
	return append(b, '}')
}
