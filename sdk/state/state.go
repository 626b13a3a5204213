// Package state is the guest side of the aiod:state host functions
// (spec/abi/v1/state.md): small key-value state the host keeps in memory
// between calls, one space per plugin and MCP client ("owner"). Values are
// UTF-8 text; encode anything else (JSON, base64) yourself. A space holds
// at most the grant's max_bytes (keys plus values, 1 MiB by default);
// nothing survives a restart of the host.
//
//	if err := state.Set("cursor", "42"); errors.Is(err, state.ErrTooLarge) { ... }
//	v, ok, err := state.Get("cursor")
//
// Every failure is an *Error; errors.Is(err, ErrTooLarge) and the other
// Err* values match its code.
//
// Built natively (not wasip1), calls go to the fake host installed by the
// SDK's test support.
package state

import (
	"errors"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/internal/guest"
)

// Module is the import module of the host functions.
const Module = abi.ModuleState

// Errors matched by errors.Is against an *Error's code.
var (
	ErrDenied   = errors.New("denied")    // no state grant
	ErrInvalid  = errors.New("invalid")   // empty or too long key, bad limit
	ErrTooLarge = errors.New("too_large") // the space (or the host's store) is full
)

// Error is a failed host call.
type Error struct {
	// Code is the host function error code: "denied", "invalid",
	// "too_large", "internal".
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Is matches the Err* value of e's code.
func (e *Error) Is(target error) bool {
	return guest.CodeIs(e.Code, target, ErrDenied, ErrInvalid, ErrTooLarge)
}

func do(name string, req, resp any) error {
	if code, msg := guest.Do(call, name, req, resp); code != "" {
		return &Error{Code: code, Message: msg}
	}
	return nil
}

// Get returns the value of key and whether it is set.
func Get(key string) (string, bool, error) {
	var res abi.StateGetResponse
	if err := do("get", abi.StateKeyRequest{Key: key}, &res); err != nil {
		return "", false, err
	}
	return res.Value, res.Found, nil
}

// Set stores value under key (at most 1024 bytes). It fails with
// ErrTooLarge if the space would exceed its limit; nothing is stored then.
func Set(key, value string) error {
	_, _, err := SetUsage(key, value)
	return err
}

// SetUsage is Set that also returns the space's size after the change and
// its limit, in bytes.
func SetUsage(key, value string) (used, max int64, err error) {
	var res abi.StateSetResponse
	err = do("set", abi.StateSetRequest{Key: key, Value: value}, &res)
	return res.BytesUsed, res.MaxBytes, err
}

// Delete removes key and reports whether it was set.
func Delete(key string) (bool, error) {
	var res abi.StateDeleteResponse
	err := do("delete", abi.StateKeyRequest{Key: key}, &res)
	return res.Deleted, err
}

// ListPage returns up to limit (0: 1000, at most 10000) keys starting with
// prefix and sorting after after, in byte order, and whether more remain.
func ListPage(prefix, after string, limit int) (keys []string, more bool, err error) {
	var res abi.StateListResponse
	err = do("list", abi.StateListRequest{Prefix: prefix, After: after, Limit: limit}, &res)
	return res.Keys, res.Truncated, err
}

// List returns every key starting with prefix, in byte order.
func List(prefix string) ([]string, error) {
	var all []string
	after := ""
	for {
		keys, more, err := ListPage(prefix, after, 0)
		if err != nil {
			return nil, err
		}
		all = append(all, keys...)
		if !more || len(keys) == 0 {
			return all, nil
		}
		after = keys[len(keys)-1]
	}
}
