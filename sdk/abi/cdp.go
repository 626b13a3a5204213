package abi

import "encoding/json"

// The wire types of aiod:cdp (spec/abi/v1/cdp.md).

// CDPViewport is a size in CSS pixels.
type CDPViewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// CDPInfoResponse is the response of aiod:cdp.info: the browser as the
// host reaches it.
type CDPInfoResponse struct {
	// Mode is how the host has the browser: "attach" or "launch".
	Mode            string `json:"mode"`
	Product         string `json:"product"`
	UserAgent       string `json:"user_agent"`
	ProtocolVersion string `json:"protocol_version"`
	JSVersion       string `json:"js_version,omitempty"`
	// WebSocketURL is the browser's own DevTools websocket URL.
	WebSocketURL string `json:"websocket_url"`
	// Viewport is the display the browser is configured for (launch's
	// window size; the default size when attached).
	Viewport CDPViewport `json:"viewport"`
}

// CDPTarget is one target of aiod:cdp.targets.
type CDPTarget struct {
	TargetID string `json:"target_id"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	URL      string `json:"url"`
	Attached bool   `json:"attached"`
}

// CDPTargetsResponse is the response of targets.
type CDPTargetsResponse struct {
	Targets []CDPTarget `json:"targets"`
}

// CDPAttachRequest is the request of attach: a target id from targets, or
// "" for the first page.
type CDPAttachRequest struct {
	TargetID string `json:"target_id,omitempty"`
}

// CDPAttachResponse is the response of attach.
type CDPAttachResponse struct {
	Session  string `json:"session"`
	TargetID string `json:"target_id"`
	// Reused is true when the caller already had a live session on the
	// target and gets it again.
	Reused bool `json:"reused"`
}

// CDPSessionRequest is the request of detach.
type CDPSessionRequest struct {
	Session string `json:"session"`
}

// CDPDetachResponse is the response of detach.
type CDPDetachResponse struct {
	Detached bool `json:"detached"`
}

// CDPCallRequest is the request of call. Session "" sends the command to
// the browser target. The response of call is the command's result object
// as the browser sent it.
type CDPCallRequest struct {
	Session   string          `json:"session,omitempty"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"`
}

// CDPEventsRequest is the request of events.
type CDPEventsRequest struct {
	Session string `json:"session"`
	// Methods filters by event method (exact names or patterns such as
	// "Page.*"); none takes every event. Events that do not match stay
	// buffered.
	Methods []string `json:"methods,omitempty"`
	Max     int      `json:"max,omitempty"`
	WaitMs  int64    `json:"wait_ms,omitempty"`
}

// CDPEvent is one event.
type CDPEvent struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// CDPEventsResponse is the response of events.
type CDPEventsResponse struct {
	Events []CDPEvent `json:"events"`
	// Dropped counts the events the session's buffer lost (it keeps the
	// newest) since the previous events call.
	Dropped int `json:"dropped"`
	// More is true when more matching events remain buffered.
	More bool `json:"more"`
}

// CDP limits.
const (
	// CDPDefaultTimeoutMs and CDPMaxTimeoutMs bound one call (and are
	// shortened to the guest call's own deadline).
	CDPDefaultTimeoutMs = 10_000
	CDPMaxTimeoutMs     = 60_000
	// CDPDefaultEvents and CDPMaxEvents bound one events call;
	// CDPMaxWaitMs bounds its wait.
	CDPDefaultEvents = 100
	CDPMaxEvents     = 1000
	CDPMaxWaitMs     = 10_000
	// CDPMaxSessions bounds the live sessions of one plugin and owner.
	CDPMaxSessions = 16
)
