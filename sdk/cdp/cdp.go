// Package cdp is the guest side of the aiod:cdp host functions
// (spec/abi/v1/cdp.md): the Chrome DevTools Protocol over the host's one
// connection to the browser. A plugin lists targets, attaches a session to
// one (Page attaches to the first page), sends commands on it and reads its
// events. The manifest names the methods it may send
// ({"cdp": {"methods": ["Page.captureScreenshot", "Input.dispatch*"]}}); a
// command outside them fails with ErrDenied, naming the method.
//
//	s, err := cdp.Page()
//	var shot struct{ Data string `json:"data"` }
//	err = s.Call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
//
// Every failure of a host call is an *Error; errors.Is(err, ErrUnavailable)
// (no browser, or the connection was lost) and the other Err* values match
// its code.
//
// Built natively (not wasip1), calls go to the fake host installed by the
// SDK's test support.
package cdp

import (
	"encoding/json"
	"errors"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// Module is the import module of the host functions.
const Module = abi.ModuleCDP

// Errors matched by errors.Is against an *Error's code.
var (
	ErrDenied      = errors.New("denied")      // the method is outside the grant
	ErrInvalid     = errors.New("invalid")     // bad request, or the browser refused the params
	ErrNotFound    = errors.New("not_found")   // no such session or target, or it was closed
	ErrTooLarge    = errors.New("too_large")   // the answer is over the result limit, too many sessions
	ErrTimeout     = errors.New("timeout")     // the browser did not answer in time
	ErrUnavailable = errors.New("unavailable") // no browser, the connection was lost, the page crashed
)

// Error is a failed host call.
type Error struct {
	// Code is the host function error code.
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Is matches the Err* value of e's code.
func (e *Error) Is(target error) bool {
	return guest.CodeIs(e.Code, target, ErrDenied, ErrInvalid, ErrNotFound, ErrTooLarge, ErrTimeout, ErrUnavailable)
}

func do(name string, req, resp any) error {
	if code, msg := guest.Do(call, name, req, resp); code != "" {
		return &Error{Code: code, Message: msg}
	}
	return nil
}

// Types of the wire, re-exported.
type (
	Info     = abi.CDPInfoResponse
	Target   = abi.CDPTarget
	Viewport = abi.CDPViewport
	Event    = abi.CDPEvent
)

// GetInfo describes the browser: product, user agent, websocket URL, the
// configured viewport.
func GetInfo() (*Info, error) {
	var res Info
	if err := do("info", struct{}{}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Targets lists the browser's targets (pages, workers, ...).
func Targets() ([]Target, error) {
	var res abi.CDPTargetsResponse
	if err := do("targets", struct{}{}, &res); err != nil {
		return nil, err
	}
	return res.Targets, nil
}

// Session is a session attached to one target.
type Session struct {
	ID       string
	TargetID string
}

// Attach attaches to a target ("" for the first page). Attaching again to
// a target the plugin has a live session on returns that session.
func Attach(targetID string) (*Session, error) {
	var res abi.CDPAttachResponse
	if err := do("attach", abi.CDPAttachRequest{TargetID: targetID}, &res); err != nil {
		return nil, err
	}
	return &Session{ID: res.Session, TargetID: res.TargetID}, nil
}

// Page attaches to the browser's first page.
func Page() (*Session, error) { return Attach("") }

// Detach ends the session.
func (s *Session) Detach() error {
	var res abi.CDPDetachResponse
	return do("detach", abi.CDPSessionRequest{Session: s.ID}, &res)
}

// Call sends method with params (marshalled to a JSON object; nil for
// none) and decodes the result into result (nil to ignore it).
func (s *Session) Call(method string, params, result any) error {
	return callOn(s.ID, method, params, result, 0)
}

// CallTimeout is Call with a timeout in milliseconds.
func (s *Session) CallTimeout(method string, params, result any, timeoutMs int64) error {
	return callOn(s.ID, method, params, result, timeoutMs)
}

// Raw sends method with raw JSON params and returns the raw result.
func (s *Session) Raw(method string, params json.RawMessage) (json.RawMessage, error) {
	return rawCall(s.ID, method, params, 0)
}

// Browser sends a command to the browser target itself.
func Browser(method string, params, result any) error {
	return callOn("", method, params, result, 0)
}

// Events takes up to max buffered events (0: 100) whose method matches one
// of methods (patterns like "Page.*"; none: every event), waiting up to
// waitMs for the first; it also returns how many events the session's
// buffer dropped, and whether more remain.
func (s *Session) Events(methods []string, max int, waitMs int64) (evs []Event, dropped int, more bool, err error) {
	var res abi.CDPEventsResponse
	err = do("events", abi.CDPEventsRequest{Session: s.ID, Methods: methods, Max: max, WaitMs: waitMs}, &res)
	return res.Events, res.Dropped, res.More, err
}

func callOn(session, method string, params, result any, timeoutMs int64) error {
	var p json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return &Error{Code: "invalid", Message: method + ": " + err.Error()}
		}
		p = b
	}
	raw, err := rawCall(session, method, p, timeoutMs)
	if err != nil || result == nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return &Error{Code: "internal", Message: method + ": bad result: " + err.Error()}
	}
	return nil
}

func rawCall(session, method string, params json.RawMessage, timeoutMs int64) (json.RawMessage, error) {
	b, err := json.Marshal(abi.CDPCallRequest{Session: session, Method: method, Params: params, TimeoutMs: timeoutMs})
	if err != nil {
		return nil, &Error{Code: "invalid", Message: err.Error()}
	}
	out, code := call("call", b)
	if code != 0 {
		var e abi.Error
		if json.Unmarshal(out, &e) != nil || e.Message == "" {
			e.Message = string(out)
		}
		if e.Code == "" {
			e.Code = abi.CodeName(code)
		}
		return nil, &Error{Code: e.Code, Message: e.Message}
	}
	return out, nil
}
