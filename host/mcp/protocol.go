package mcp

import (
	"encoding/json"
	"slices"
	"strings"
)

// modernVersion is the first (and only) stateless protocol revision served.
const modernVersion = "2026-07-28"

// SupportedVersions lists every revision aiod serves, newest first, as
// server/discover reports them.
var SupportedVersions = []string{modernVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// MCP error codes beyond JSON-RPC's.
const (
	CodeHeaderMismatch     = -32020
	CodeMissingCapability  = -32021
	CodeUnsupportedVersion = -32022
	CodeRequestCancelled   = -32800
	CodeLegacyNotFound     = -32002 // resource not found before 2026-07-28
)

// Reserved _meta keys.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Era is the protocol family a request belongs to.
type Era uint8

// The eras.
const (
	// Legacy: initialize handshake, optional Mcp-Session-Id sessions
	// (2024-11-05 through 2025-11-25).
	Legacy Era = iota
	// Modern: stateless, per-request _meta (2026-07-28).
	Modern
)

func (e Era) String() string {
	if e == Modern {
		return "modern"
	}
	return "legacy"
}

// isModernVersion reports whether v names a stateless revision. Versions are
// ISO dates, so string order is date order; unknown future strings (even
// non-dates such as "v999.0.0") sort after every date and count as modern.
func isModernVersion(v string) bool { return v >= modernVersion }

func isLegacyVersion(v string) bool { return slices.Contains(legacyVersions, v) }

// Log levels, lowest first (RFC 5424 / MCP logging).
var logLevelNames = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logLevelIndex returns the level's rank, or -1 when unknown.
func logLevelIndex(name string) int { return slices.Index(logLevelNames, name) }

// reqMeta is a request's params._meta, decoded in the same pass as the
// params. Raw fields stay raw: they are echoed or looked at lazily.
type reqMeta struct {
	ProtocolVersion    *string         `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           *string         `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      json.RawMessage `json:"progressToken"`
}

// params holds every params field any method reads, so one decode serves
// all methods.
type params struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	URI       *string         `json:"uri"`
	Cursor    *string         `json:"cursor"`
	Meta      *reqMeta        `json:"_meta"`
	// MRTR retries.
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   *string         `json:"requestState"`
	// initialize
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      json.RawMessage `json:"clientInfo"`
	// logging/setLevel
	Level *string `json:"level"`
	// completion/complete
	Ref      json.RawMessage `json:"ref"`
	Argument json.RawMessage `json:"argument"`
	// notifications/cancelled
	RequestID json.RawMessage `json:"requestId"`
	// subscriptions/listen
	Notifications json.RawMessage `json:"notifications"`
	// tasks/get, tasks/update, tasks/cancel
	TaskID *string `json:"taskId"`

	// strs holds the strings the pointers above point to, nstr of them
	// (decodeParams: a request's name and one or two more without an
	// allocation each)
	strs [3]string
	nstr int
}

// Error is a JSON-RPC error to answer with. A Handler returns one to
// choose the error a request is answered with.
type Error struct {
	Code    int
	Message string
	Data    any // marshalled as "data" when not nil
}

func (e *Error) Error() string { return e.Message }

func errf(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// render returns the JSON-RPC error response for id.
func (e *Error) render(id json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	obj := struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{e.Code, e.Message, e.Data}
	eb, _ := json.Marshal(obj)
	b := make([]byte, 0, len(eb)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, eb...)
	return append(b, '}')
}

// httpStatus is the status a modern-era error is sent with (§1.4.2/§1.6).
func (e *Error) httpStatus() int {
	switch e.Code {
	case CodeMethodNotFound:
		return 404
	case CodeInternal:
		return 500
	}
	return 400
}

// acceptsSSE reports whether an Accept header allows an event stream. An
// absent header accepts anything.
func acceptsSSE(accept string) bool {
	if accept == "" {
		return true
	}
	return strings.Contains(accept, "text/event-stream") || strings.Contains(accept, "*/*")
}

// acceptsJSON reports whether an Accept header allows application/json.
func acceptsJSON(accept string) bool {
	if accept == "" {
		return true
	}
	return strings.Contains(accept, "application/json") || strings.Contains(accept, "*/*") ||
		strings.Contains(accept, "application/*")
}
