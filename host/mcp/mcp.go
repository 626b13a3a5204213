// Package mcp is aiod's MCP protocol layer: JSON-RPC 2.0 messages in,
// JSON-RPC messages out, over a Catalog (the plugin registry). It knows
// nothing of HTTP frameworks; host/server adapts it to Fiber.
//
// The layers, one file each: transport.go (the HTTP exchange, routing by
// HTTP method, telling the eras apart), legacy.go (initialize sessions,
// batches, GET and DELETE), modern.go (the stateless 2026-07-28
// protocol), dispatch.go (the method table and, in front of it, the one
// middleware seam every method passes through), surface.go and input.go
// (prompts, resources, completion, listen streams, and the plugin's way
// back to the client).
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

	"github.com/aiodhq/aiod/host/skills"
)

// JSON-RPC error codes, as an *Error carries them.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// latestLegacyVersion is answered to initialize when the client's version
// is not supported.
const latestLegacyVersion = "2025-11-25"

// legacyVersions are the initialize-era protocol versions served.
var legacyVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// Implementation names the server in initialize results.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Server is the protocol layer over a Catalog, in both protocol eras:
// legacy initialize sessions and sessionless POSTs, and the stateless
// 2026-07-28 protocol.
type Server struct {
	cat     Catalog
	info    Implementation
	log     *slog.Logger
	handler Handler // the middleware around route (dispatch.go)

	opts      Options
	sessions  *sessions
	sealer    *stateSealer
	headers   headerCache
	pending   sync.Map // server→client request id -> *pendingReq
	nextID    atomic.Uint64
	listeners listeners
	metaJSON  []byte // {"io.modelcontextprotocol/serverInfo":{...}}
	tasks     taskStore
	taskOpts  TaskOptions
	taskSaves sync.WaitGroup // records being written (taskrecord.go)
	// taskCalls is the tasks extension's tools/call (tasks.go): it serves
	// a 2026-07-28 call of a tool that declares execution.taskSupport,
	// or answers nil to leave it to the plain path. Installed by
	// NewServer; nil: no tasks extension.
	taskCalls func(ctx context.Context, ex *Exchange, rc *rpcCall, support string) *Response
	methods   map[string]method // the method table, and the extensions' methods
	base      context.Context
	stop      context.CancelFunc
	closed    atomic.Bool
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
	// Skills, when set, are served through the skills extension
	// (skills.go).
	Skills *skills.Store
	// Tasks bound the tasks extension (zero values: the defaults).
	Tasks TaskOptions
	// Middleware wraps every method the method table serves (see
	// Request), the first outermost.
	Middleware []Middleware
	// ReplicaID, when set, tags every legacy session id (ReplicaTag; an
	// id it refuses panics, so callers check it first): a load balancer
	// routes a session's requests to the replica that created it by the
	// Mcp-Session-Id up to its first ".".
	ReplicaID string
	// SessionsPerOwner, when set, is the most legacy sessions one owner
	// (tenant) holds at once (0: no such limit): at it, the owner's least
	// recently used idle session makes room, else initialize answers 503.
	SessionsPerOwner func(owner string) int
}

// NewServer returns the protocol layer over cat. Close ends it.
func NewServer(cat Catalog, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "aiod", Version: "dev"}
	}
	if opts.RequestStateTTL <= 0 {
		opts.RequestStateTTL = 10 * time.Minute
	}
	s := &Server{cat: cat, info: opts.Info, log: opts.Logger, opts: opts,
		handler:  chain(route, opts.Middleware),
		sessions: newSessions(opts.MaxSessions, opts.SessionIdleTimeout),
		sealer:   newStateSealer(opts.RequestStateTTL), methods: methods}
	s.installTasks(opts.Tasks)
	s.sessions.perOwner = opts.SessionsPerOwner
	if opts.ReplicaID != "" {
		tag, err := ReplicaTag(opts.ReplicaID)
		if err != nil {
			panic(err)
		}
		s.sessions.prefix = tag + "."
	}
	s.base, s.stop = context.WithCancel(context.Background())
	s.metaJSON, _ = json.Marshal(map[string]any{metaServerInfo: opts.Info})
	if cat != nil {
		// Tell listening clients about each list a swap changed, once;
		// a swap that changed nothing they can see says nothing.
		var last atomic.Pointer[Snapshot]
		last.Store(cat.Snapshot())
		cat.OnSwap(func(next *Snapshot) {
			tools, prompts, resources := next.Changed(last.Swap(next))
			for _, k := range []struct {
				kind    string
				changed bool
			}{{"tools", tools}, {"prompts", prompts}, {"resources", resources}} {
				if k.changed {
					s.broadcastListChanged(k.kind)
				}
			}
		})
	}
	if tn, ok := cat.(ToolsNotifier); ok {
		tn.OnToolsChanged(func() { s.broadcastListChanged("tools") })
	}
	if ln, ok := cat.(ListNotifier); ok {
		ln.OnListChanged(func(kind string) { s.broadcastListChanged(kind) })
	}
	return s
}

// SessionCount is the number of live legacy sessions.
func (s *Server) SessionCount() int { return s.sessions.Len() }

// SessionsByOwner counts the legacy sessions open now of each owner.
func (s *Server) SessionsByOwner() map[string]int { return s.sessions.byOwner() }

// Close ends every session and open stream, and stops the session
// janitor. Idempotent; a nil Server is closed.
func (s *Server) Close() {
	if s == nil || !s.closed.CompareAndSwap(false, true) {
		return
	}
	s.tasks.close()
	s.waitTaskSaves(5 * time.Second)
	s.stop()
	s.sessions.close()
	s.listeners.closeAll()
}

// Principal identifies who is calling: the tenant owning instances.
type Principal struct {
	Owner string
}
